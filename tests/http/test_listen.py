"""``subscriptions/listen`` streams (2026-07-28): the filter, the honored subset, the
acknowledgement first, ``subscriptionId`` on every frame, delivery from every source, the
stream cap, keepalives, disconnects, graceful close, ``serve_subscriptions_listen`` and slow
consumers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import pytest
from mcp_http import (
    ACK,
    MODERN,
    SUB_ID,
    TIMEOUT,
    Reply,
    Running,
    Stream,
    acked,
    example_server,
    full_server,
    legacy_call,
    modern_header_lines,
    modern_meta,
    raw_exchange,
    running,
    wait_until,
)

from tornado_mcp import Context, Server

pytestmark = pytest.mark.timeout(60)

TOOLS_CHANGED = "notifications/tools/list_changed"


PROMPTS_CHANGED = "notifications/prompts/list_changed"


RESOURCES_CHANGED = "notifications/resources/list_changed"


UPDATED = "notifications/resources/updated"


WATCHED = "test://watched-resource"


ALL_FLAGS = {"toolsListChanged": True, "promptsListChanged": True,
             "resourcesListChanged": True}


def methods(stream: Stream) -> list[str | None]:
    return [m.get("method") for m in stream.messages]


def ack_of(stream: Stream) -> dict[str, Any]:
    first = stream.messages[0]
    assert first["method"] == ACK, stream.messages
    params: dict[str, Any] = first["params"]
    return params


def stream_id(srv: Running, subscription_id: Any) -> str:
    ids = [s.id for s in srv.transport.snapshot().streams
           if s.subscription_id == subscription_id]
    assert len(ids) == 1, ids
    return ids[0]


async def finish(srv: Running, stream: Stream, subscription_id: Any) -> list[dict[str, Any]]:
    """Close ``stream`` gracefully (a barrier: everything published before it arrives
    first) and return what it received, without the acknowledgement and the final result."""
    assert await srv.transport.close_stream(stream_id(srv, subscription_id))
    await stream.wait_closed()
    final = stream.messages[-1]
    assert final == {"jsonrpc": "2.0", "id": subscription_id,
                     "result": {"resultType": "complete",
                                "_meta": {SUB_ID: subscription_id}}}, stream.messages
    return stream.messages[1:-1]


def listen_error(reply: Reply) -> dict[str, Any]:
    assert reply.content_type.startswith("application/json"), reply.headers
    err: dict[str, Any] = reply.json["error"]
    return err


# -- the filter -----------------------------------------------------------------------------------

@pytest.mark.parametrize("notifications", ["tools", 1, ["toolsListChanged"], None],
                         ids=["string", "number", "array", "null"])
async def test_filter_must_be_an_object(srv: Running, notifications: Any) -> None:
    r = await srv.modern("subscriptions/listen", {"notifications": notifications},
                         request_id="L")
    assert r.status == 400
    err = listen_error(r)
    assert err["code"] == -32602
    assert "notifications" in err["message"]
    assert r.json["id"] == "L"
    assert len(srv.transport.listen_index) == 0


async def test_filter_missing_is_refused(srv: Running) -> None:
    r = await srv.modern("subscriptions/listen", {}, request_id="L")
    assert r.status == 400 and listen_error(r)["code"] == -32602


@pytest.mark.parametrize("flag_value", ["yes", None, {}, 1, 0],
                         ids=["string", "null", "object", "one", "zero"])
async def test_filter_flags_must_be_booleans(srv: Running, flag_value: Any) -> None:
    r = await srv.modern("subscriptions/listen",
                         {"notifications": {"toolsListChanged": flag_value}})
    assert r.status == 400 and listen_error(r)["code"] == -32602
    assert len(srv.transport.listen_index) == 0


async def test_listen_requires_the_envelope(srv: Running) -> None:
    r = await srv.modern("subscriptions/listen", {"notifications": {}},
                         meta={"io.modelcontextprotocol/protocolVersion": MODERN})
    assert r.status == 400 and listen_error(r)["code"] == -32602
    assert len(srv.transport.listen_index) == 0


@pytest.mark.parametrize("bad_id", [None, {"a": 1}, True, 1.5])
async def test_listen_id_must_be_a_string_or_an_integer(bad_id: Any) -> None:
    async with running(Server("x")) as srv:
        body = json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "subscriptions/listen",
                           "params": {"notifications": {}, "_meta": modern_meta()}}).encode()
        r = await raw_exchange(srv.port, "POST", body,
                               modern_header_lines("subscriptions/listen"))
        assert r.status == 400
        assert r.json["error"]["code"] == -32600
        assert len(srv.transport.listen_index) == 0


# -- the honored subset follows the declared capability flags -------------------------------------

async def test_conformance_server_honors_everything(srv: Running) -> None:
    stream = await acked(srv, {**ALL_FLAGS, "resourceSubscriptions": [WATCHED, "test://b",
                                                                       WATCHED],
                               "unknownKey": True})
    assert ack_of(stream) == {"_meta": {SUB_ID: "listen-1"},
                              "notifications": {**ALL_FLAGS,
                                                "resourceSubscriptions": [WATCHED,
                                                                          "test://b"]}}
    assert stream.headers.get("X-Accel-Buffering") == "no"
    assert len(stream.messages) == 1


async def test_capability_presence_without_flags_honors_nothing() -> None:
    server = Server("flags", capabilities={"tools": {}, "prompts": {},
                                           "resources": {"listChanged": False}})
    async with running(server) as srv:
        stream = await acked(srv, {**ALL_FLAGS, "resourceSubscriptions": ["test://a"]})
        assert ack_of(stream)["notifications"] == {}
        # An empty honored set still opens the stream, and nothing reaches it.
        server.notify_tools_list_changed()
        server.notify_prompts_list_changed()
        server.notify_resources_list_changed()
        server.notify_resources_updated("test://a")
        assert await finish(srv, stream, "listen-1") == []


async def test_honored_subset_per_flag() -> None:
    server = Server("some", capabilities={"tools": {"listChanged": True},
                                          "prompts": {"listChanged": False},
                                          "resources": {"listChanged": True}})
    async with running(server) as srv:
        stream = await acked(srv, {**ALL_FLAGS, "resourceSubscriptions": ["test://a"]})
        # No resources.subscribe: URIs are not honored; prompts' flag is false.
        assert ack_of(stream)["notifications"] == {"toolsListChanged": True,
                                                   "resourcesListChanged": True}
        only_tools = await acked(srv, {"toolsListChanged": True, "promptsListChanged": False},
                                 "listen-2")
        assert ack_of(only_tools)["notifications"] == {"toolsListChanged": True}


async def test_subscribe_flag_alone_honors_uris() -> None:
    server = Server("subonly", capabilities={"resources": {"subscribe": True}})
    async with running(server) as srv:
        stream = await acked(srv, {**ALL_FLAGS, "resourceSubscriptions": ["test://a"]})
        assert ack_of(stream)["notifications"] == {"resourceSubscriptions": ["test://a"]}


async def test_derived_capabilities_do_not_include_subscribe_without_a_handler() -> None:
    server = Server("derived")

    @server.resource("test://a")
    def a() -> str:
        return "a"

    async with running(server) as srv:
        stream = await acked(srv, {"resourcesListChanged": True,
                                   "resourceSubscriptions": ["test://a"]})
        assert ack_of(stream)["notifications"] == {"resourcesListChanged": True}


# -- the acknowledgement comes first, even under a burst ------------------------------------------

BURST_TIMEOUT = 60.0


async def test_ack_is_first_under_a_burst_of_concurrent_notifications() -> None:
    server = full_server()
    async with running(server) as srv:
        uri = "test://burst"
        per_thread = 400
        started = threading.Event()

        def hammer() -> None:
            started.set()
            for i in range(per_thread):
                server.notify_tools_list_changed()
                server.notify_resources_updated(uri)
                if i % 50 == 0:
                    threading.Event().wait(0.001)  # let the loop breathe; still concurrent

        threads = [threading.Thread(target=hammer, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()

        async def on_loop() -> None:
            for _ in range(per_thread):
                server.notify_tools_list_changed()
                server.notify_resources_updated(uri)
                await asyncio.sleep(0)

        loop_burst = asyncio.ensure_future(on_loop())
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, TIMEOUT)
        ids: list[Any] = [f"s{i}" if i % 2 else i for i in range(24)]
        streams = await asyncio.gather(*(
            srv.listen({"toolsListChanged": True, "resourceSubscriptions": [uri]}, i)
            for i in ids))
        # A bound against a hang, not a speed limit: on a loaded two-core machine (parallel
        # test workers) the burst alone has taken more than TIMEOUT.
        await asyncio.wait_for(loop_burst, BURST_TIMEOUT)
        for t in threads:
            await asyncio.get_running_loop().run_in_executor(None, t.join, BURST_TIMEOUT)
        server.notify_tools_list_changed()  # after the burst: every stream gets this one
        for sid, stream in zip(ids, streams, strict=True):
            assert stream.status == 200
            await stream.wait_for(lambda s: s.messages[-1:] != [] and
                                  s.messages[-1].get("method") == TOOLS_CHANGED
                                  and len(s.messages) >= 2)
            assert stream.messages[0]["method"] == ACK, stream.messages[:3]
            assert stream.messages[0]["params"]["_meta"] == {SUB_ID: sid}
            assert all(m["method"] != ACK for m in stream.messages[1:])
            assert all(m["params"]["_meta"] == {SUB_ID: sid} for m in stream.messages)
        assert srv.transport.refusals["max_stream_queue"] == 0
        assert len(srv.transport.listen_index) == len(ids)
        # The burst really overlapped the openings: streams got notifications from it.
        assert max(len(s.messages) for s in streams) > 2


# -- subscriptionId on every frame ----------------------------------------------------------------

@pytest.mark.parametrize("listen_id", ["abc", 7, 0, "7"], ids=["str", "int", "zero", "digits"])
async def test_subscription_id_keeps_the_id_type(listen_id: Any) -> None:
    server = full_server()
    async with running(server) as srv:
        stream = await acked(srv, {"toolsListChanged": True,
                                   "resourceSubscriptions": ["test://a"]}, listen_id)
        assert ack_of(stream)["_meta"] == {SUB_ID: listen_id}
        server.notify_tools_list_changed()
        server.notify_resources_updated("test://a")
        got = await finish(srv, stream, listen_id)
        assert got == [
            {"jsonrpc": "2.0", "method": TOOLS_CHANGED, "params": {"_meta": {SUB_ID: listen_id}}},
            {"jsonrpc": "2.0", "method": UPDATED,
             "params": {"_meta": {SUB_ID: listen_id}, "uri": "test://a"}}]
        for m in stream.messages:
            meta = m["params"]["_meta"] if "params" in m else m["result"]["_meta"]
            assert type(meta[SUB_ID]) is type(listen_id)


async def test_two_streams_sharing_an_id_each_get_their_own_frames() -> None:
    server = full_server()
    async with running(server) as srv:
        a = await acked(srv, {"toolsListChanged": True}, 1)
        b = await acked(srv, {"toolsListChanged": True}, 1)
        server.notify_tools_list_changed()
        for s in (a, b):
            await s.wait_messages(2)
            assert s.messages[1]["params"]["_meta"] == {SUB_ID: 1}
        await srv.transport.close()
        for s in (a, b):
            await s.wait_closed()
            assert s.messages[-1]["id"] == 1 and s.messages[-1]["result"]["resultType"] == \
                "complete"


# -- delivery -------------------------------------------------------------------------------------

async def test_list_changed_reaches_only_streams_that_asked() -> None:
    server = full_server()
    async with running(server) as srv:
        tools = await acked(srv, {"toolsListChanged": True}, "t")
        prompts = await acked(srv, {"promptsListChanged": True}, "p")
        resources = await acked(srv, {"resourcesListChanged": True}, "r")
        everything = await acked(srv, ALL_FLAGS, "all")
        nothing = await acked(srv, {}, "none")
        server.notify_tools_list_changed()
        server.notify_prompts_list_changed()
        server.notify_resources_list_changed()
        server.notify_resources_updated("test://a")  # nobody named it
        assert [m["method"] for m in await finish(srv, tools, "t")] == [TOOLS_CHANGED]
        assert [m["method"] for m in await finish(srv, prompts, "p")] == [PROMPTS_CHANGED]
        assert [m["method"] for m in await finish(srv, resources, "r")] == [RESOURCES_CHANGED]
        assert [m["method"] for m in await finish(srv, everything, "all")] == [
            TOOLS_CHANGED, PROMPTS_CHANGED, RESOURCES_CHANGED]
        assert await finish(srv, nothing, "none") == []


async def test_registration_changes_reach_listen_streams(srv: Running) -> None:
    stream = await acked(srv, ALL_FLAGS, "reg")
    r = await srv.modern("tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    assert r.status == 200
    r = await srv.modern("tools/call", {"name": "test_trigger_prompt_change", "arguments": {}})
    assert r.status == 200
    assert [m["method"] for m in await finish(srv, stream, "reg")] == [TOOLS_CHANGED,
                                                                      PROMPTS_CHANGED]


async def test_resource_updates_from_every_source(srv: Running) -> None:
    watched = await acked(srv, {"resourceSubscriptions": [WATCHED]}, "w")
    other = await acked(srv, {"resourceSubscriptions": ["test://other"]}, "o")
    sources: list[str] = []
    # 1. Server.notify_resources_updated, from the loop and from another thread.
    srv.server.notify_resources_updated(WATCHED)
    sources.append("server")
    thread = threading.Thread(target=srv.server.notify_resources_updated, args=(WATCHED,))
    thread.start()
    await asyncio.get_running_loop().run_in_executor(None, thread.join, TIMEOUT)
    sources.append("thread")
    await watched.wait_messages(3)
    # 2. A legacy session's session.notify_resources_updated tells that session only:
    #    no listen stream hears it (server.notify_resources_updated does, once).
    sid = await srv.initialize()
    session = srv.transport.sessions.get(sid)
    assert session is not None
    session.notify_resources_updated(WATCHED)
    # 3. A modern request: touch_resource (no legacy session has subscribed yet).
    r = await srv.modern("tools/call", {"name": "touch_resource",
                                        "arguments": {"uri": WATCHED}})
    assert r.status == 200
    sources.append("modern-request")
    # 4. A legacy request's context: touch_resource from the (only) subscribed session.
    r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                        "params": {"uri": WATCHED}}, session=sid)
    assert r.status == 200 and r.messages[-1]["result"] == {}
    r = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "touch_resource", "arguments": {"uri": WATCHED}}},
                       session=sid)
    assert r.messages[-1]["result"]["content"][0]["text"] == f"Touched {WATCHED}"
    sources.append("legacy-ctx")
    got = await finish(srv, watched, "w")
    assert got == [{"jsonrpc": "2.0", "method": UPDATED,
                    "params": {"_meta": {SUB_ID: "w"}, "uri": WATCHED}}] * len(sources)
    assert await finish(srv, other, "o") == []


async def test_one_touch_is_one_update_per_listen_stream(srv: Running) -> None:
    stream = await acked(srv, {"resourceSubscriptions": [WATCHED]}, "once")
    for _ in range(2):
        sid = await srv.initialize()
        await legacy_call(srv, sid, "resources/subscribe", {"uri": WATCHED})
    r = await srv.modern("tools/call", {"name": "touch_resource",
                                        "arguments": {"uri": WATCHED}})
    assert r.status == 200
    assert len(await finish(srv, stream, "once")) == 1


async def test_modern_context_notify_resources_updated() -> None:
    server = full_server("ctx")

    @server.tool()
    def touch(uri: str, ctx: Context) -> str:
        ctx.notify_resources_updated(uri)
        return "ok"

    async with running(server) as srv:
        stream = await acked(srv, {"resourceSubscriptions": ["test://x"]}, "x")
        r = await srv.modern("tools/call", {"name": "touch", "arguments": {"uri": "test://x"}})
        assert r.status == 200
        r2 = await srv.modern("tools/call", {"name": "touch", "arguments": {"uri": "test://y"}})
        assert r2.status == 200
        got = await finish(srv, stream, "x")
        assert [m["params"]["uri"] for m in got] == ["test://x"]


async def test_progress_and_logs_never_reach_listen_streams(srv: Running) -> None:
    stream = await acked(srv, {**ALL_FLAGS, "resourceSubscriptions": [WATCHED]}, "quiet")
    meta = modern_meta(progressToken="p1", **{"io.modelcontextprotocol/logLevel": "debug"})
    for tool in ("test_tool_with_progress", "test_tool_with_logging"):
        r = await srv.modern("tools/call", {"name": tool, "arguments": {}}, meta=meta)
        assert r.content_type.startswith("text/event-stream")
        assert len(r.messages) == 4  # the notifications went to the request's own response
    sid = await srv.initialize()
    get = await srv.get_stream(sid)
    r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "test_tool_with_progress", "arguments": {},
                                   "_meta": {"progressToken": "p2"}}}, session=sid)
    assert [m.get("method") for m in r.messages][:3] == ["notifications/progress"] * 3
    assert await finish(srv, stream, "quiet") == []
    get.close()


# -- the stream cap -------------------------------------------------------------------------------

async def test_cap_at_and_over() -> None:
    async with running(full_server(), max_listen_subscriptions=2) as srv:
        held = [await acked(srv, {}, "a"), await acked(srv, {}, "b")]  # keep them open
        r = await srv.modern("subscriptions/listen", {"notifications": {}}, request_id="c")
        assert r.status == 503
        err = listen_error(r)
        assert err["code"] == -32603
        assert "maximum concurrent subscriptions/listen streams (2)" in err["message"]
        assert r.json["id"] == "c"
        assert len(srv.transport.listen_index) == 2
        assert srv.transport.snapshot().refusals["max_listen_subscriptions"] == 1
        # Raising the cap live admits the next one at once.
        srv.transport.options.update({"max_listen_subscriptions": 3})
        held.append(await acked(srv, {}, "c"))
        assert len(srv.transport.listen_index) == 3


async def test_cap_none_removes_it() -> None:
    async with running(full_server(), max_listen_subscriptions=None) as srv:
        streams = [await acked(srv, {}, i) for i in range(12)]
        assert len(srv.transport.listen_index) == len(streams)


async def test_two_listens_racing_for_the_last_slot() -> None:
    async with running(full_server(), max_listen_subscriptions=2) as srv:
        first = await acked(srv, {}, "first")  # held open for the whole test
        a, b = await asyncio.gather(srv.listen({"toolsListChanged": True}, "race-a"),
                                    srv.listen({"toolsListChanged": True}, "race-b"))
        statuses = sorted([a.status, b.status])
        assert statuses == [200, 503], (a.raw, b.raw)
        winner, loser = (a, b) if a.status == 200 else (b, a)
        await winner.wait_messages(1)
        assert winner.messages[0]["method"] == ACK
        await loser.wait_closed()
        refusal = json.loads(loser.raw)
        assert refusal["error"]["code"] == -32603
        assert refusal["id"] == ("race-b" if loser is b else "race-a")
        assert loser.messages == []
        assert len(srv.transport.listen_index) == 2
        assert srv.transport.refusals["max_listen_subscriptions"] == 1
        assert not first.ended.is_set()


# -- keepalives and disconnects -------------------------------------------------------------------

async def test_keepalive_comment_frames() -> None:
    async with running(full_server(), listen_keepalive_interval=0.05) as srv:
        stream = await acked(srv, {"toolsListChanged": True})
        await stream.wait_for(lambda s: s.comments >= 3, timeout=5)
        assert stream.raw.count(b": ping") >= 3
        assert len(stream.messages) == 1  # comments are not messages
        assert len(srv.transport.listen_index) == 1


async def test_keepalive_none_sends_no_comments() -> None:
    async with running(full_server(), listen_keepalive_interval=None,
                       sse_keepalive_interval=0.05) as srv:
        stream = await acked(srv, {"toolsListChanged": True})
        # A legacy GET stream on the same transport does get its own keepalives, so the
        # time below is long enough for a listen keepalive to have shown up.
        sid = await srv.initialize()
        get = await srv.get_stream(sid)
        await get.wait_for(lambda s: s.comments >= 3, timeout=5)
        assert stream.comments == 0
        assert b"ping" not in stream.raw
        get.close()


async def test_disconnect_frees_the_slot_without_a_write() -> None:
    async with running(full_server(), max_listen_subscriptions=1,
                       listen_keepalive_interval=None) as srv:
        first = await acked(srv, {"toolsListChanged": True}, "one")
        refused = await srv.modern("subscriptions/listen", {"notifications": {}})
        assert refused.status == 503
        first.close()
        await wait_until(lambda: len(srv.transport.listen_index) == 0, timeout=5)
        assert srv.transport.snapshot().totals.listen_streams == 0
        second = await acked(srv, {"toolsListChanged": True}, "two")
        assert ack_of(second)["_meta"] == {SUB_ID: "two"}
        assert len(srv.transport.listen_index) == 1


# -- graceful close -------------------------------------------------------------------------------

async def test_graceful_close_sends_every_stream_its_result() -> None:
    server = full_server()
    async with running(server) as srv:
        ids: list[Any] = ["a", 2, "c"]
        streams = [await acked(srv, {"toolsListChanged": True}, i) for i in ids]
        server.notify_tools_list_changed()
        await srv.transport.close()
        for listen_id, stream in zip(ids, streams, strict=True):
            await stream.wait_closed()
            assert methods(stream) == [ACK, TOOLS_CHANGED, None]
            assert stream.messages[-1] == {
                "jsonrpc": "2.0", "id": listen_id,
                "result": {"resultType": "complete", "_meta": {SUB_ID: listen_id}}}
        assert len(srv.transport.listen_index) == 0
        server.notify_tools_list_changed()  # nothing left to write to, nothing raised
        assert all(len(s.messages) == 3 for s in streams)
        late = await srv.modern("subscriptions/listen", {"notifications": {}})
        assert late.status == 503


async def test_close_stream_closes_one() -> None:
    server = full_server()
    async with running(server) as srv:
        a = await acked(srv, {"toolsListChanged": True}, "a")
        b = await acked(srv, {"toolsListChanged": True}, "b")
        assert await srv.transport.close_stream(stream_id(srv, "a"))
        await a.wait_closed()
        assert methods(a) == [ACK, None]
        assert a.messages[-1]["result"] == {"resultType": "complete", "_meta": {SUB_ID: "a"}}
        assert not await srv.transport.close_stream("no-such-stream")
        server.notify_tools_list_changed()
        await b.wait_messages(2)
        assert methods(b) == [ACK, TOOLS_CHANGED]
        assert [s.subscription_id for s in srv.transport.snapshot().streams] == ["b"]


# -- serve_subscriptions_listen=False -------------------------------------------------------------

async def test_serve_subscriptions_listen_false() -> None:
    async with running(example_server(), serve_subscriptions_listen=False) as srv:
        r = await srv.modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}},
                             request_id="no")
        assert r.status == 404
        assert listen_error(r)["code"] == -32601
        assert r.json["id"] == "no"
        assert len(srv.transport.listen_index) == 0
        expected = {"tools": {}, "resources": {}, "prompts": {}, "logging": {},
                    "completions": {},
                    "extensions": {"io.modelcontextprotocol/tasks": {},
                                   "io.modelcontextprotocol/skills": {"directoryRead": True},
                                   "io.modelcontextprotocol/ui": {}}}
        modern = await srv.modern("server/discover")
        assert modern.json["result"]["capabilities"] == expected
        legacy = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
        assert legacy.json["result"]["capabilities"] == expected
        # initialize keeps the real capabilities (legacy sessions get GET streams).
        init = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "c", "version": "1"}}})
        assert init.json["result"]["capabilities"]["resources"] == {"listChanged": True,
                                                                   "subscribe": True}


async def test_discover_keeps_the_flags_when_listen_is_served(srv: Running) -> None:
    caps = (await srv.modern("server/discover")).json["result"]["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"] == {"listChanged": True, "subscribe": True}


# -- slow consumers -------------------------------------------------------------------------------

async def open_stuck_listen(srv: Running, uris: list[str]) -> socket.socket:
    """A listen stream on a socket with a tiny receive buffer that is never read."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.setblocking(False)
    await asyncio.wait_for(loop.sock_connect(sock, ("127.0.0.1", srv.port)), TIMEOUT)
    body = json.dumps({"jsonrpc": "2.0", "id": "slow", "method": "subscriptions/listen",
                       "params": {"notifications": {"resourceSubscriptions": uris},
                                  "_meta": modern_meta()}}).encode()
    head = ("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: subscriptions/listen\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    await asyncio.wait_for(loop.sock_sendall(sock, head + body), TIMEOUT)
    return sock


async def test_slow_consumer_is_disconnected_and_others_keep_receiving(srv: Running) -> None:
    """Distinct changes pile up behind a peer that stopped reading: at max_stream_queue it
    is disconnected, and a healthy stream receives every notification meanwhile."""
    srv.transport.options.update({"max_stream_queue": 4, "stream_stall_timeout": None})
    uris = [f"test://big/{i}/" + "x" * 3000 for i in range(20)]
    healthy = await acked(srv, {"resourceSubscriptions": [*uris, "test://small"]}, "healthy")
    sock = await open_stuck_listen(srv, uris)
    try:
        await wait_until(lambda: len(srv.transport.listen_index) == 2)
        sent = 0
        # Lockstep: each round stays under the queue bound for a stream that keeps up.
        while srv.transport.refusals["max_stream_queue"] == 0 and sent < 2000:
            srv.server.notify_resources_updated(uris[sent % len(uris)])
            sent += 1
            await healthy.wait_for(lambda s, want=1 + sent: len(s.messages) >= want)  # type: ignore[misc]
        assert srv.transport.refusals["max_stream_queue"] == 1
        await wait_until(lambda: len(srv.transport.listen_index) == 1)
        assert [s.subscription_id for s in srv.transport.snapshot().streams] == ["healthy"]
        # The healthy stream got every notification addressed to it, in order, and still does.
        srv.server.notify_resources_updated("test://small")
        await healthy.wait_messages(1 + sent + 1)
        got = [m["params"]["uri"] for m in healthy.messages[1:]]
        assert got == [uris[i % len(uris)] for i in range(sent)] + ["test://small"]
        assert sent < 2000
    finally:
        sock.close()


async def test_a_stalled_consumer_is_disconnected_even_when_its_changes_coalesce(
        srv: Running) -> None:
    """Repeats of one change coalesce, so the queue never fills; the stall bound still
    frees the slot of a peer that takes no bytes for stream_stall_timeout."""
    srv.transport.options.update({"max_stream_queue": 4, "stream_stall_timeout": 0.3})
    big = "test://big/" + "x" * 60_000
    sock = await open_stuck_listen(srv, [big])
    try:
        await wait_until(lambda: len(srv.transport.listen_index) == 1)
        # Keep changing it, yielding so each write goes out, until the socket buffers are
        # full: the pending write then makes no progress and the stall bound fires.
        for _ in range(20_000):
            if not srv.transport.listen_index or srv.transport.refusals["stream_stall_timeout"]:
                break
            srv.server.notify_resources_updated(big)
            await asyncio.sleep(0)  # a yield to the loop, not a timed wait
        await wait_until(lambda: len(srv.transport.listen_index) == 0)
        assert srv.transport.refusals["stream_stall_timeout"] == 1
        assert srv.transport.refusals["max_stream_queue"] == 0
    finally:
        sock.close()
