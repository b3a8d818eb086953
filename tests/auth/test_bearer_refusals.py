"""Bearer tokens our OAuth endpoint refuses, over real HTTP: each gets the documented
status, ``WWW-Authenticate`` challenge and JSON-RPC error, never a 500, and is counted
under its reason.  Tokens are minted with the real authorization server's own signing key
(or a stranger's), so only the property under test is wrong.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from typing import Any

import jwt
import pytest
from authz_server import AuthorizationServer
from joserfc.jwk import RSAKey
from mcp_http import LEGACY, MODERN, Running, modern_meta, rpc
from oauth_support import ADMIN, TOOLS, mint, oauth_setup

pytestmark = pytest.mark.timeout(60)


def metadata_url(srv: Running) -> str:
    return f"http://127.0.0.1:{srv.port}/.well-known/oauth-protected-resource/mcp"


def challenge(srv: Running, error: str | None = None, description: str | None = None,
              scope: str = TOOLS) -> str:
    parts = [f'resource_metadata="{metadata_url(srv)}"', f'scope="{scope}"']
    if error is not None:
        parts += [f'error="{error}"', f'error_description="{description}"']
    return "Bearer " + ", ".join(parts)


async def call(srv: Running, token: str | None, name: str = "whoami",
               raw_auth: str | None = None) -> Any:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    if raw_auth is not None:
        headers["Authorization"] = raw_auth
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await srv.post(rpc("tools/call", {"name": name, "arguments": {},
                                             "_meta": modern_meta()}), headers=headers)


def assert_refused(reply: Any, status: int, www: str | None, message: str,
                   request_id: Any = None) -> None:
    """A refusal; ``request_id`` once the request was read (a scope refusal), else null
    (refused from the headers, before the body)."""
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers.get("Www-Authenticate") == www
    assert reply.json == {"jsonrpc": "2.0", "id": request_id,
                          "error": {"code": -32600, "message": message}}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hmac_forged(authz: AuthorizationServer, audience: str) -> str:
    """The key-confusion forgery: HS256 "signed" with the issuer's public key as secret."""
    claims = jwt.decode(mint(authz, audience), options={"verify_signature": False})
    head = b64(json.dumps({"alg": "HS256", "kid": authz.signing_key.kid}).encode())
    signing_input = f"{head}.{b64(json.dumps(claims).encode())}"
    mac = hmac.new(authz.signing_key.as_pem(private=False), signing_input.encode(),
                   hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


def unsigned(authz: AuthorizationServer, audience: str) -> str:
    """An ``alg: none`` token: the header says none, there is no signature."""
    def part(obj: dict[str, Any]) -> str:
        return b64(json.dumps(obj).encode())
    claims = jwt.decode(mint(authz, audience), options={"verify_signature": False})
    return f"{part({'alg': 'none', 'typ': 'at+jwt'})}.{part(claims)}."


async def test_the_metadata_document_names_the_resource_and_its_server() -> None:
    async with oauth_setup() as s:
        r = await s.srv.client.fetch(metadata_url(s.srv), raise_error=False)
        assert r.code == 200 and r.headers["Content-Type"] == "application/json"
        assert json.loads(r.body) == {
            "resource": s.srv.url, "authorization_servers": [s.authz.issuer],
            "bearer_methods_supported": ["header"], "scopes_supported": [TOOLS, ADMIN]}


async def test_no_token_is_401_with_the_metadata_and_scope() -> None:
    async with oauth_setup() as s:
        assert_refused(await call(s.srv, None), 401, challenge(s.srv),
                       "Unauthorized: authentication required")
        # another scheme is no bearer token either
        assert_refused(await call(s.srv, None, raw_auth="Basic YWxpY2U6c2VjcmV0"), 401,
                       challenge(s.srv), "Unauthorized: authentication required")
        # a legacy initialize, a GET and a DELETE are refused alike, before anything else
        r = await s.srv.post(rpc("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                                "clientInfo": {"name": "x", "version": "1"}}))
        assert_refused(r, 401, challenge(s.srv), "Unauthorized: authentication required")
        assert_refused(await s.srv.get("any-session"), 401, challenge(s.srv),
                       "Unauthorized: authentication required")
        assert s.srv.transport.snapshot().refusals["auth_missing"] == 4


@pytest.mark.parametrize(("case", "description"), [
    ("expired", "token expired"),
    ("not_yet_valid", "token not yet valid"),
    ("wrong_audience", "token audience is not this resource"),
    ("no_audience", "token lacks the aud claim"),
    ("wrong_issuer", "token issuer is not trusted"),
    ("unknown_key", "token signing key is unknown"),
    ("bad_signature", "token signature does not verify"),
    ("alg_none", "token algorithm not allowed"),
    ("hmac_with_public_key", "token algorithm not allowed"),
    ("malformed", "malformed token"),
    ("not_b64token", "malformed token"),
])
async def test_invalid_tokens_are_401_invalid_token(case: str, description: str) -> None:
    async with oauth_setup() as s:
        authz, aud = s.authz, s.srv.url
        stranger = RSAKey.generate_key(2048, parameters={"kid": "stranger"})
        raw: str | None = None
        token = {
            "expired": lambda: mint(authz, aud, exp=1_000_000_000, iat=999_999_000),
            "not_yet_valid": lambda: mint(authz, aud, nbf=4_000_000_000),
            "wrong_audience": lambda: mint(authz, "http://127.0.0.1:1/other"),
            "no_audience": lambda: mint(authz, aud, aud=None),
            "wrong_issuer": lambda: mint(authz, aud, iss="http://127.0.0.1:1"),
            "unknown_key": lambda: mint(authz, aud, key=stranger),
            "bad_signature": lambda: mint(authz, aud, key=stranger,
                                          headers={"kid": authz.signing_key.kid}),
            "alg_none": lambda: unsigned(authz, aud),
            "hmac_with_public_key": lambda: hmac_forged(authz, aud),
            "malformed": lambda: "abc.def",
            "not_b64token": lambda: "",
        }[case]()
        if case == "not_b64token":
            raw = "Bearer a,b"
        reply = await call(s.srv, token, raw_auth=raw)
        assert_refused(reply, 401, challenge(s.srv, "invalid_token", description),
                       f"Unauthorized: {description}")
        snap = s.srv.transport.snapshot()
        assert snap.refusals["auth_invalid"] == 1 and snap.refusals["auth_missing"] == 0


async def test_token_size_is_bounded_exactly() -> None:
    async with oauth_setup(max_bearer_token_bytes=1000) as s:
        at_bound = "a" * 1000  # the right size and alphabet: verified (and refused) as a JWT
        assert_refused(await call(s.srv, at_bound), 401,
                       challenge(s.srv, "invalid_token", "malformed token"),
                       "Unauthorized: malformed token")
        over = "a" * 1001
        assert_refused(await call(s.srv, over), 401,
                       challenge(s.srv, "invalid_token", "bearer token exceeds 1000 bytes"),
                       "Unauthorized: bearer token exceeds 1000 bytes")
        refusals = s.srv.transport.snapshot().refusals
        assert (refusals["auth_invalid"], refusals["max_bearer_token_bytes"]) == (1, 1)
        # the bound is live: raised, the same token is judged on its merits
        s.srv.transport.options.update({"max_bearer_token_bytes": 2000})
        assert (await call(s.srv, over)).headers["Www-Authenticate"].endswith(
            'error_description="malformed token"')


async def test_a_missing_scope_is_403_insufficient_scope_for_each_primitive() -> None:
    async with oauth_setup() as s:
        token = mint(s.authz, s.srv.url)  # mcp:tools only
        assert (await call(s.srv, token)).status == 200
        www = challenge(s.srv, "insufficient_scope", f"insufficient scope: requires {ADMIN}",
                        scope=ADMIN)
        message = f"Forbidden: insufficient scope: requires {ADMIN}"
        assert_refused(await call(s.srv, token, "admin_only"), 403, www, message, 1)
        auth = {"Authorization": f"Bearer {token}"}
        for method, params in (("prompts/get", {"name": "admin_prompt"}),
                               ("resources/read", {"uri": "admin://report"})):
            name = params.get("name") or params["uri"]
            r = await s.srv.modern(method, params, headers={**auth, "Mcp-Name": name})
            assert_refused(r, 403, www, message, 1)
        # a token lacking the endpoint's own required scope is refused for everything
        bare = mint(s.authz, s.srv.url, scope="profile")
        assert_refused(await call(s.srv, bare), 403,
                       challenge(s.srv, "insufficient_scope",
                                 f"insufficient scope: requires {TOOLS}"),
                       f"Forbidden: insufficient scope: requires {TOOLS}")
        assert s.srv.transport.snapshot().refusals["auth_insufficient_scope"] == 4


async def test_no_token_or_secret_reaches_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with oauth_setup() as s:
        tokens = [mint(s.authz, s.srv.url, exp=1_000_000_000, iat=999_999_000),
                  mint(s.authz, "http://elsewhere/mcp"), unsigned(s.authz, s.srv.url),
                  "x" * 9000]
        for token in tokens:
            assert (await call(s.srv, token)).status == 401
        good = mint(s.authz, s.srv.url)
        assert (await call(s.srv, good, "admin_only")).status == 403
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for token in [*tokens, good]:
        assert token not in logged
        assert token[:40] not in logged
    assert "401 POST /mcp" in logged  # the refusals were logged, without their tokens


async def test_a_failing_verifier_refuses_the_token_and_never_answers_500(
        caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        async def verify(self, token: str, resource: str) -> Any:
            raise RuntimeError(f"bug while looking at {token}")

    from mcp_http import example_server, running

    from tornado_mcp.auth import OAuthResource
    oauth = OAuthResource(Broken(), authorization_servers=["http://127.0.0.1:1"],
                          resource="http://127.0.0.1:1/mcp")
    async with running(example_server(), oauth=oauth) as srv:
        r = await call(srv, "some-token")
        assert r.status == 401
        assert r.json["error"]["message"] == "Unauthorized: token could not be verified"
    logged = "\n".join(r.getMessage() + str(r.exc_info) for r in caplog.records)
    assert "token verifier Broken raised RuntimeError" in logged
    assert "some-token" not in logged
