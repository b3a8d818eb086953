"""What the OAuth tests share: our example server as an OAuth resource next to a real
authorization server (:mod:`authz_server`), the official SDK client's OAuth provider
wired to approve at once, and a DPoP key holder signing proofs with joserfc."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import jwt
from authz_server import AuthorizationServer, authorization_server
from joserfc import jwt as jose_jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
)
from mcp_http import Running, example_server, loopback_sockets, running
from sdk_oauth import MemoryStorage

from tornado_mcp import Context, Server
from tornado_mcp.auth import DPoP, OAuthResource
from tornado_mcp.auth.dpop import token_hash

TOOLS = "mcp:tools"
ADMIN = "mcp:admin"
REDIRECT = "http://127.0.0.1:9/callback"  # never visited: the test reads the redirect


def protected_server() -> Server:
    """The example server plus a tool only ``mcp:admin`` may call and a prompt and a
    resource behind scopes."""
    server = example_server()

    @server.tool(scopes=[ADMIN], description="Needs mcp:admin")
    def admin_only(ctx: Context) -> dict[str, Any]:
        return {"subject": ctx.principal.subject, "scopes": sorted(ctx.principal.scopes)}

    @server.prompt(scopes=[ADMIN])
    def admin_prompt() -> str:
        return "secret prompt"

    @server.resource("admin://report", "report", scopes=[ADMIN])
    def admin_report() -> str:
        return "secret report"

    return server


@dataclass
class OAuthSetup:
    authz: AuthorizationServer
    srv: Running


@contextlib.asynccontextmanager
async def oauth_setup(required: tuple[str, ...] = (TOOLS,), *, dpop: DPoP | None = None,
                      resource: str | None = None, **options: Any
                      ) -> AsyncIterator[OAuthSetup]:
    """A real authorization server, and our server trusting it for JWTs meant for our URL
    (configured from the address it is bound to, as a deployment configures its own, or
    ``resource``), accepting DPoP-bound tokens when ``dpop`` is given."""
    async with authorization_server() as authz:
        sockets = loopback_sockets()
        url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
        oauth = OAuthResource.jwt(authz.issuer, authz.issuer + "/jwks",
                                  audience=resource or url, scopes_supported=[TOOLS, ADMIN],
                                  required_scopes=required, dpop=dpop)
        async with running(protected_server(), oauth=oauth, sockets=sockets,
                           **options) as srv:
            yield OAuthSetup(authz, srv)


class Browser:
    """Stands in for the user's browser: follows the authorization URL to the server,
    which approves at once and redirects back with the code."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.visits = 0

    async def redirect(self, url: str) -> None:
        self.visits += 1
        async with httpx2.AsyncClient(timeout=10.0) as http:
            resp = await http.get(url, follow_redirects=False)
        assert resp.status_code == 302, (resp.status_code, resp.text)
        location = resp.headers["location"]
        assert location.startswith(REDIRECT)
        query = parse_qs(urlsplit(location).query)
        self.result = AuthorizationCodeResult(code=query["code"][0],
                                              state=query.get("state", [None])[0])

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def provider(url: str, browser: Browser, storage: MemoryStorage | None = None
             ) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(client_name="sdk-test", redirect_uris=[REDIRECT],
                                            grant_types=["authorization_code"],
                                            token_endpoint_auth_method="client_secret_post"),
        storage=storage or MemoryStorage(), redirect_handler=browser.redirect,
        callback_handler=browser.callback)


def mint(authz: AuthorizationServer, audience: str, *, key: RSAKey | None = None,
         headers: dict[str, Any] | None = None, **claims: Any) -> str:
    """A JWT access token as ``authz`` would sign it (or signed with ``key``), with
    ``claims`` overriding the usual ones (``None`` leaves one out)."""
    now = int(time.time())
    body: dict[str, Any] = {"iss": authz.issuer, "sub": "alice", "aud": audience,
                            "scope": TOOLS, "iat": now, "exp": now + 300,
                            "client_id": "test-client"}
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    signer = key or authz.signing_key
    return jwt.encode(body, signer.as_pem(private=True), algorithm="RS256",
                      headers={"kid": signer.kid, "typ": "at+jwt", **(headers or {})})


class Holder:
    """A client's key pair and the proofs it signs (with joserfc)."""

    def __init__(self, alg: str = "ES256") -> None:
        self.alg = alg
        self.key: ECKey | RSAKey | OKPKey
        if alg.startswith("ES"):
            self.key = ECKey.generate_key({"ES256": "P-256", "ES384": "P-384"}[alg])
        elif alg == "EdDSA":
            self.key = OKPKey.generate_key("Ed25519")
        else:
            self.key = RSAKey.generate_key(2048)
        self.jkt = self.key.thumbprint()

    def proof(self, htu: str, token: str, htm: str = "POST", *, iat: float | str | None = None,
              header: dict[str, Any] | None = None, **claims: Any) -> str:
        """A proof for ``htm htu`` presenting ``token``; ``claims`` and ``header`` override
        the usual ones (``None`` leaves one out)."""
        body: dict[str, Any] = {"jti": secrets.token_urlsafe(12), "htm": htm, "htu": htu,
                                "iat": int(time.time()) if iat is None else iat,
                                "ath": token_hash(token)}
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        head = {"alg": self.alg, "typ": "dpop+jwt", "jwk": self.key.as_dict(private=False),
                **(header or {})}
        head = {k: v for k, v in head.items() if v is not None}
        return jose_jwt.encode(head, body, self.key, algorithms=[self.alg])
