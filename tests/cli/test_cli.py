"""The command-line contracts: `python -m tornado_mcp demo` and the example servers.

Their flags are relied on by outside checks, so each is exercised in a real subprocess
talking real HTTP.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, ServerFactory, reported_endpoint
from mcp_http import init_msg, rpc

from tornado_mcp.options import OPTION_SPECS

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(url: str, message: dict[str, Any], headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], bytes]:
    """A blocking POST (these servers run in another process; the test has no loop)."""
    req = urllib.request.Request(url, data=json.dumps(message).encode(),
                                 headers={**HEADERS, **(headers or {})}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def initialize(url: str) -> tuple[int, dict[str, str], bytes]:
    return post(url, init_msg(request_id=1))


def test_demo_serves_mcp_and_prints_the_url(server_factory: ServerFactory) -> None:
    srv = server_factory(["-m", "tornado_mcp", "demo", "--admin-token", "secret-token"])
    status, headers, body = initialize(srv.url)
    assert status == 200, body
    sid = headers["Mcp-Session-Id"]
    status, _, body = post(srv.url, rpc("tools/list", request_id=2),
                           {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    names = {t["name"] for t in json.loads(body.split(b"data: ", 1)[1])["result"]["tools"]}
    assert {"now", "stats", "add_note", "echo"} <= names
    srv.stop()
    assert f"http://127.0.0.1:{srv.port}/mcp" in srv.stdout
    assert f"http://127.0.0.1:{srv.port}/admin/" in srv.stdout


def test_option_flags_apply(server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/conformance_server.py", "--max-sessions", "1",
                          "--session-idle-timeout", "none", "--no-admin"])
    assert initialize(srv.url)[0] == 200
    status, headers, body = initialize(srv.url)
    assert status == 503
    assert json.loads(body)["error"]["code"] == -32603
    assert "Mcp-Session-Id" not in headers


def test_stateless_flag(server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/conformance_server.py", "--stateless", "true",
                          "--no-admin"])
    status, headers, _ = initialize(srv.url)
    assert status == 200 and "Mcp-Session-Id" not in headers


def test_every_option_has_a_flag() -> None:
    out = subprocess.run([sys.executable, "examples/conformance_server.py", "--help"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=30, check=True)
    demo = subprocess.run([sys.executable, "-m", "tornado_mcp", "demo", "--help"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=30,
                          check=True)
    for spec in OPTION_SPECS:
        assert spec.flag in out.stdout, spec.flag
        assert spec.flag in demo.stdout, spec.flag
    assert "--admin-token" in out.stdout and "--admin-token" in demo.stdout


def test_bad_flag_value_is_a_clear_error() -> None:
    proc = subprocess.run([sys.executable, "examples/conformance_server.py", "--port", "0",
                           "--max-sessions", "zero"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode == 2
    assert "--max-sessions" in proc.stderr and "not a number" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_graceful_shutdown_sends_listen_streams_their_result(
        server_factory: ServerFactory, sig: signal.Signals) -> None:
    srv = server_factory(["examples/conformance_server.py", "--no-admin"])
    msg = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen",
           "params": {"notifications": {"toolsListChanged": True},
                      "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                "io.modelcontextprotocol/clientCapabilities": {}}}}
    req = urllib.request.Request(srv.url, data=json.dumps(msg).encode(), method="POST",
                                 headers={**HEADERS, "MCP-Protocol-Version": "2026-07-28",
                                          "Mcp-Method": "subscriptions/listen"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        first = resp.readline() + resp.readline()
        assert b"notifications/subscriptions/acknowledged" in first
        srv.proc.send_signal(sig)
        rest = resp.read()  # ends when the server finishes the response
    final = json.loads(rest.split(b"data: ")[-1])
    assert final == {"jsonrpc": "2.0", "id": "L", "result": {
        "resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "L"}}}
    assert srv.proc.wait(timeout=10) == 0


def test_embed_example_keeps_its_own_routes(server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/embed_in_app.py"])
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.port}/api/greeting?lang=fr",
                                timeout=10) as resp:
        assert json.loads(resp.read()) == {"greeting": "Bonjour"}
    assert initialize(srv.url)[0] == 200


def test_docs_list_every_option() -> None:
    text = (Path(REPO_ROOT) / "docs" / "options.md").read_text()
    for spec in OPTION_SPECS:
        assert f"`{spec.name}`" in text and f"`{spec.flag}`" in text, spec.name


def test_uvloop_flag_serves_on_uvloop(server_factory: ServerFactory) -> None:
    pytest.importorskip("uvloop")
    srv = server_factory(["examples/conformance_server.py", "--no-admin", "--uvloop"])
    status, headers, _ = initialize(srv.url)
    assert status == 200 and headers["Mcp-Session-Id"]
    assert srv.stop() == 0


@pytest.mark.parametrize("argv", [
    ["examples/conformance_server.py", "--no-admin"],
    ["examples/embed_in_app.py"],
    ["-m", "tornado_mcp", "demo", "--admin-token", "secret-token"],
], ids=["conformance-server", "embed-example", "demo"])
def test_port_0_binds_an_ephemeral_port_and_prints_it(argv: list[str]) -> None:
    """``--port 0`` binds a port the system chooses; the ``MCP endpoint:`` line on stdout
    names that real port, which then serves MCP."""
    proc = subprocess.Popen([sys.executable, *argv, "--port", "0"], cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        endpoint = None
        while endpoint is None and len(lines) < 3:  # printed once listening
            lines.append(proc.stdout.readline())
            endpoint = reported_endpoint(lines[-1])
        assert endpoint is not None, lines
        host, port, path = endpoint
        assert (host, path) == ("127.0.0.1", "/mcp") and port != 0
        assert initialize(f"http://{host}:{port}{path}")[0] == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0


# What pip writes for the ``tornado-mcp`` entry in [project.scripts] (the wheel install in
# test_packaging.py runs the real one).
CONSOLE_SCRIPT = """import re
import sys
from tornado_mcp.__main__ import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def run_cli(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if argv[0] == "tornado-mcp":
        script = tmp_path / "tornado-mcp"
        script.write_text(CONSOLE_SCRIPT, encoding="utf-8")
        argv = [str(script), *argv[1:]]
    return subprocess.run([sys.executable, *argv], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=30, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})


@pytest.mark.parametrize(("argv", "prog"), [
    (["tornado-mcp"], "tornado-mcp"),
    (["-m", "tornado_mcp"], "python -m tornado_mcp"),
], ids=["console-script", "module"])
def test_usage_names_the_command_as_it_was_invoked(argv: list[str], prog: str,
                                                   tmp_path: Path) -> None:
    helped = run_cli([*argv, "--help"], tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith(f"usage: {prog} [-h] {{demo,stdio}}")
    demo = run_cli([*argv, "demo", "--help"], tmp_path)
    assert demo.stdout.startswith(f"usage: {prog} demo [-h]")
    wrong = run_cli([*argv, "stdio", "no_such_module_here:server"], tmp_path)
    assert wrong.returncode == 2
    assert wrong.stderr.splitlines()[-1].startswith(f"{prog}: error: stdio: ")
    other = "python -m tornado_mcp" if prog == "tornado-mcp" else "tornado-mcp"
    for output in (helped.stdout, demo.stdout, wrong.stderr):
        assert f"usage: {other}" not in output and f"{other}: error" not in output
