"""Two server processes behind a real nginx that routes by ``hash $http_mcp_session_id``
(the configuration docs/deploy.md shows): every session works through the proxy, whichever
process the hash picks, and the nginx writes everything it needs into a temporary directory.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ServerFactory
from mcp_http import Running, rpc
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                  else None)

CONF = """
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    upstream mcp {{
        hash $http_mcp_session_id consistent;
        server 127.0.0.1:{a};
        server 127.0.0.1:{b};
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://mcp;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout 1h;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def nginx_in_front() -> Iterator[object]:
    if NGINX is None:
        pytest.skip("nginx is not installed (./dev test installs it)")
    workdir = Path(tempfile.mkdtemp(prefix="tmcp-nginx-"))
    procs: list[subprocess.Popen[bytes]] = []

    def start(a: int, b: int) -> int:
        assert NGINX is not None
        port = free_port()
        conf = workdir / "nginx.conf"
        conf.write_text(CONF.format(d=workdir, a=a, b=b, port=port))
        proc = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(workdir),
                                 "-e", str(workdir / "error.log")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return port
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    log = (workdir / "error.log").read_text() if \
                        (workdir / "error.log").exists() else ""
                    raise RuntimeError(f"nginx did not start: {log}") from None
                time.sleep(0.05)

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
