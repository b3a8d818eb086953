"""The command-line contract: ``examples/conformance_server.py`` and the demo take
``--oauth-issuer``, ``--oauth-jwks-url`` and ``--oauth-audience`` and then serve a JWT
resource server for that issuer; ``whoami`` answers who is calling (anonymous without
those flags).  The servers run as subprocesses; the authorization server is real."""

from __future__ import annotations

import json
from typing import Any

import pytest
from authz_server import authorization_server
from conftest import ServerFactory
from mcp_http import Running, modern_meta, rpc
from oauth_support import mint

pytestmark = pytest.mark.timeout(60)


async def whoami(srv: Running, token: str | None = None) -> Any:
    headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "whoami"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await srv.post(rpc("tools/call", {"name": "whoami", "arguments": {},
                                             "_meta": modern_meta()}), headers=headers)


@pytest.mark.parametrize("argv", [["examples/conformance_server.py"],
                                  ["-m", "tornado_mcp", "demo"]])
async def test_oauth_flags_make_a_jwt_resource_server(server_factory: ServerFactory,
                                                      argv: list[str]) -> None:
    async with authorization_server() as authz:
        proc = server_factory([*argv, "--no-admin", "--oauth-issuer", authz.issuer,
                               "--oauth-jwks-url", authz.issuer + "/jwks"])
        srv = Running.remote(proc.port)
        try:
            refused = await whoami(srv)
            assert refused.status == 401
            metadata_url = (f"http://127.0.0.1:{proc.port}"
                            "/.well-known/oauth-protected-resource/mcp")
            assert refused.headers["Www-Authenticate"] == \
                f'Bearer resource_metadata="{metadata_url}"'
            doc = json.loads((await srv.client.fetch(metadata_url)).body)
            assert doc["resource"] == srv.url  # the audience is the endpoint's own URL
            assert doc["authorization_servers"] == [authz.issuer]
            me = await whoami(srv, mint(authz, srv.url))
            assert me.json["result"]["structuredContent"] == {
                "subject": "alice", "scopes": ["mcp:tools"], "method": "bearer",
                "authenticated": True}
            assert (await whoami(srv, mint(authz, "http://127.0.0.1:1/mcp"))).status == 401
        finally:
            srv.client.close()


async def test_an_explicit_audience_replaces_the_endpoint_url(
        server_factory: ServerFactory) -> None:
    async with authorization_server() as authz:
        proc = server_factory(["examples/conformance_server.py", "--no-admin",
                               "--oauth-issuer", authz.issuer,
                               "--oauth-jwks-url", authz.issuer + "/jwks",
                               "--oauth-audience", "https://mcp.example.com/mcp"])
        srv = Running.remote(proc.port)
        try:
            assert (await whoami(srv, mint(authz, srv.url))).status == 401
            ok = await whoami(srv, mint(authz, "https://mcp.example.com/mcp"))
            assert ok.json["result"]["structuredContent"]["subject"] == "alice"
        finally:
            srv.client.close()


async def test_whoami_is_anonymous_without_authentication(
        server_factory: ServerFactory) -> None:
    proc = server_factory(["examples/conformance_server.py", "--no-admin"])
    srv = Running.remote(proc.port)
    try:
        me = await whoami(srv)
        assert me.json["result"]["structuredContent"] == {
            "subject": None, "scopes": [], "method": "anonymous", "authenticated": False}
    finally:
        srv.client.close()
