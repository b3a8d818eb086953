"""The probes: /healthz answers while the loop runs; /readyz is 200 while the transport can
serve and 503 with Retry-After once its drain began; the example servers mount both."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from conftest import ServerFactory
from mcp_http import running, wait_until
from tornado.httpclient import AsyncHTTPClient

from tornado_mcp import Server


async def probe(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    client = AsyncHTTPClient(force_instance=True)
    try:
        r = await client.fetch(f"http://127.0.0.1:{port}{path}", method=method,
                               raise_error=False, request_timeout=10)
        return r.code, dict(r.headers.get_all()), r.body or b""
    finally:
        client.close()


async def test_ready_until_the_drain_begins_then_503_while_it_lasts() -> None:
    server = Server("probed")
    release = asyncio.Event()
    started = asyncio.Event()

    @server.tool()
    async def long_call() -> str:
        started.set()
        await release.wait()
        return "done"

    async with running(server, extra_routes=lambda t: t.health_routes()) as srv:
        status, headers, body = await probe(srv.port, "/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        assert headers["Cache-Control"] == "no-store"
        status, _, body = await probe(srv.port, "/readyz")
        assert (status, json.loads(body)) == (200, {"status": "ready"})
        call = asyncio.ensure_future(srv.modern("tools/call", {"name": "long_call",
                                                               "arguments": {}}))
        await asyncio.wait_for(started.wait(), 10)
        closing = asyncio.ensure_future(srv.transport.close())
        await wait_until(lambda: srv.transport.closing)
        status, headers, body = await probe(srv.port, "/readyz")
        assert status == 503 and headers["Retry-After"] == "5"
        assert json.loads(body) == {"status": "unavailable",
                                    "reason": "draining: shutting down"}
        assert (await probe(srv.port, "/healthz"))[0] == 200  # alive while it drains
        assert (await probe(srv.port, "/readyz", "HEAD"))[0] == 503
        release.set()
        await call
        await closing


def test_the_example_server_mounts_the_probes(server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/conformance_server.py", "--no-admin"])
    for path, expected in (("/healthz", {"status": "ok"}), ("/readyz", {"status": "ready"})):
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}{path}", timeout=10) as r:
            assert r.status == 200 and json.loads(r.read()) == expected
