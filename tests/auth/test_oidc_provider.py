"""End to end against a real, certified OpenID provider the suite starts: ``oidc-provider``
(npm, run with the Node 22 of the test peers; ``tests/auth/oidc_provider.mjs``) issuing JWT
access tokens for our endpoint's URL as a resource indicator (RFC 8707).

The official Python SDK's OAuth client (``mcp`` 2.3.0) is refused with 401, discovers our
RFC 9728 metadata and the provider's own, registers itself (RFC 7591), signs in through
the authorization-code grant with PKCE (a stand-in browser follows the provider's
redirects and its interaction, with cookies), and calls tools with the token it got, in
both protocol eras.  (It does not step up to ``mcp:admin`` here: the SDK registers the
client with the scope of the first challenge, and oidc-provider then refuses that client
any other scope, ``invalid_scope``; the step-up is tested against the authlib server.)
The provider's token is accepted with the defaults and with ``strict_rfc9068`` (it writes
``typ: at+jwt``); a
token of the same provider for another resource is refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx2
import jwt
import pytest
from inspector_cli import launcher
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult
from mcp_http import Running, loopback_sockets, running
from npm_peers import PEERS, node, peer
from oauth_support import ADMIN, REDIRECT, TOOLS, MemoryStorage, protected_server, provider
from test_oauth_sdk_client import structured

from tornado_mcp.auth import OAuthResource

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

STEP = 30.0
SCRIPT = Path(__file__).parent / "oidc_provider.mjs"


@contextlib.asynccontextmanager
async def oidc_provider(resource: str) -> AsyncIterator[str]:
    """``oidc-provider`` serving tokens for ``resource``; yields its issuer URL."""
    directory = peer("OIDC_PROVIDER_DIR", PEERS / "oidc-provider")
    proc = await asyncio.create_subprocess_exec(
        node(), str(SCRIPT), directory, resource, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), 20)
        assert line.startswith(b"{"), line
        yield json.loads(line)["issuer"]
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


class ProviderBrowser:
    """Stands in for the user's browser at the provider: follows its redirects (through
    the interaction that signs ``alice`` in and grants), keeping its cookies, until the
    provider redirects back to the client with the code."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.visits = 0

    async def redirect(self, url: str) -> None:
        self.visits += 1
        async with httpx2.AsyncClient(timeout=10.0) as http:
            for _ in range(10):
                resp = await http.get(url, follow_redirects=False)
                assert resp.status_code in (302, 303), (resp.status_code, resp.text)
                location = urljoin(url, resp.headers["location"])
                if location.startswith(REDIRECT):
                    query = parse_qs(urlsplit(location).query)
                    assert "code" in query, query
                    self.result = AuthorizationCodeResult(  # iss: RFC 9207, as sent
                        code=query["code"][0], state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0])
                    return
                url = location
        raise AssertionError("the provider never redirected back")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


@contextlib.asynccontextmanager
async def setup(**verifier_options: Any) -> AsyncIterator[tuple[Running, str]]:
    sockets = loopback_sockets()
    url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
    async with oidc_provider(url) as issuer:
        oauth = OAuthResource.jwt(issuer, issuer + "/jwks", audience=url,
                                  scopes_supported=[TOOLS, ADMIN], required_scopes=[TOOLS],
                                  **verifier_options)
        async with running(protected_server(), oauth=oauth, sockets=sockets) as srv:
            yield srv, issuer


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_sdk_client_signs_in_through_oidc_provider(mode: str) -> None:
    async with setup() as (srv, issuer):
        browser, storage = ProviderBrowser(), MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(srv.url, browser, storage), timeout=STEP)
        with anyio.fail_after(STEP):
            async with http, Client(streamable_http_client(srv.url, http_client=http),
                                    mode=mode, read_timeout_seconds=STEP) as client:
                me = structured(await client.call_tool("whoami", {}))
                assert me == {"subject": "alice", "scopes": [TOOLS], "method": "bearer",
                              "authenticated": True}
                assert browser.visits == 1
                assert storage.tokens is not None
                token = storage.tokens.access_token
                header = jwt.get_unverified_header(token)
                claims = jwt.decode(token, options={"verify_signature": False})
                assert header["typ"] == "at+jwt" and claims["aud"] == srv.url
                assert claims["iss"] == issuer and claims["sub"] == "alice"
                assert claims["scope"] == TOOLS
        snap = srv.transport.snapshot()
        assert snap.refusals["auth_missing"] == 1
        assert snap.refusals["auth_invalid"] == 0


