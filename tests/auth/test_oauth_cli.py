"""The command-line contract: ``examples/conformance_server.py`` and the demo take
``--oauth-issuer``, ``--oauth-jwks-url`` and ``--oauth-audience`` and then serve a JWT
resource server for that issuer; ``whoami`` answers who is calling (anonymous without
those flags).  The servers run as subprocesses; the authorization server is real."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest
from authz_server import authorization_server
from conftest import ServerFactory
from mcp_http import Running, modern_meta, rpc
from oauth_support import mint

from tornado_mcp.cli import oauth_from_args

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


@pytest.mark.parametrize("argv", [["examples/conformance_server.py"],
                                  ["-m", "tornado_mcp", "demo"]])
async def test_the_audience_is_the_bound_url_whatever_host_the_client_sends(
        server_factory: ServerFactory, argv: list[str]) -> None:
    """A token minted for another resource on a loopback name (another port, ``localhost``)
    is refused even when the request's ``Host`` names that resource, and the challenge
    still names the configured URL."""
    async with authorization_server() as authz:
        proc = server_factory([*argv, "--no-admin", "--oauth-issuer", authz.issuer,
                               "--oauth-jwks-url", authz.issuer + "/jwks"])
        srv = Running.remote(proc.port)
        try:
            for other in ("localhost:9999", f"127.0.0.1:{proc.port + 1}",
                          f"localhost:{proc.port}"):
                headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                           "Mcp-Name": "whoami", "Host": other,
                           "Authorization": f"Bearer {mint(authz, f'http://{other}/mcp')}"}
                r = await srv.post(rpc("tools/call", {"name": "whoami", "arguments": {},
                                                      "_meta": modern_meta()}), headers=headers)
                assert r.status == 401, (other, r.body)
                assert r.json["error"]["message"] == \
                    "Unauthorized: token audience is not this resource"
                assert (f'resource_metadata="http://127.0.0.1:{proc.port}/.well-known/'
                        'oauth-protected-resource/mcp"') in r.headers["Www-Authenticate"]
        finally:
            srv.client.close()


def test_a_wildcard_address_needs_an_explicit_audience(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(oauth_issuer="https://as.example", oauth_jwks_url=None,
                              oauth_audience=None, oauth_scopes=None, host="0.0.0.0")
    with pytest.raises(SystemExit) as exit_info:
        oauth_from_args(args, "http://127.0.0.1:8000/mcp")
    assert exit_info.value.code == 2
    assert "needs --oauth-audience" in capsys.readouterr().err
    args.oauth_audience = "https://mcp.example.com/mcp"
    oauth = oauth_from_args(args, "http://127.0.0.1:8000/mcp")
    assert oauth is not None and oauth.resource_url() == "https://mcp.example.com/mcp"
