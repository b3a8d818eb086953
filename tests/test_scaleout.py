"""Scale-out: processes share notifications through a real Redis server.

Two real server processes (examples/conformance_server.py --redis-url) on their own ports,
one real redis-server on a free loopback port: a change made through one process reaches a
listen stream held by the other, and nothing is delivered twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from conftest import ServerFactory, free_port
from mcp_http import MODERN, Running, Stream, modern_meta

from tornado_mcp import Server
from tornado_mcp.scaleout import RedisBus

REDIS = shutil.which("redis-server")


@pytest.fixture
def redis_url(tmp_path: object) -> Iterator[str]:
    if REDIS is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (./dev test installs it)")
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def listen(port: int, notifications: dict[str, object]) -> Stream:
    return await Running.remote(port).listen(notifications)


async def call_tool(port: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments,
                                  "_meta": modern_meta()}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
            "Connection: close\r\n\r\n")
    writer.write(head.encode() + body)
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    result: dict[str, object] = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    return result


async def test_a_change_in_one_process_reaches_listen_streams_in_another(
        redis_url: str, server_factory: ServerFactory) -> None:
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


async def test_bus_delivers_to_other_servers_but_not_back(redis_url: str) -> None:
    delivered: dict[str, list[tuple[str, object]]] = {"one": [], "two": []}
    arrived = asyncio.Event()

    class Sink:
        def __init__(self, name: str) -> None:
            self.name = name

        def publish(self, method: str, params: object) -> None:
            delivered[self.name].append((method, params))
            if self.name == "two":
                arrived.set()

    one, two = Server("one"), Server("two")
    one.add_sink(Sink("one"))
    two.add_sink(Sink("two"))
    bus_one, bus_two = RedisBus(one, redis_url), RedisBus(two, redis_url)
    await bus_one.start()
    await bus_two.start()
    try:
        one.notify_resources_updated("file:///x")
        await asyncio.wait_for(arrived.wait(), 10)
        assert delivered["two"] == [("notifications/resources/updated", {"uri": "file:///x"})]
        assert delivered["one"] == [("notifications/resources/updated", {"uri": "file:///x"})]
        assert bus_one.sent == 1 and bus_two.received == 1 and bus_one.received == 0
    finally:
        await bus_one.close()
        await bus_two.close()