async def test_strict_rfc9068_accepts_the_providers_token_and_another_resource_refuses_it(
        ) -> None:
    async with setup(strict_rfc9068=True) as (srv, issuer):
        browser, storage = ProviderBrowser(), MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(srv.url, browser, storage), timeout=STEP)
        with anyio.fail_after(STEP):
            async with http, Client(streamable_http_client(srv.url, http_client=http),
                                    mode="legacy", read_timeout_seconds=STEP) as client:
                me = structured(await client.call_tool("whoami", {}))
                assert me["subject"] == "alice"
        assert storage.tokens is not None
        token = storage.tokens.access_token
        # another resource trusting the same provider: the token is not for it
        sockets = loopback_sockets()
        url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
        oauth = OAuthResource.jwt(issuer, issuer + "/jwks", audience=url)
        async with running(protected_server(), oauth=oauth, sockets=sockets) as other:
            r = await other.modern("tools/call", {"name": "whoami", "arguments": {}},
                                   headers={"Authorization": f"Bearer {token}"})
            assert r.status == 401
            assert r.json["error"]["message"] == \
                "Unauthorized: token audience is not this resource"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_inspector_cli_signs_in_through_oidc_provider(era: str,
                                                                tmp_path: Path) -> None:
    """The MCP Inspector's CLI runs its own OAuth client: with no TTY it needs
    ``MCP_AUTO_OPEN_ENABLED=true`` to start a login at all; it then prints the
    authorization URL ("Please navigate to: ...") and waits on its loopback callback
    listener.  The test plays the browser: it follows the URL through the provider and
    delivers the code to that listener; the CLI exchanges it and calls the tool."""
    callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
    async with setup() as (srv, issuer):
        proc = await asyncio.create_subprocess_exec(
            node(), launcher(),
            "--cli", "--format", "json", "--protocol-era", era, "--method", "tools/call",
            "--tool-name", "whoami", "--callback-url", callback, srv.url,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=tmp_path,
            env={**os.environ, "HOME": str(tmp_path), "MCP_AUTO_OPEN_ENABLED": "true",
                 "MCP_INSPECTOR_SECRET_STORE": "memory"})
        assert proc.stderr is not None
        try:
            async def authorization_url() -> str:
                while True:
                    line = (await proc.stderr.readline()).decode()  # type: ignore[union-attr]
                    assert line, "the Inspector ended without asking for a login"
                    if "Please navigate to: " in line:
                        return line.split("Please navigate to: ", 1)[1].strip()

            url = await asyncio.wait_for(authorization_url(), STEP)
            assert url.startswith(issuer + "/auth?") and "resource=" in url
            async with httpx2.AsyncClient(timeout=10.0) as http:
                for _ in range(10):
                    resp = await http.get(url, follow_redirects=False)
                    assert resp.status_code in (302, 303), (resp.status_code, resp.text)
                    url = urljoin(url, resp.headers["location"])
                    if url.startswith(callback):
                        done = await http.get(url)  # the Inspector's listener
                        assert done.status_code == 200, done.text
                        break
                else:
                    raise AssertionError("the provider never redirected to the Inspector")
            out, _ = await asyncio.wait_for(proc.communicate(), STEP)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    got = json.loads(out.decode().strip().splitlines()[-1])
    me = got["result"]["structuredContent"]
    assert me["subject"] == "alice" and me["method"] == "bearer" and TOOLS in me["scopes"]
