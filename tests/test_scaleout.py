"""Scale-out: processes share notifications through a real Redis server.

Two real server processes (examples/conformance_server.py --redis-url, which joins them in
a :class:`tornado_mcp.cluster.Cluster`) on their own ports, one real redis-server on a
Unix socket: a change made through one process reaches a listen stream held by the other,
and nothing is delivered twice.  tests/cluster/ covers the rest of the cluster.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest
from conftest import ServerFactory
from mcp_http import Running, Stream, modern_body, modern_header_lines, raw_exchange

REDIS = shutil.which("redis-server")


@pytest.fixture
def redis_url() -> Iterator[str]:
    """A real redis-server on a Unix socket of its own (no TCP port to choose or race for)."""
    if REDIS is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (./dev test installs it)")
        pytest.skip("redis-server is not installed")
    workdir = tempfile.mkdtemp(prefix="tmcp-redis-")  # short: socket paths are limited
    path = os.path.join(workdir, "redis.sock")
    proc = subprocess.Popen([REDIS, "--port", "0", "--unixsocket", path, "--save", "",
                             "--appendonly", "no", "--dir", workdir],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.settimeout(0.2)
                    probe.connect(path)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"unix://{path}?db=0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


async def listen(port: int, notifications: dict[str, object]) -> Stream:
    return await Running.remote(port).listen(notifications)


async def call_tool(port: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    r = await raw_exchange(port, "POST", modern_body("tools/call", {"name": name,
                                                                    "arguments": arguments}),
                           modern_header_lines("tools/call", name))
    result: dict[str, object] = r.json
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
