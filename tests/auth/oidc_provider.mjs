// A real, certified OpenID provider for the end-to-end OAuth tests: `oidc-provider` (npm),
// from the directory OIDC_PROVIDER_DIR names, issuing JWT access tokens (RFC 9068) for the
// one resource indicator it is given (RFC 8707), with dynamic client registration (RFC
// 7591), PKCE required, and an interaction endpoint that signs the user in as `alice` and
// grants what was asked without a page (a test stands in for the browser).
//
//   node oidc_provider.mjs <oidc-provider dir> <resource URL> [<user>]
//
// Listens on 127.0.0.1 on a port the kernel picks, and prints one JSON line,
// {"issuer": "http://127.0.0.1:<port>"}, once it serves.  Ends when its stdin closes.
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, resource, user = 'alice'] = process.argv.slice(2);
const { default: Provider, errors } = await import(
  pathToFileURL(join(dir, 'lib', 'index.js')).href);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', use: 'sig',
  alg: 'RS256' };
const SCOPES = 'mcp:tools mcp:admin';

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [],
  jwks: { keys: [signing] },
  cookies: { keys: ['a-test-cookie-key-of-no-value'] },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', ...SCOPES.split(' ')],  // what clients may register
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: SCOPES, audience: indicator, accessTokenTTL: 300,
          accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
      },
    },
  },
});
provider.proxy = false;

// The interaction: sign the user in, then grant the scopes and resource asked for.
async function interact(req, res) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: user } },
      { mergeWithLastSubmission: false });
    return;
  }
  const { accountId } = details.session;
  const grant = details.grantId ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: details.params.client_id });
  const asked = details.prompt.details;
  if (asked.missingOIDCScope) grant.addOIDCScope(asked.missingOIDCScope.join(' '));
  for (const [indicator, scopes] of Object.entries(asked.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { consent: { grantId } },
    { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interact(req, res).catch((err) => {
      res.statusCode = 500;
      res.end(String(err));
    });
    return;
  }
  callback(req, res);
});

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => server.close(() => process.exit(0)));
