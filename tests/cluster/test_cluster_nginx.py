"""Two server processes behind a real nginx that routes by ``hash $http_mcp_session_id``
(the configuration docs/deploy.md shows, :mod:`nginx_proc`): every session works through
the proxy, whichever process the hash picks, and the nginx writes everything it needs into
a temporary directory.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ServerFactory
from mcp_http import Running, rpc
from nginx_proc import NGINX, start_nginx
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture


@pytest.fixture
def nginx_in_front() -> Iterator[object]:
    if NGINX is None:
        pytest.skip("nginx is not installed (./dev test installs it)")
    workdir = Path(tempfile.mkdtemp(prefix="tmcp-nginx-"))
    procs: list[subprocess.Popen[bytes]] = []

    def start(a: int, b: int) -> int:
        proc, port = start_nginx([a, b], workdir)
        procs.append(proc)
        return port

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


async def test_sessions_work_through_nginx_hashing_on_the_session_id(
        redis: RedisProc, server_factory: ServerFactory, nginx_in_front: object) -> None:
    argv = ["examples/conformance_server.py", "--no-admin", "--redis-url", redis.url]
    a, b = server_factory(argv), server_factory(argv)
    port = nginx_in_front(a.port, b.port)  # type: ignore[operator]
    proxy = Running.remote(port)
    owners = set()
    for n in range(6):
        sid = await proxy.initialize(client_name=f"client-{n}")
        owners.add(sid.split(".")[0])
        r = await proxy.post(rpc("tools/call", {"name": "echo", "arguments": {"text": str(n)}}),
                             session=sid)
        assert r.status == 200, r.body
        assert r.messages[-1]["result"]["content"][0]["text"] == str(n)
        stream = await proxy.get_stream(sid)
        try:
            r = await Running.remote(a.port).modern("tools/call",
                                                    {"name": "test_trigger_tool_change"})
            assert r.status == 200
            await asyncio.wait_for(stream.wait_messages(1), 10)
            assert stream.messages[0]["method"] == "notifications/tools/list_changed"
        finally:
            stream.close()
        assert (await proxy.delete(sid)).status == 200
        gone = await proxy.post(rpc("ping"), session=sid)
        assert gone.status == 404
    assert len(owners) == 2  # nginx spread the initializes over both processes
