"""A draining process hands its legacy sessions to the others: the session keeps its id,
its negotiated version, client, log level, subscriptions and its resumable streams' events,
and the next process its client reaches adopts it.  While the session moves, a request for
it through another process is answered 503 with ``Retry-After: 1`` (never 502 or 404), and
a client that retries never initializes again.  Another caller's request for it is 404.

Each process is a Tornado server in this test process on its own loopback port, joined to
one real redis-server through one :class:`~tornado_mcp.cluster.Link` (as the command line
does); "SIGTERM" is what the command line does on it: stop listening, then close the
transport (the drain) and leave the cluster.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado.web
from mcp_http import Reply, example_server, legacy_headers, rpc, wait_until
from nodes import WAIT, node, until_listed
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from resume.test_resumable_streams import closed_post, events, resume_get

from tornado_mcp import Context, Server
from tornado_mcp.protocol.identity import Principal


async def retrying(call: Any, seen: list[int]) -> Reply:
    """What a client that follows the docs does: on 503, wait ``Retry-After``, retry."""
    for _ in range(40):
        reply: Reply = await call()
        seen.append(reply.status)
        if reply.status != 503:
            return reply
        assert reply.headers.get("Retry-After") in ("1", "5"), reply.headers
        await asyncio.sleep(float(reply.headers["Retry-After"]) / 10)  # a patient client
    raise AssertionError(f"still 503 after 40 tries: {seen}")


def tracked_server() -> tuple[Server, asyncio.Event]:
    """The example server keeping legacy subscriptions, with a tool that holds."""
    server = example_server()
    server.track_subscriptions()
    release = asyncio.Event()

    async def hold(ctx: Context) -> str:
        await release.wait()
        return "held"

    server.add_tool(hold, "hold", description="Waits until the test releases it")
    return server, release


async def test_a_draining_process_hands_its_sessions_over_and_no_client_notices(
        redis: RedisProc) -> None:
    server_a, release = tracked_server()
    server_b, _ = tracked_server()
    async with node(redis, server_a) as a, node(redis, server_b) as b:
        await until_listed(a, b)
        sid = await a.srv.initialize(version="2025-06-18", client_name="mover")
        busy = await a.srv.initialize(version="2025-06-18", client_name="busy")
        for request in (rpc("logging/setLevel", {"level": "error"}, 2),
                        rpc("resources/subscribe", {"uri": "test://r/5"}, 3)):
            r = await a.srv.post(request, session=sid, version="2025-06-18")
            assert r.status == 200, r.body
        # A GET stream through B: forwarded to A, which holds the session.
        stream = await b.srv.get_stream(sid)
        # The busy session has a request in flight when the drain begins.
        held = asyncio.ensure_future(a.srv.post(
            rpc("tools/call", {"name": "hold", "arguments": {}}, 4), session=busy,
            version="2025-06-18"))
        await wait_until(lambda: bool(a.transport.sessions.get(busy).in_flight), WAIT)

        drain = asyncio.ensure_future(a.sigterm())
        # The idle session moves at once: its GET stream ends; the client comes back
        # through B, which adopts it.
        await stream.wait_closed(WAIT)
        seen: list[int] = []
        r = await retrying(lambda: b.srv.post(rpc("ping", None, 5), session=sid,
                                              version="2025-06-18"), seen)
        assert r.status == 200 and r.messages[-1]["result"] == {}, r.body
        moved = b.transport.sessions.get(sid)
        assert moved is not None
        assert (moved.protocol_version, moved.client_name, moved.log_level) == \
            ("2025-06-18", "mover", "error")
        assert moved.subscriptions == {"test://r/5"}
        # The busy one waits for its request: meanwhile it is "moving" (503), never 502/404.
        waiting = await b.srv.post(rpc("ping", None, 6), session=busy, version="2025-06-18")
        assert waiting.status == 503, waiting.body
        assert waiting.headers["Retry-After"] == "1"
        assert waiting.json["error"]["message"] == (
            "Service unavailable: this session is moving to another process; retry")
        release.set()
        answered = await held  # answered on its own connection, by A, during the drain
        assert answered.status == 200 and "held" in answered.body.decode()
        r = await retrying(lambda: b.srv.post(rpc("ping", None, 7), session=busy,
                                              version="2025-06-18"), seen)
        assert r.status == 200, r.body
        await asyncio.wait_for(drain, WAIT)
        assert set(seen) <= {200, 503}, seen
        assert a.cluster.sessions.handed_over == 2 and b.cluster.sessions.taken == 2

        # The adopted session lives on B: its GET stream there carries what it subscribed to.
        stream = await b.srv.get_stream(sid)
        try:
            r = await b.srv.modern("tools/call", {"name": "touch_resource",
                                                  "arguments": {"uri": "test://r/5"}})
            assert r.status == 200
            await stream.wait_messages(1, WAIT)
            assert stream.messages[0] == {"jsonrpc": "2.0",
                                          "method": "notifications/resources/updated",
                                          "params": {"uri": "test://r/5"}}
        finally:
            stream.close()
        assert (await b.srv.delete(sid)).status == 200
        assert (await b.srv.post(rpc("ping"), session=sid)).status == 404


async def test_a_moved_session_is_reached_through_every_process(redis: RedisProc) -> None:
    """After the move, the session's requests reaching a third process are forwarded to
    the adopter (its record names it); once it ends there, 404 everywhere."""
    async with node(redis) as a, node(redis) as b, node(redis) as c:
        await until_listed(a, b)
        await until_listed(b, c)
        sid = await a.srv.initialize()
        await a.sigterm()
        r = await retrying(lambda: b.srv.post(rpc("ping"), session=sid), [])
        assert r.status == 200
        for _ in range(3):
            via_c = await c.srv.post(rpc("tools/call", {"name": "echo",
                                                        "arguments": {"text": "hop"}}),
                                     session=sid)
            assert via_c.status == 200, via_c.body
            assert via_c.messages[-1]["result"]["content"][0]["text"] == "hop"
        assert c.transport.sessions.get(sid) is None  # forwarded, not adopted twice
        assert (await c.srv.delete(sid)).status == 200
        for srv in (b.srv, c.srv):
            assert (await srv.post(rpc("ping"), session=sid)).status == 404


async def test_a_moved_session_s_streams_resume_with_last_event_id(redis: RedisProc) -> None:
    """A 2025-11-25 client whose stream the server closed (polling) reconnects with
    ``Last-Event-ID`` after its process drained: the adopter replays what it missed from
    the shared event store."""
    server, go = stepped()
    async with node(redis, server, resumable_streams=True, sse_retry_interval=0.25) as a, \
            node(redis, resumable_streams=True) as b:
        await until_listed(a, b)
        sid = await a.srv.initialize(version="2025-11-25")
        first = await closed_post(a.srv, sid, "x", 1)  # the server closed it: poll later
        last_seen = first[1]["id"]
        go.set()  # the tool finishes while its client is away
        await wait_until(lambda: not a.transport.sessions.get(sid).in_flight, WAIT)
        await a.sigterm()
        resumed = None
        for _ in range(20):
            resumed = await resume_get(b.srv, sid, last_seen)
            await resumed.wait_closed(WAIT)
            if resumed.status != 503:
                break
            await asyncio.sleep(0.1)
        assert resumed is not None and resumed.status == 200, resumed and resumed.raw
        replayed = [e["data"] for e in events(resumed.raw) if e.get("data")]
        assert replayed[0]["params"]["data"] == "x-2"
        assert replayed[1]["result"]["content"][0]["text"] == "x done"


def stepped() -> tuple[Server, asyncio.Event]:
    server = example_server()
    go = asyncio.Event()

    async def steps(label: str, ctx: Context) -> str:
        ctx.info(f"{label}-1")
        assert ctx.close_sse_stream() is True
        await go.wait()
        ctx.info(f"{label}-2")
        return f"{label} done"

    server.add_tool(steps, "steps", description="logs, closes its stream, logs, returns")
    return server, go


async def test_another_caller_cannot_take_a_moved_session(redis: RedisProc) -> None:
    def by_header(handler: tornado.web.RequestHandler) -> Principal | None:
        user = handler.request.headers.get("X-User")
        return Principal.of(user) if user else None

    async with node(redis, authenticate=by_header) as a, \
            node(redis, authenticate=by_header) as b:
        await until_listed(a, b)
        r = await a.srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "alice", "version": "1"}}},
                             headers={"X-User": "alice"})
        sid = r.headers["Mcp-Session-Id"]
        await a.sigterm()
        seen: list[int] = []
        mallory = await retrying(lambda: b.srv.post(rpc("ping"), session=sid,
                                                    headers={"X-User": "mallory"}), seen)
        assert mallory.status == 404
        assert b.transport.sessions.get(sid) is None  # not taken by the wrong caller
        alice = await b.srv.post(rpc("ping"), session=sid, headers={"X-User": "alice"})
        assert alice.status == 200, alice.body
        refused = await b.srv.request("POST", json.dumps(rpc("ping")).encode(),
                                      {**legacy_headers(sid), "X-User": "mallory"})
        assert refused.status == 404


async def test_requests_racing_for_a_moved_session_adopt_it_once(redis: RedisProc) -> None:
    """The GET stream's reconnection and a POST reach the same process at once: both are
    served by the one adoption (neither is told the session is gone)."""
    async with node(redis) as a, node(redis) as b:
        await until_listed(a, b)
        sid = await a.srv.initialize()
        await a.sigterm()
        replies = await asyncio.gather(*(b.srv.post(rpc("ping", None, n), session=sid)
                                         for n in range(8)))
        assert {r.status for r in replies} <= {200, 503}, [(r.status, r.body) for r in replies]
        assert b.cluster.sessions.taken == 1
        r = await retrying(lambda: b.srv.post(rpc("ping"), session=sid), [])
        assert r.status == 200
