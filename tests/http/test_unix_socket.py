"""``--unix-socket PATH``: the demo and the example servers serving HTTP on a Unix domain
socket, in a real subprocess, reached with httpx's UDS transport and the official SDK
client; the socket's mode, its removal on shutdown, and the paths refused.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import httpx2
import pytest
from conftest import POLL_INTERVAL_S, REPO_ROOT, START_TIMEOUT_S, ServerProc
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_http import LEGACY, init_msg, rpc

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
STEP = 10.0


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory (a socket path is at most 107 bytes) removed after the test."""
    path = Path(tempfile.mkdtemp(prefix="mcp-uds-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def endpoint_line(path: Path, mcp_path: str = "/mcp") -> str:
    return f"MCP endpoint: http+unix://{quote(str(path), safe='')}{mcp_path}"


@contextlib.contextmanager
def unix_server(argv: list[str], path: Path) -> Iterator[ServerProc]:
    """``python *argv --unix-socket path``, once it has printed its endpoint line."""
    proc = ServerProc([sys.executable, *argv, "--unix-socket", str(path)],
                      {**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while endpoint_line(path) not in proc.stdout:
            assert proc.proc.poll() is None, proc.diagnostics()
            assert time.monotonic() < deadline, proc.diagnostics()
            time.sleep(POLL_INTERVAL_S)
        yield proc
    finally:
        proc.stop()


def uds_client(path: Path) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=str(path)),
                             base_url="http://localhost", headers=HEADERS, timeout=STEP)


def sse_result(resp: httpx.Response) -> dict[str, Any]:
    import json
    if resp.headers["content-type"].startswith("application/json"):
        message: dict[str, Any] = resp.json()
        return message
    data = [line[5:].strip() for line in resp.text.splitlines() if line.startswith("data:")]
    parsed: dict[str, Any] = json.loads(data[-1])
    return parsed


def stopped(proc: ServerProc, sig: signal.Signals) -> int | None:
    proc.proc.send_signal(sig)
    try:
        return proc.proc.wait(timeout=STEP)
    except subprocess.TimeoutExpired:
        return None


async def test_the_example_server_answers_on_the_socket_and_removes_it_on_sigterm(
        sock_dir: Path) -> None:
    path = sock_dir / "mcp.sock"
    with unix_server(["examples/conformance_server.py", "--no-admin"], path) as proc:
        mode = os.lstat(path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        async with uds_client(path) as http:
            init = await http.post("/mcp", json=init_msg(request_id=1))
            assert init.status_code == 200, init.text
            assert sse_result(init)["result"]["serverInfo"]
            sid = init.headers["mcp-session-id"]
            session = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
            await http.post("/mcp", json={"jsonrpc": "2.0",
                                          "method": "notifications/initialized"},
                            headers=session)
            call = await http.post("/mcp", headers=session, json=rpc(
                "tools/call", {"name": "test_simple_text", "arguments": {}}, request_id=2))
            assert call.status_code == 200, call.text
            assert sse_result(call)["result"]["content"][0]["text"] == \
                "This is a simple text response for testing."
        assert stopped(proc, signal.SIGTERM) == 0, proc.diagnostics()
        assert not path.exists()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_reaches_the_demo_over_the_socket(
        sock_dir: Path, mode: str) -> None:
    path = sock_dir / "demo.sock"
    with unix_server(["-m", "tornado_mcp", "demo", "--admin-token", "t0ken"], path) as proc:
        assert f"dashboard: http+unix://{quote(str(path), safe='')}/admin/" in proc.stdout
        http = httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(path)),
                                  timeout=STEP)
        with anyio.fail_after(3 * STEP):
            async with http, Client(streamable_http_client("http://localhost/mcp",
                                                           http_client=http),
                                    mode=mode, read_timeout_seconds=STEP) as client:
                result = await client.call_tool("echo", {"text": "over a socket"})
                assert not result.is_error, result
                assert "over a socket" in "".join(getattr(c, "text", "")
                                                  for c in result.content)
        assert stopped(proc, signal.SIGINT) == 0, proc.diagnostics()
        assert not path.exists()
        assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(("script", "home_text", "mcp_status"), [
    ("examples/embed_in_app.py", "also speaks MCP", 200),
    ("examples/host_auth_app.py", "log in", 401),  # MCP behind the app's own login
])
async def test_the_embedding_examples_serve_their_app_on_the_socket(
        sock_dir: Path, script: str, home_text: str, mcp_status: int) -> None:
    path = sock_dir / "app.sock"
    with unix_server([script], path) as proc:
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600
        async with uds_client(path) as http:
            home = await http.get("/")
            assert home.status_code == 200 and home_text in home.text
            mcp = await http.post("/mcp", json=init_msg(request_id=1))
            assert mcp.status_code == mcp_status, mcp.text
        assert stopped(proc, signal.SIGTERM) == 0, proc.diagnostics()
        assert not path.exists()


def run_refused(argv: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv, "--unix-socket", str(path)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=30,
                          check=False)


def test_a_path_that_is_not_a_socket_is_refused(sock_dir: Path) -> None:
    path = sock_dir / "notes.txt"
    path.write_text("keep me")
    done = run_refused(["examples/conformance_server.py"], path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        f"error: --unix-socket {path} exists and is not a socket")
    assert "MCP endpoint" not in done.stdout
    assert path.read_text() == "keep me"
    for argv in (["-m", "tornado_mcp", "demo"], ["examples/embed_in_app.py"],
                 ["examples/host_auth_app.py"]):
        other = run_refused(argv, path)
        assert other.returncode == 2 and "exists and is not a socket" in other.stderr, argv
    (sock_dir / "dir").mkdir()
    assert run_refused(["-m", "tornado_mcp", "demo"], sock_dir / "dir").returncode == 2
    assert path.read_text() == "keep me"


def test_a_path_too_long_for_a_socket_is_refused_clearly(sock_dir: Path) -> None:
    path = sock_dir / ("x" * 120)  # sun_path holds 107 bytes on Linux
    done = run_refused(["examples/conformance_server.py"], path)
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"error: --unix-socket {path}: ")
    assert "Traceback" not in done.stderr and not path.exists()


def test_a_socket_a_live_server_listens_on_is_refused(sock_dir: Path) -> None:
    path = sock_dir / "busy.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        live.bind(str(path))
        live.listen(1)
        done = run_refused(["examples/conformance_server.py"], path)
        assert done.returncode == 2
        assert f"error: --unix-socket {path}: another server is listening on it" in done.stderr
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        live.close()


async def test_a_stale_socket_left_by_a_dead_process_is_replaced(sock_dir: Path) -> None:
    path = sock_dir / "stale.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()  # the file stays, nobody listens: what a killed server leaves behind
    os.chmod(path, 0o666)
    with unix_server(["examples/conformance_server.py", "--no-admin"], path):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600  # a new socket, ours
        async with uds_client(path) as http:
            assert (await http.post("/mcp", json=init_msg(request_id=1))).status_code == 200


def test_oauth_on_a_unix_socket_needs_an_explicit_audience(sock_dir: Path) -> None:
    path = sock_dir / "oauth.sock"
    done = run_refused(["examples/conformance_server.py", "--oauth-issuer",
                        "http://127.0.0.1:9"], path)
    assert done.returncode == 2, done.stderr
    assert "error: --oauth-issuer with --unix-socket needs --oauth-audience" in done.stderr
    assert "MCP endpoint" not in done.stdout and not path.exists()
