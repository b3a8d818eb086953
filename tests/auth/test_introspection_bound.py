"""The bound on calls to the introspection endpoint, over real HTTP: a slow endpoint (a
local Tornado app that holds every request until the test lets go) sees at most
``max_concurrent`` calls at once, one call for many requests with the same token, and a
token that cannot get a slot in ``max_wait`` (or finds ``max_waiting`` tokens queued) is
answered 503 with ``Retry-After``, not 401."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tornado.web
from mcp_http import Running, loopback_sockets, running, wait_until
from oauth_support import protected_server
from tornado.httpclient import AsyncHTTPClient

from tornado_mcp.auth import IntrospectionVerifier, OAuthResource

pytestmark = pytest.mark.timeout(60)


class SlowIntrospection:
    """An RFC 7662 endpoint that answers ``active: false`` once released, counting the
    calls in flight."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.current = 0
        self.peak = 0
        self.calls = 0


class Handler(tornado.web.RequestHandler):
    def initialize(self, peer: SlowIntrospection) -> None:
        self.peer = peer

    async def post(self) -> None:
        peer = self.peer
        peer.calls += 1
        peer.current += 1
        peer.peak = max(peer.peak, peer.current)
        try:
            await peer.release.wait()
        finally:
            peer.current -= 1
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"active": False}))


@contextlib.asynccontextmanager
async def setup(**bounds: Any) -> AsyncIterator[tuple[Running, SlowIntrospection,
                                                      IntrospectionVerifier]]:
    peer = SlowIntrospection()
    app = tornado.web.Application([("/introspect", Handler, {"peer": peer})])
    sockets = loopback_sockets()
    http = tornado.httpserver.HTTPServer(app)
    http.add_sockets(sockets)
    endpoint = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/introspect"
    verifier = IntrospectionVerifier(endpoint, "rs", "secret", **bounds)
    mcp_sockets = loopback_sockets()
    oauth = OAuthResource(verifier, authorization_servers=["http://127.0.0.1:1"],
                          resource=f"http://127.0.0.1:{mcp_sockets[0].getsockname()[1]}/mcp")
    try:
        async with running(protected_server(), oauth=oauth, sockets=mcp_sockets) as srv:
            srv.client.close()  # one that sends all the parallel requests at once
            srv.client = AsyncHTTPClient(force_instance=True, max_clients=100)
            yield srv, peer, verifier
            peer.release.set()
    finally:
        peer.release.set()
        http.stop()
        await asyncio.wait_for(http.close_all_connections(), 10)


async def call(srv: Running, token: str) -> Any:
    return await srv.modern("tools/list", headers={"Authorization": f"Bearer {token}"})


async def test_parallel_junk_tokens_make_at_most_max_concurrent_calls() -> None:
    async with setup(max_concurrent=8) as (srv, peer, verifier):
        calls = [asyncio.ensure_future(call(srv, f"junk-{i}")) for i in range(60)]
        await wait_until(lambda: verifier.in_flight + verifier.waiting == 60)
        await wait_until(lambda: peer.current == 8)
        assert (verifier.in_flight, verifier.waiting) == (8, 52)  # at the bound, the rest wait
        peer.release.set()
        replies = await asyncio.gather(*calls)
        assert {r.status for r in replies} == {401}
        assert {r.json["error"]["message"] for r in replies} == {
            "Unauthorized: token is not active"}
        assert (peer.peak, peer.calls) == (8, 60)


async def test_the_same_token_in_flight_is_asked_about_once() -> None:
    async with setup(max_concurrent=2) as (srv, peer, verifier):
        calls = [asyncio.ensure_future(call(srv, "the-same-token")) for _ in range(30)]
        await wait_until(lambda: peer.calls == 1)
        await wait_until(lambda: len(verifier._flights) == 1)
        peer.release.set()
        replies = await asyncio.gather(*calls)
        assert {r.status for r in replies} == {401}
        assert peer.calls == 1 and verifier.requests == 1


async def test_a_token_waiting_longer_than_max_wait_is_503() -> None:
    async with setup(max_concurrent=1, max_wait=0.2) as (srv, peer, _):
        held = asyncio.ensure_future(call(srv, "first"))
        await wait_until(lambda: peer.current == 1)
        r = await call(srv, "second")  # waits max_wait for the one slot, then gives up
        assert r.status == 503, r.body
        assert r.headers["Retry-After"] == "1"
        assert "Www-Authenticate" not in r.headers
        assert r.json["error"] == {
            "code": -32600,
            "message": "Service unavailable: token verification is busy; retry shortly"}
        assert srv.transport.snapshot().refusals["auth_unavailable"] == 1
        assert peer.calls == 1
        peer.release.set()
        assert (await held).status == 401


@pytest.mark.parametrize("queued", [2, 3], ids=["at-bound", "one-over"])
async def test_at_most_max_waiting_tokens_wait(queued: int) -> None:
    async with setup(max_concurrent=1, max_waiting=2, max_wait=30) as (srv, peer, verifier):
        held = asyncio.ensure_future(call(srv, "first"))
        await wait_until(lambda: peer.current == 1)
        waiting = [asyncio.ensure_future(call(srv, f"queued-{i}")) for i in range(queued)]
        if queued > 2:  # the one over the bound is refused at once, the others wait
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED,
                                         timeout=10)
            assert [t.result().status for t in done] == [503]
        await wait_until(lambda: verifier.waiting == 2)
        peer.release.set()
        statuses = sorted(r.status for r in await asyncio.gather(held, *waiting))
        assert statuses == [401, 401, 401] + [503] * (queued - 2)
        assert peer.calls == 3


def test_the_bounds_are_checked() -> None:
    for bad in ({"max_concurrent": 0}, {"max_waiting": -1}, {"max_wait": -1.0},
                {"max_wait": float("inf")}):
        with pytest.raises(ValueError, match="max_concurrent"):
            IntrospectionVerifier("http://127.0.0.1:1/i", "rs", "s", **bad)
