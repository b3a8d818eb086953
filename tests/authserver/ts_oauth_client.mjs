// The official TypeScript SDK client (npm @modelcontextprotocol/sdk) signing in with OAuth,
// headless: its OAuthClientProvider is kept in memory; when the SDK asks to send the user
// to the authorization URL, this prints {"authorize": url} and reads back, on stdin, the
// URL the user's browser was sent to (the test's Chromium does the logging in), finishes
// the flow with the code, connects again and calls the named tools, printing
// {"results": ...} as its last line.
//
//   node ts_oauth_client.mjs <server url> <sdk package dir> <redirect uri> <tool>...
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [url, sdkDir, redirectUri, ...tools] = process.argv.slice(2);
const load = (rel) => import(pathToFileURL(join(sdkDir, "dist", "esm", rel)).href);
const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { UnauthorizedError } = await load("client/auth.js");

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let info, tokens, verifier;
const provider = {
  get redirectUrl() { return redirectUri; },
  get clientMetadata() {
    return { client_name: "TypeScript SDK", redirect_uris: [redirectUri],
             grant_types: ["authorization_code", "refresh_token"],
             token_endpoint_auth_method: "none" };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; },
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
  redirectToAuthorization: (authorizationUrl) => {
    console.log(JSON.stringify({ authorize: authorizationUrl.href }));
  },
};

async function connected() {
  const client = new Client({ name: "ts-oauth", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  try {
    await client.connect(transport);
    return client;
  } catch (err) {
    if (!(err instanceof UnauthorizedError)) throw err;
    const back = new URL((await lines.next()).value);
    await transport.finishAuth(back.searchParams.get("code"));
    const again = new Client({ name: "ts-oauth", version: "1.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
    return again;
  }
}

const client = await connected();
try {
  const results = {};
  for (const name of tools) {
    results[name] = await client.callTool({ name, arguments: {} });
  }
  console.log(JSON.stringify({ results, scope: tokens?.scope ?? null,
                               refresh: Boolean(tokens?.refresh_token) }));
} finally {
  await client.close();
  process.exit(0);
}
