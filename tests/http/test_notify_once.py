"""One call tells every subscriber once: ``server.notify_resources_updated(uri)`` reaches
the listen streams naming ``uri`` and, with ``server.track_subscriptions()``, every legacy
session subscribed to it; without tracking, the application's own loop over its watchers
plus that one call still reaches each audience exactly once.  Subscriptions are bounded,
counted in what a session retains, dropped with it, and refused where no session exists.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import Running, Stream, acked, rpc, running

from tornado_mcp import Context, Server, Session

UPDATED = "notifications/resources/updated"
BARRIER = "notifications/tools/list_changed"


def watched_server(track: bool) -> Server:
    server = Server("watched")
    if track:
        server.track_subscriptions(max_per_session=3, max_uri_bytes=64)

    @server.resource("test://r/{n}")
    def r(n: str) -> str:
        return n

    @server.tool()
    async def touch(uri: str, ctx: Context) -> str:
        ctx.notify_resources_updated(uri)
        return "touched"

    @server.tool()
    async def nothing() -> str:
        return "nothing"

    return server


async def updates_before_barrier(srv: Running, streams: list[Stream]) -> list[list[str]]:
    """Send a list change every stream hears, then the URIs of the updates each got first."""
    srv.server.notify_tools_list_changed()
    out = []
    for stream in streams:
        await stream.wait_for(lambda s: any(m.get("method") == BARRIER for m in s.messages))
        seen: list[str] = []
        for m in stream.messages:
            if m.get("method") == BARRIER:
                break
            if m.get("method") == UPDATED:
                seen.append(m["params"]["uri"])
        out.append(seen)
    return out


async def subscribe(srv: Running, session: str, uri: str, request_id: Any = 1) -> Any:
    r = await srv.post(rpc("resources/subscribe", {"uri": uri}, request_id), session)
    assert r.status == 200
    return r.messages[-1] if r.messages else r.json


async def test_one_call_reaches_every_tracked_subscriber_and_listener_once() -> None:
    server = watched_server(track=True)
    async with running(server) as srv:
        sessions = [await srv.initialize() for _ in range(3)]
        gets = [await srv.get_stream(s) for s in sessions]
        await subscribe(srv, sessions[0], "test://r/1")
        await subscribe(srv, sessions[1], "test://r/1")
        await subscribe(srv, sessions[1], "test://r/1", 2)  # again: still one subscription
        await subscribe(srv, sessions[2], "test://r/2")
        listens = [await acked(srv, {"resourceSubscriptions": [uri], "toolsListChanged": True},
                               f"l{i}")
                   for i, uri in enumerate(["test://r/1", "test://r/1", "test://r/2"])]
        server.notify_resources_updated("test://r/1")
        got = await updates_before_barrier(srv, [*gets, *listens])
        assert got == [["test://r/1"], ["test://r/1"], [], ["test://r/1"], ["test://r/1"], []]


async def test_a_handlers_update_reaches_its_subscribed_caller_once() -> None:
    server = watched_server(track=True)
    async with running(server) as srv:
        a, b = await srv.initialize(), await srv.initialize()
        get_a, get_b = await srv.get_stream(a), await srv.get_stream(b)
        await subscribe(srv, a, "test://r/1")
        await subscribe(srv, b, "test://r/1")
        listen = await acked(srv, {"resourceSubscriptions": ["test://r/1"],
                                   "toolsListChanged": True})
        r = await srv.post(rpc("tools/call", {"name": "touch",
                                              "arguments": {"uri": "test://r/1"}}, 5), a)
        assert r.status == 200
        got = await updates_before_barrier(srv, [get_a, get_b, listen])
        assert got == [["test://r/1"], ["test://r/1"], ["test://r/1"]]


async def test_without_tracking_the_apps_loop_and_one_call_reach_each_once() -> None:
    server = watched_server(track=False)
    watchers: dict[str, list[Session]] = {}

    @server.on_subscribe
    def on_subscribe(uri: str, ctx: Context) -> None:
        assert ctx.session is not None
        watchers.setdefault(uri, []).append(ctx.session)

    async with running(server) as srv:
        sessions = [await srv.initialize() for _ in range(3)]
        gets = [await srv.get_stream(s) for s in sessions]
        for s in sessions:
            await subscribe(srv, s, "test://r/1")
        listen = await acked(srv, {"resourceSubscriptions": ["test://r/1"],
                                   "toolsListChanged": True})
        for session in watchers["test://r/1"]:  # docs/subscriptions.md's loop
            session.notify_resources_updated("test://r/1")
        server.notify_resources_updated("test://r/1")
        got = await updates_before_barrier(srv, [*gets, listen])
        assert got == [["test://r/1"]] * 4


async def test_unsubscribing_and_ending_a_session_stop_its_updates() -> None:
    server = watched_server(track=True)
    tracker = server.subscriptions
    assert tracker is not None
    async with running(server) as srv:
        a, b = await srv.initialize(), await srv.initialize()
        get_a = await srv.get_stream(a)
        await subscribe(srv, a, "test://r/1")
        await subscribe(srv, b, "test://r/1")
        r = await srv.post(rpc("resources/unsubscribe", {"uri": "test://r/1"}, 3), a)
        assert r.status == 200
        end = await srv.request("DELETE", headers={"Mcp-Session-Id": b,
                                                   "MCP-Protocol-Version": "2025-11-25"})
        assert end.status == 200
        assert len(tracker) == 0  # nobody subscribed any more
        server.notify_resources_updated("test://r/1")
        assert await updates_before_barrier(srv, [get_a]) == [[]]


async def test_subscriptions_are_bounded_and_counted_per_session() -> None:
    server = watched_server(track=True)
    async with running(server) as srv:
        session = await srv.initialize()
        before = srv.transport.snapshot().sessions[0]
        for i in range(3):  # exactly at max_per_session
            assert "error" not in await subscribe(srv, session, f"test://r/{i}", i)
        after = srv.transport.snapshot().sessions[0]
        assert after.retained_bytes == before.retained_bytes + 3 * len("test://r/0")
        assert after.retained_values == before.retained_values + 3
        over = await subscribe(srv, session, "test://r/9", 9)
        assert over["error"]["code"] == -32602
        assert over["error"]["data"] == {"limit": "max_per_session", "value": 3}
        other = await srv.initialize()
        at = "test://r/" + "x" * (64 - len("test://r/"))  # exactly max_uri_bytes
        assert "error" not in await subscribe(srv, other, at, 1)
        too_long = await subscribe(srv, other, at + "x", 2)
        assert too_long["error"]["data"] == {"limit": "max_uri_bytes", "value": 64}
        assert srv.server.subscriptions is not None
        assert len(srv.server.subscriptions) == 4


async def test_tracking_advertises_subscribe_and_honours_listen_uris() -> None:
    server = watched_server(track=True)
    async with running(server) as srv:
        r = await srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        assert r.json["result"]["capabilities"]["resources"]["subscribe"] is True
        listen = await acked(srv, {"resourceSubscriptions": ["test://r/1"]})
        assert listen.messages[0]["params"]["notifications"] == {
            "resourceSubscriptions": ["test://r/1"]}


async def test_subscribe_without_a_handler_or_tracking_names_what_to_do() -> None:
    async with running(watched_server(track=False)) as srv:
        session = await srv.initialize()
        r = await subscribe(srv, session, "test://r/1")
        assert r["error"]["code"] == -32601
        assert "track_subscriptions()" in r["error"]["message"]


@pytest.mark.parametrize("track", [False, True])
async def test_stateless_mode_refuses_subscribe(track: bool) -> None:
    server = watched_server(track=track)

    @server.on_subscribe
    def on_subscribe(uri: str, ctx: Context) -> None:
        raise AssertionError("never called without a session")

    async with running(server, stateless=True) as srv:
        r = await srv.post(rpc("resources/subscribe", {"uri": "test://r/1"}, 1))
        body = r.messages[-1] if r.messages else r.json
        assert body["error"]["code"] == -32601
        assert "stateless mode" in body["error"]["message"]
