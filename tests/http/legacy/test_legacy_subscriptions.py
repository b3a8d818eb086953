"""The legacy era's ``resources/subscribe`` handlers and GET-stream delivery of resource updates."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import (
    Running,
    acked,
    full_server,
    legacy_call,
    running,
    wait_until,
)

from tornado_mcp import Context, Server

pytestmark = pytest.mark.timeout(60)

TOOLS_CHANGED = "notifications/tools/list_changed"


UPDATED = "notifications/resources/updated"


WATCHED = "test://watched-resource"


# -- legacy era: resources/subscribe handlers and GET streams -------------------------------------

class SubscribeServer:
    def __init__(self) -> None:
        self.server = Server("subs")
        self.calls: list[tuple[str, str, str | None]] = []

        @self.server.resource("test://a")
        def a() -> str:
            return "a"

        @self.server.on_subscribe
        def on_sub(uri: str, ctx: Context) -> dict[str, Any]:
            self.calls.append(("subscribe", uri, ctx.session.id if ctx.session else None))
            return {"_meta": {"tracked": uri}, "dropped": True}

        def on_unsub(uri: str) -> None:
            self.calls.append(("unsubscribe", uri, None))

        self.server.on_unsubscribe(on_unsub)  # plain call, not a decorator


async def test_subscribe_handlers_decorator_and_plain_call() -> None:
    s = SubscribeServer()
    async with running(s.server) as srv:
        init = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": "c", "version": "1"}}})
        assert init.json["result"]["capabilities"]["resources"]["subscribe"] is True
        sid = await srv.initialize()
        sub = await legacy_call(srv, sid, "resources/subscribe", {"uri": "test://a"})
        assert sub["result"] == {"_meta": {"tracked": "test://a"}}
        unsub = await legacy_call(srv, sid, "resources/unsubscribe", {"uri": "test://a"}, 3)
        assert unsub["result"] == {}
        assert s.calls == [("subscribe", "test://a", sid), ("unsubscribe", "test://a", None)]
        for bad in ({}, {"uri": 5}, {"uri": None}):
            err = await legacy_call(srv, sid, "resources/subscribe", bad, 4)
            assert err["error"]["code"] == -32602
            err = await legacy_call(srv, sid, "resources/unsubscribe", bad, 5)
            assert err["error"]["code"] == -32602
        assert len(s.calls) == 2  # the handlers were not called for bad params
        # Removed at 2026-07-28.
        modern = await srv.modern("resources/subscribe", {"uri": "test://a"})
        assert modern.status == 404
        assert len(s.calls) == 2


async def test_no_subscribe_handler_no_capability() -> None:
    server = Server("nosub")

    @server.resource("test://a")
    def a() -> str:
        return "a"

    async with running(server) as srv:
        sid = await srv.initialize()
        caps = (await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
                ).json["result"]["capabilities"]
        assert "subscribe" not in caps["resources"]
        err = await legacy_call(srv, sid, "resources/subscribe", {"uri": "test://a"})
        assert err["error"]["code"] == -32601


async def test_session_update_reaches_its_get_stream_only(srv: Running) -> None:
    subscribed = await srv.initialize(client_name="subscribed")
    bystander = await srv.initialize(client_name="bystander")
    toucher = await srv.initialize(client_name="toucher")
    sub = await legacy_call(srv, subscribed, "resources/subscribe", {"uri": WATCHED})
    assert sub["result"] == {}
    sub_get = await srv.get_stream(subscribed)
    by_get = await srv.get_stream(bystander)
    await wait_until(lambda: sum(s.has_get_stream for s in
                                 srv.transport.snapshot().sessions) == 2)
    touched = await legacy_call(srv, toucher, "tools/call",
                                {"name": "touch_resource", "arguments": {"uri": WATCHED}})
    assert touched["result"]["content"][0]["text"] == f"Touched {WATCHED}"
    await sub_get.wait_messages(1)
    assert sub_get.messages[0] == {"jsonrpc": "2.0", "method": UPDATED,
                                   "params": {"uri": WATCHED}}
    # A server-wide change reaches every GET stream: a barrier for the bystander.
    srv.server.notify_tools_list_changed()
    await by_get.wait_messages(1)
    await sub_get.wait_messages(2)
    assert [m["method"] for m in by_get.messages] == [TOOLS_CHANGED]
    assert [m["method"] for m in sub_get.messages] == [UPDATED, TOOLS_CHANGED]
    sub_get.close()
    by_get.close()


async def test_request_context_update_uses_the_session_get_stream(srv: Running) -> None:
    sid = await srv.initialize()
    await legacy_call(srv, sid, "resources/subscribe", {"uri": WATCHED})
    # Without a GET stream the update rides this request's own response.
    r = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                        "params": {"name": "touch_resource", "arguments": {"uri": WATCHED}}},
                       session=sid)
    assert [m.get("method") for m in r.messages] == [UPDATED, None]
    # With one, it goes there and not on the response.
    get = await srv.get_stream(sid)
    await wait_until(lambda: srv.transport.snapshot().sessions[0].has_get_stream)
    r = await srv.post({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "touch_resource", "arguments": {"uri": WATCHED}}},
                       session=sid)
    assert [m.get("method") for m in r.messages] == [None]
    await get.wait_messages(1)
    assert get.messages == [{"jsonrpc": "2.0", "method": UPDATED, "params": {"uri": WATCHED}}]
    get.close()


async def test_a_burst_of_the_same_change_coalesces_while_a_frame_waits() -> None:
    """Duplicate change signals still queued behind a pending write carry nothing new: a
    stream gets at least one frame per distinct change, and the queue does not grow with
    the burst, so a reading consumer is never mistaken for a stuck one."""
    server = full_server()
    async with running(server, max_stream_queue=5) as srv:
        stream = await acked(srv, {"toolsListChanged": True,
                                   "resourceSubscriptions": ["test://a", "test://b"]}, "c")
        channel = next(iter(srv.transport.listen_index)).channel
        for _ in range(1000):  # one loop tick: every frame after the first must wait
            server.notify_tools_list_changed()
            server.notify_resources_updated("test://a")
            server.notify_resources_updated("test://b")
        assert channel.queue_depth <= 3
        assert channel.coalesced >= 2990
        server.notify_prompts_list_changed()  # not asked for: never delivered
        server.notify_resources_updated("test://c")  # not subscribed: never delivered
        marker = "test://b"

        def got_all(s: Any) -> bool:
            kinds = {(m["method"], m["params"].get("uri")) for m in s.messages[1:]}
            return kinds >= {(TOOLS_CHANGED, None), (UPDATED, "test://a"), (UPDATED, marker)}

        await stream.wait_for(got_all)
        assert srv.transport.refusals["max_stream_queue"] == 0
        assert len(srv.transport.listen_index) == 1
        assert len(stream.messages) <= 1 + 2 * 3  # the first frames, then one per change
