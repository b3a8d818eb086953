"""DPoP replay across a cluster: two server processes sharing one real redis-server behind
one public URL (as behind a load balancer).  A proof taken by one process is refused as a
replay by the other; each caller's share holds across both; and while Redis is away each
process still refuses replays it saw itself, and counts the proofs it checked alone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from authz_server import authorization_server
from cluster.redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from conftest import ServerFactory
from mcp_http import MODERN, Running, modern_meta, rpc
from oauth_support import Holder, mint
from tornado.httpclient import AsyncHTTPClient
from tornado.httputil import HTTPHeaders

pytestmark = pytest.mark.timeout(90)

PUBLIC = "http://mcp.example.com/mcp"  # the URL clients use; both processes serve it
ADMIN_TOKEN = "dpop-cluster-admin-token-0123456789"
FALLBACKS = 'tornado_mcp_cluster_fallbacks_total{kind="dpop_replay"} '


async def fallbacks(port: int) -> float:
    """The DPoP replay checks this process made without Redis (its /admin/metrics)."""
    client = AsyncHTTPClient(force_instance=True)
    try:
        r = await client.fetch(f"http://127.0.0.1:{port}/admin/metrics", request_timeout=10,
                               headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    finally:
        client.close()
    lines = [line for line in r.body.decode().splitlines() if line.startswith(FALLBACKS)]
    assert len(lines) == 1, r.body
    return float(lines[0].split()[-1])


async def whoami(srv: Running, token: str, proof: str) -> Any:
    headers = HTTPHeaders({"Content-Type": "application/json",
                           "Accept": "application/json, text/event-stream",
                           "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
                           "Mcp-Name": "whoami", "Authorization": f"DPoP {token}",
                           "Host": "mcp.example.com"})
    headers.add("DPoP", proof)
    body = json.dumps(rpc("tools/call", {"name": "whoami", "arguments": {},
                                         "_meta": modern_meta()})).encode()
    return await srv.request("POST", body, headers)  # type: ignore[arg-type]


async def test_a_proof_taken_on_one_process_is_a_replay_on_the_other(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    async with authorization_server() as authz:
        flags = ["examples/conformance_server.py", "--admin-token", ADMIN_TOKEN,
                 "--redis-url", redis.url,
                 "--oauth-issuer", authz.issuer, "--oauth-jwks-url", authz.issuer + "/jwks",
                 "--oauth-audience", PUBLIC, "--oauth-dpop", "on",
                 "--allowed-hosts", "mcp.example.com"]
        a, b = server_factory(flags), server_factory(flags)
        on_a, on_b = Running.remote(a.port), Running.remote(b.port)
        try:
            holder = Holder()
            token = mint(authz, PUBLIC, cnf={"jkt": holder.jkt})
            proof = holder.proof(PUBLIC, token)
            first = await whoami(on_a, token, proof)
            assert first.status == 200, first.body
            again = await whoami(on_b, token, proof)
            assert again.status == 401, again.body
            assert again.json["error"]["message"] == \
                "Unauthorized: DPoP proof was already used (jti replayed)"
            assert (await whoami(on_a, token, proof)).status == 401
            # a fresh proof is taken on either
            assert (await whoami(on_b, token, holder.proof(PUBLIC, token))).status == 200
            # Redis away: each process still refuses what it saw itself, and counts the
            # proofs it checked alone
            assert await fallbacks(b.port) == 0
            redis.kill()
            seen_on_b = holder.proof(PUBLIC, token)
            assert (await whoami(on_b, token, seen_on_b)).status == 200
            assert (await whoami(on_b, token, seen_on_b)).status == 401
            assert await fallbacks(b.port) == 1  # the replay was refused by its own cache
        finally:
            on_a.client.close()
            on_b.client.close()
