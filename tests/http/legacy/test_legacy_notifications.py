"""Where legacy-era notifications go: progress and logs on the request's own stream,
broadcasts once to every GET stream, session-scoped updates to that session's GET stream.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import (
    TIMEOUT,
    example_server,
    final,
    post_stream,
    probe_server,
    rpc,
    running,
)

# -- notification routing -------------------------------------------------------------------------

async def test_progress_rides_the_post_stream_before_the_result_never_the_get() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_progress",
                                              "_meta": {"progressToken": "p-1"}}), session=sid)
        assert r.status == 200 and r.content_type.startswith("text/event-stream")
        methods = [m.get("method") for m in r.messages]
        assert methods == ["notifications/progress"] * 3 + [None]
        assert [m["params"]["progress"] for m in r.messages[:3]] == [0, 50, 100]
        assert all(m["params"]["progressToken"] == "p-1" for m in r.messages[:3])
        assert r.messages[-1]["result"]["content"][0]["text"] == "p-1"
        # Barrier: a broadcast after the call; the GET stream must hold only that.
        srv.server.notify_tools_list_changed()
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/tools/list_changed"]
        g.close()


async def test_no_progress_without_a_progress_token() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_progress"}), session=sid)
        assert len(r.messages) == 1 and "result" in r.messages[0]


@pytest.mark.parametrize(("level", "expected"), [(None, 3), ("debug", 3), ("info", 3),
                                                 ("warning", 0), ("emergency", 0)])
async def test_log_messages_honour_set_level(level: str | None, expected: int) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        if level is not None:
            s = await srv.post(rpc("logging/setLevel", {"level": level}, "lvl"), session=sid)
            assert final(s)["result"] == {}
        r = await srv.post(rpc("tools/call", {"name": "test_tool_with_logging"}), session=sid)
        logs = [m for m in r.messages if m.get("method") == "notifications/message"]
        assert len(logs) == expected
        assert all(m["params"]["level"] == "info" for m in logs)
        assert "result" in r.messages[-1] and len(r.messages) == expected + 1
        srv.server.notify_prompts_list_changed()
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/prompts/list_changed"]
        g.close()


async def test_set_level_with_a_bad_level_is_invalid_params() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("logging/setLevel", {"level": "loud"}), session=sid)
        assert final(r)["error"]["code"] == -32602


async def test_broadcast_goes_once_to_every_get_stream_never_to_a_post_stream() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        a, b = await srv.initialize(), await srv.initialize()
        ga, gb = await srv.get_stream(a), await srv.get_stream(b)
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "blk"), a)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        srv.server.notify_tools_list_changed()
        await ga.wait_messages(1)
        await gb.wait_messages(1)
        probe.gate.set()
        await p.wait_closed()
        assert [m.get("id") for m in p.messages] == ["blk"]  # only the result
        srv.server.notify_resources_list_changed()  # barrier
        await ga.wait_messages(2)
        await gb.wait_messages(2)
        expected = ["notifications/tools/list_changed", "notifications/resources/list_changed"]
        assert [m["method"] for m in ga.messages] == expected
        assert [m["method"] for m in gb.messages] == expected
        ga.close()
        gb.close()


async def test_session_scoped_resources_updated_goes_to_the_get_stream_once() -> None:
    async with running(example_server()) as srv:
        a = await srv.initialize()
        b = await srv.initialize()
        ga = await srv.get_stream(a)
        uri = "test://watched-resource"
        sub = await srv.post(rpc("resources/subscribe", {"uri": uri}), session=a)
        assert final(sub)["result"] == {}
        # Another session touches it: a's GET stream hears; b's POST stream does not.
        t = await srv.post(rpc("tools/call", {"name": "touch_resource",
                                              "arguments": {"uri": uri}}), session=b)
        assert [m.get("id") for m in t.messages] == [1]
        await ga.wait_messages(1)
        # a touches it itself: still its GET stream, not the POST's own stream.
        t2 = await srv.post(rpc("tools/call", {"name": "touch_resource",
                                               "arguments": {"uri": uri}}, 2), session=a)
        assert [m.get("id") for m in t2.messages] == [2]
        await ga.wait_messages(2)
        srv.server.notify_tools_list_changed()  # barrier
        await ga.wait_messages(3)
        assert [m["method"] for m in ga.messages] == ["notifications/resources/updated"] * 2 \
            + ["notifications/tools/list_changed"]
        assert all(m["params"] == {"uri": uri} for m in ga.messages[:2])
        ga.close()


async def test_session_notify_from_another_thread_reaches_the_get_stream() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        session = srv.transport.sessions.get(sid)
        assert session is not None
        await asyncio.to_thread(session.notify_resources_updated, "test://x")
        await g.wait_messages(1)
        assert g.messages == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                               "params": {"uri": "test://x"}}]
        g.close()
