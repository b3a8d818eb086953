// A web host for MCP Apps in the browser tests: the official SDK's client over Streamable
// HTTP to the server that served this page, and the official host bridge (AppBridge) to
// the view in a sandboxed iframe.  Bundled by esbuild at test time.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const HOST = { name: "tornado-mcp-test-host", version: "1.0.0" };

window.showTool = async (toolName, args) => {
  const client = new Client(HOST, { capabilities: { extensions: { [UI]: { mimeTypes: [MIME] } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === toolName);
  const uri = tool._meta.ui.resourceUri;
  const [view] = (await client.readResource({ uri })).contents;

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  document.body.append(iframe);
  const bridge = new AppBridge(client, HOST, { serverTools: {}, serverResources: {}, logging: {} });
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = view.text;  // the view's script starts the handshake with the bridge
  await initialized;

  const result = await client.callTool({ name: toolName, arguments: args });
  await bridge.sendToolInput({ arguments: args });
  await bridge.sendToolResult(result);
  return { uri, mimeType: view.mimeType, meta: view._meta, structured: result.structuredContent };
};
