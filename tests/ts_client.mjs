// The official TypeScript SDK client (npm @modelcontextprotocol/sdk) against a tornado-mcp
// server: lists the tools, calls the typed ones and prints what it got as one JSON line.
// The SDK validates structuredContent against each tool's outputSchema inside callTool
// and throws when it does not match.
//
//   node tests/ts_client.mjs <server url> <path to the @modelcontextprotocol/sdk package>
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [url, sdkDir] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const args = JSON.parse(process.env.TYPED_ARGS);
const client = new Client({ name: "ts-typed-tools", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
try {
  const { tools } = await client.listTools();
  const plan = await client.callTool({ name: "plan_trip", arguments: args });
  const total = await client.callTool({ name: "total", arguments: { values: [1.5, 2.5] } });
  const bad = await client.callTool({ name: "plan_trip", arguments: { ...args, mode: "plane" } });
  console.log(JSON.stringify({
    protocolVersion: transport.protocolVersion ?? null,
    tools: Object.fromEntries(tools.map((t) => [t.name, { input: t.inputSchema, output: t.outputSchema ?? null }])),
    plan, total, bad,
  }));
} finally {
  await client.close();
}
