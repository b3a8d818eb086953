"""Several real server processes (examples/conformance_server.py --redis-url) sharing one
real redis-server: notifications reach every process, limits changed on one apply on all,
the admin API lists every live process, a legacy session answers on any process, and a
Redis outage delays notifications without losing or repeating any."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from conftest import ServerFactory, ServerProc
from http_wire import WireConn, request_bytes
from mcp_http import Running, Stream, init_msg, rpc
from nginx_proc import free_port
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tcp_proxy import proxy_to
from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from tornado_mcp.cluster.sessions import looks_like_process_id

TOKEN = "cluster-test-token-0123456789"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def start(factory: ServerFactory, redis: RedisProc, *extra: str) -> ServerProc:
    return factory(["examples/conformance_server.py", "--admin-token", TOKEN,
                    "--redis-url", redis.url, *extra])


async def admin(port: int, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    client = AsyncHTTPClient(force_instance=True)
    try:
        resp = await client.fetch(HTTPRequest(
            f"http://127.0.0.1:{port}/admin/{path}", method=method, headers=BEARER,
            body=None if body is None else json.dumps(body), request_timeout=10),
            raise_error=False)
    finally:
        client.close()
    text = (resp.body or b"").decode()
    return resp.code, (json.loads(text) if path.startswith("api/") else text)


async def touch(port: int, uri: str) -> None:
    r = await Running.remote(port).modern("tools/call", {"name": "touch_resource",
                                                          "arguments": {"uri": uri}})
    assert r.status == 200, r.body


def updates(stream: Stream) -> list[str]:
    return [m["params"]["uri"] for m in stream.messages
            if m.get("method") == "notifications/resources/updated"]


async def metric(port: int, name: str) -> float | None:
    _, text = await admin(port, "GET", "metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


async def test_notifications_limits_and_the_process_list_span_the_cluster(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis), start(server_factory, redis)
    on_a = await Running.remote(a.port).listen({"toolsListChanged": True,
                                                "resourceSubscriptions": ["test://r/7"]})
    on_b = await Running.remote(b.port).listen({"toolsListChanged": True})
    legacy_a = Running.remote(a.port)
    sid = await legacy_a.initialize()
    get_a = await legacy_a.get_stream(sid)
    try:
        await on_a.wait_messages(1)
        await on_b.wait_messages(1)
        # A resource update published on B reaches the listen stream held by A.
        await touch(b.port, "test://r/7")
        await on_a.wait_messages(2)
        assert updates(on_a) == ["test://r/7"]
        # A list change made on B reaches every process: listen streams and GET streams.
        r = await Running.remote(b.port).modern("tools/call",
                                                {"name": "test_trigger_tool_change"})
        assert r.status == 200
        await on_a.wait_messages(3)
        await on_b.wait_messages(2)
        await get_a.wait_messages(1)
        assert on_a.messages[2]["method"] == "notifications/tools/list_changed"
        assert on_b.messages[1]["method"] == "notifications/tools/list_changed"
        assert get_a.messages[0]["method"] == "notifications/tools/list_changed"

        # Both processes are listed, with what each holds.
        status, view = await admin(b.port, "GET", "api/cluster")
        assert status == 200 and view["connected"] is True
        by_pid = {p["pid"]: p for p in view["processes"]}
        assert set(by_pid) == {a.proc.pid, b.proc.pid}
        for p in view["processes"]:
            assert set(p) >= {"id", "host", "pid", "sessions", "listen_streams",
                              "heartbeat_at"}
        # A's counts reach B with A's next heartbeat (at most a second).
        async def a_as_seen_from_b() -> dict[str, Any]:
            _, v = await admin(b.port, "GET", "api/cluster")
            return next(p for p in v["processes"] if p["pid"] == a.proc.pid)
        seen = await a_as_seen_from_b()
        for _ in range(40):
            if seen["sessions"] == 1 and seen["listen_streams"] == 1:
                break
            await asyncio.sleep(0.05)
            seen = await a_as_seen_from_b()
        assert (seen["sessions"], seen["listen_streams"]) == (1, 1)

        # A limit changed through A's admin API is enforced by B within a second.
        status, body = await admin(a.port, "PATCH", "api/limits", {"max_sessions": 1})
        assert status == 200 and body["limits"]["max_sessions"] == 1

        async def b_limit() -> Any:
            _, limits = await admin(b.port, "GET", "api/limits")
            return limits["limits"]["max_sessions"]
        for _ in range(100):
            if await b_limit() == 1:
                break
            await asyncio.sleep(0.01)
        assert await b_limit() == 1
        legacy_b = Running.remote(b.port)
        await legacy_b.initialize()
        refused = await legacy_b.post(rpc("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "second", "version": "1"}}, 0))
        assert refused.status == 503
        # B's audit log says who changed it, and where.
        _, overview = await admin(b.port, "GET", "api/overview")
        change = overview["changes"][0]
        assert change["action"] == "limits"
        assert change["detail"] == {"max_sessions": {"old": 10000, "new": 1}}
        assert f"pid {a.proc.pid}" in change["actor"]
    finally:
        for s in (on_a, on_b, get_a):
            s.close()


async def test_a_legacy_session_answers_on_any_process(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis), start(server_factory, redis)
    sid = await Running.remote(a.port).initialize()
    via_b = Running.remote(b.port)
    r = await via_b.post(rpc("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
                         session=sid)
    assert r.status == 200
    assert r.messages[-1]["result"]["content"][0]["text"] == "hi"
    # A GET stream opened through B carries what A sends on it.
    stream = await via_b.get_stream(sid)
    try:
        r = await Running.remote(a.port).modern("tools/call",
                                                {"name": "test_trigger_tool_change"})
        assert r.status == 200
        await stream.wait_messages(1)
        assert stream.messages[0]["method"] == "notifications/tools/list_changed"
    finally:
        stream.close()
    # DELETE through B ends the session on A; the id is then unknown everywhere.
    assert (await via_b.delete(sid)).status == 200
    for port in (a.port, b.port):
        gone = await Running.remote(port).post(rpc("ping"), session=sid)
        assert gone.status == 404
    # A session of a process that stopped lives on: it was handed over, and B adopts it.
    sid = await Running.remote(a.port).initialize()
    a.stop()

    async def processes_seen_by_b() -> int:
        _, view = await admin(b.port, "GET", "api/cluster")
        return len(view["processes"])
    for _ in range(100):
        if await processes_seen_by_b() == 1:
            break
        await asyncio.sleep(0.02)
    assert await processes_seen_by_b() == 1
    kept = await via_b.post(rpc("ping"), session=sid)
    assert kept.status == 200, kept.body
    assert await metric(b.port, "tornado_mcp_cluster_sessions_adopted_total") == 1.0
    assert (await via_b.delete(sid)).status == 200
    assert (await via_b.post(rpc("ping"), session=sid)).status == 404


async def test_redis_outage_delays_notifications_without_losing_or_repeating_any(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    a, b = start(server_factory, redis), start(server_factory, redis)
    uris = [f"test://r/{n}" for n in range(11)]
    on_a = await Running.remote(a.port).listen({"resourceSubscriptions": uris})
    on_b = await Running.remote(b.port).listen({"resourceSubscriptions": uris})
    try:
        await on_a.wait_messages(1)
        await on_b.wait_messages(1)
        await touch(b.port, uris[0])
        await on_a.wait_messages(2)
        # B's write may still await Redis's answer after A has read the entry: wait until
        # B holds nothing, so that what it buffers below is exactly the outage's.
        for _ in range(200):
            _, overview = await admin(b.port, "GET", "api/overview")
            if overview["cluster"]["relay"]["buffered"] == 0:
                break
            await asyncio.sleep(0.02)
        assert overview["cluster"]["relay"]["buffered"] == 0

        redis.kill()
        for uri in uris[1:6]:  # published while Redis is down
            await touch(b.port, uri)
        # B keeps serving its own streams at once ...
        await on_b.wait_messages(7)
        assert updates(on_b) == uris[:6]
        # ... and both processes show the outage.
        for port in (a.port, b.port):
            for _ in range(200):
                if await metric(port, "tornado_mcp_cluster_connected") == 0.0:
                    break
                await asyncio.sleep(0.02)
            assert await metric(port, "tornado_mcp_cluster_connected") == 0.0
        _, overview = await admin(b.port, "GET", "api/overview")
        assert overview["cluster"]["connected"] is False
        assert overview["cluster"]["relay"]["buffered"] == 5

        redis.start()  # same socket, empty: nothing was saved
        for uri in uris[6:]:  # published after Redis came back
            await touch(b.port, uri)
        await on_a.wait_messages(12, timeout=20)
        assert updates(on_a) == uris  # each exactly once, in publishing order
        # Nothing more is on its way: a marker published last by B arrives next.
        await touch(b.port, uris[0])
        await on_a.wait_messages(13)
        assert updates(on_a) == [*uris, uris[0]]
        for port in (a.port, b.port):
            for _ in range(200):
                if await metric(port, "tornado_mcp_cluster_connected") == 1.0:
                    break
                await asyncio.sleep(0.02)
            assert await metric(port, "tornado_mcp_cluster_connected") == 1.0
        assert await metric(b.port, "tornado_mcp_cluster_outbox") == 0.0
        assert await metric(a.port, "tornado_mcp_cluster_received_total") == 12.0
        assert a.proc.poll() is None and b.proc.poll() is None
    finally:
        on_a.close()
        on_b.close()


async def test_a_starting_process_serves_once_it_has_joined_the_cluster(
        redis: RedisProc) -> None:
    """A request that reaches a starting process while it joins the cluster (Redis slow
    to answer: held here) waits in the listen queue, and the session it opens names the
    process, so every other process can find it.  (Served before joining, it would name
    none: 404 wherever else its requests land.)"""
    port = free_port()
    with proxy_to(redis.path) as proxy:
        proxy.hold()
        proc = ServerProc([sys.executable, "examples/conformance_server.py", "--no-admin",
                           "--redis-url", proxy.url, "--port", str(port)], dict(os.environ))
        try:
            conn = await until_bound(proc, port)
            await conn.send(request_bytes("POST", port, [
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream")],
                json.dumps(init_msg(client_name="early")).encode()))
            answer = asyncio.ensure_future(conn.read_reply())
            done, _ = await asyncio.wait({answer}, timeout=1.0)
            assert not done, f"answered before joining: {answer.result()!r}"
            proxy.release()
            reply = await answer
            conn.close()
            assert reply.status == 200, reply
            sid = reply.header("Mcp-Session-Id") or ""
            owner, dot, _ = sid.partition(".")
            assert dot and looks_like_process_id(owner), sid
        finally:
            proxy.release()
            proc.stop()


async def until_bound(proc: ServerProc, port: int) -> WireConn:
    """A connection to ``port`` as soon as the process has bound it (it takes connections
    from then on, before it serves them)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return await WireConn.open(port, 2.0)
        except OSError:
            assert time.monotonic() < deadline and proc.proc.poll() is None, \
                proc.diagnostics()
            await asyncio.sleep(0.02)
