"""Scale-out: processes share notifications through a real Redis server.

Two real server processes (examples/conformance_server.py --redis-url, which joins them in
a :class:`tornado_mcp.cluster.Cluster`) on their own ports, one real redis-server on a
Unix socket: a change made through one process reaches a listen stream held by the other,
and nothing is delivered twice.  The other modules here cover the rest of the cluster.
"""

from __future__ import annotations

from conftest import ServerFactory
from mcp_http import Running, Stream, modern_body, modern_header_lines, raw_exchange
from redis_proc import redis_url  # noqa: F401 - the real redis-server fixture


async def listen(port: int, notifications: dict[str, object]) -> Stream:
    return await Running.remote(port).listen(notifications)


async def call_tool(port: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    r = await raw_exchange(port, "POST", modern_body("tools/call", {"name": name,
                                                                    "arguments": arguments}),
                           modern_header_lines("tools/call", name))
    result: dict[str, object] = r.json
    return result


async def test_a_change_in_one_process_reaches_listen_streams_in_another(
        redis_url: str, server_factory: ServerFactory) -> None:  # noqa: F811
    argv = ["examples/conformance_server.py", "--no-admin", "--redis-url", redis_url]
    a, b = server_factory(argv), server_factory(argv)
    stream = await listen(a.port, {"toolsListChanged": True,
                                   "resourceSubscriptions": ["test://r/7"]})
    try:
        await stream.wait_messages(1)
        reply = await call_tool(b.port, "touch_resource", {"uri": "test://r/7"})
        assert "result" in reply
        await stream.wait_messages(2)
        update = stream.messages[1]
        assert update["method"] == "notifications/resources/updated"
        assert update["params"]["uri"] == "test://r/7"
        assert update["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": "listen-1"}
        await call_tool(b.port, "test_trigger_tool_change", {})
        await stream.wait_messages(3)
        assert stream.messages[2]["method"] == "notifications/tools/list_changed"
        # A change made in A itself is delivered once, not echoed back through Redis.
        await call_tool(a.port, "touch_resource", {"uri": "test://r/7"})
        await stream.wait_messages(4)
        await call_tool(a.port, "test_trigger_tool_change", {})
        await stream.wait_messages(5)
        kinds = [m["method"] for m in stream.messages[3:]]
        assert kinds == ["notifications/resources/updated", "notifications/tools/list_changed"]
    finally:
        stream.close()
