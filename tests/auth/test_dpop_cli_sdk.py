"""DPoP from the command line (``--oauth-dpop``), and the official Python SDK client against
a resource that accepts DPoP.

The SDK (``mcp`` 2.3.0) has no DPoP support of its own: it reads the two DPoP fields of the
protected-resource metadata but never signs a proof, so it uses plain ``Bearer`` tokens.
What is tested here is that it still discovers, authorizes and calls through the two
challenges (``Bearer ..., DPoP algs=...``) a DPoP-accepting resource answers with.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from authz_server import authorization_server
from conftest import ServerFactory
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_http import MODERN, Running, modern_meta, rpc
from oauth_support import TOOLS, Browser, Holder, MemoryStorage, mint, oauth_setup, provider
from tornado.httputil import HTTPHeaders

from tornado_mcp.auth import DPoP

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]
STEP = 10.0


async def whoami(srv: Running, authorization: str, proof: str | None = None) -> Any:
    headers = HTTPHeaders({"Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream",
                           "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                           "Mcp-Name": "whoami", "Authorization": authorization})
    if proof is not None:
        headers.add("DPoP", proof)
    body = json.dumps(rpc("tools/call", {"name": "whoami", "arguments": {},
                                         "_meta": modern_meta()})).encode()
    return await srv.request("POST", body, headers)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["on", "required"])
async def test_the_oauth_dpop_flag_accepts_bound_tokens(server_factory: ServerFactory,
                                                        mode: str) -> None:
    async with authorization_server() as authz:
        proc = server_factory(["examples/conformance_server.py", "--no-admin",
                               "--oauth-issuer", authz.issuer,
                               "--oauth-jwks-url", authz.issuer + "/jwks",
                               "--oauth-dpop", mode])
        srv = Running.remote(proc.port)
        try:
            metadata_url = (f"http://127.0.0.1:{proc.port}"
                            "/.well-known/oauth-protected-resource/mcp")
            doc = json.loads((await srv.client.fetch(metadata_url)).body)
            assert "ES256" in doc["dpop_signing_alg_values_supported"]
            assert doc.get("dpop_bound_access_tokens_required") is \
                (True if mode == "required" else None)
            holder = Holder()
            token = mint(authz, srv.url, cnf={"jkt": holder.jkt})
            ok = await whoami(srv, f"DPoP {token}", holder.proof(srv.url, token))
            assert ok.status == 200, ok.body
            assert ok.json["result"]["structuredContent"]["subject"] == "alice"
            assert (await whoami(srv, f"Bearer {token}")).status == 401  # bound: never Bearer
            plain = await whoami(srv, f"Bearer {mint(authz, srv.url)}")
            assert plain.status == (401 if mode == "required" else 200)
        finally:
            srv.client.close()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_sdk_client_authorizes_against_a_resource_accepting_dpop(mode: str) -> None:
    async with oauth_setup(dpop=DPoP()) as setup:
        browser, storage = Browser(), MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(setup.srv.url, browser, storage),
                                  timeout=STEP)
        with anyio.fail_after(STEP):
            async with http, Client(streamable_http_client(setup.srv.url, http_client=http),
                                    mode=mode, read_timeout_seconds=STEP) as client:
                result = await client.call_tool("whoami", {})
                assert not result.is_error, result
                assert result.structured_content == {
                    "subject": "alice", "scopes": [TOOLS], "method": "bearer",
                    "authenticated": True}
        assert browser.visits == 1
        assert setup.srv.transport.snapshot().refusals["auth_missing"] == 1
