"""``python -m tornado_mcp stdio`` on the wire: newline-delimited JSON-RPC on a real
subprocess's pipes.  The line bound at and over it, parse errors, standard output
holding nothing but protocol messages, 2026-07-28 requests, cancellation, the roots hook.
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tornado_mcp.stdio import load_server

REPO = Path(__file__).resolve().parents[2]
WAIT = 20.0
EXAMPLE = "examples/conformance_server.py:build_server"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                   "clientInfo": {"name": "wire", "version": "1"}}}


class Proc:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    def send(self, message: Any) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), WAIT)
        assert line.endswith(b"\n"), line
        message: dict[str, Any] = json.loads(line)
        return message


@asynccontextmanager
async def stdio(target: str = EXAMPLE, *extra: str) -> AsyncIterator[Proc]:
    async with piped("-m", "tornado_mcp", "stdio", target, *extra) as p:
        yield p


@asynccontextmanager
async def script_server(path: Path, source: str, *args: str) -> AsyncIterator[Proc]:
    """``source`` written to ``path`` and run as a stdio server (``args`` its argv)."""
    path.write_text(textwrap.dedent(source))
    async with piped(str(path), *args) as p:
        yield p


@asynccontextmanager
async def piped(*argv: str) -> AsyncIterator[Proc]:
    """``python *argv`` from the repository root, talked to on its pipes; its input is
    closed at the end and its exit awaited (bounded)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *argv, cwd=REPO, env={"PYTHONPATH": str(REPO)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, limit=8 * 1024 * 1024)
    p = Proc(proc)
    try:
        yield p
    finally:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        await asyncio.wait_for(proc.wait(), WAIT)


def ping_of_size(size: int, request_id: int) -> bytes:
    base = {"jsonrpc": "2.0", "id": request_id, "method": "ping", "params": {"pad": ""}}
    empty = len(json.dumps(base).encode())
    base["params"]["pad"] = "x" * (size - empty)
    line = json.dumps(base).encode()
    assert len(line) == size
    return line


async def test_the_line_bound_at_and_over_it() -> None:
    async with stdio(EXAMPLE, "--max-line-bytes", "2000") as p:
        p.send(ping_of_size(2000, 1))  # exactly at the bound
        assert await p.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}
        p.send(ping_of_size(2001, 2))  # one byte over: never parsed
        assert await p.recv() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Invalid Request: message exceeds 2000 bytes"}}
        p.send(ping_of_size(100_000, 3))  # far over, arriving in many reads
        assert (await p.recv())["error"]["code"] == -32600
        p.send(ping_of_size(100, 4))  # the stream goes on with the next line
        assert await p.recv() == {"jsonrpc": "2.0", "id": 4, "result": {}}


def initialize_of_size(size: int, request_id: int) -> bytes:
    """An ``initialize`` line of exactly ``size`` bytes (padded in an experimental
    capability)."""
    base = json.loads(json.dumps(INIT))
    base["id"] = request_id
    base["params"]["capabilities"]["experimental"] = {"pad": ""}
    empty = len(json.dumps(base).encode())
    base["params"]["capabilities"]["experimental"]["pad"] = "x" * (size - empty)
    line = json.dumps(base).encode()
    assert len(line) == size
    return line


async def test_initialize_is_bounded_as_over_http_at_and_over_the_bound(
        tmp_path: Path) -> None:
    """``max_initialize_request_bytes`` holds over stdio too: the engine answers
    ``initialize`` on every transport; the refusal is in-band."""
    source = f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from tornado_mcp import Server
        from tornado_mcp.stdio import run
        run(Server("bounded"), max_initialize_request_bytes=1000)
    """
    async with script_server(tmp_path / "bounded.py", source) as p:
        p.send(initialize_of_size(1001, 1))
        refused = await p.recv()
        assert refused["id"] == 1 and refused["error"]["code"] == -32600
        assert refused["error"]["message"] == \
            "Payload too large: initialize request body exceeds 1000 bytes"
        p.send(initialize_of_size(1000, 2))  # exactly at the bound: a session
        assert (await p.recv())["result"]["protocolVersion"] == "2025-11-25"


async def test_bad_input_gets_errors_and_the_session_goes_on() -> None:
    async with stdio() as p:
        p.send(b"{not json")
        assert await p.recv() == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700, "message": "Parse error: Invalid JSON"}}
        p.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
        assert (await p.recv())["error"]["code"] == -32600
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert await p.recv() == {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32600, "message": "Invalid Request: send initialize first"}}
        p.send(INIT)
        init = await p.recv()
        assert init["result"]["protocolVersion"] == "2025-11-25"
        p.send({"jsonrpc": "2.0", "id": 3, "method": "no/such"})
        assert (await p.recv())["error"]["code"] == -32601


async def test_stdout_holds_only_protocol_messages(tmp_path: Path) -> None:
    module = tmp_path / "printing.py"
    module.write_text(textwrap.dedent('''
        import logging
        from tornado_mcp import Server
        server = Server("printing")

        @server.tool()
        def noisy() -> str:
            print("a stray print")
            logging.getLogger("app").warning("a log line")
            return "quiet result"
    '''))
    async with stdio(f"{module}:server") as p:
        p.send(INIT)
        await p.recv()
        p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "noisy", "arguments": {}}})
        r = await p.recv()  # the next stdout line is the result, nothing before it
        assert r["result"]["content"] == [{"type": "text", "text": "quiet result"}]
        assert p.proc.stdin is not None
        p.proc.stdin.close()
        assert p.proc.stdout is not None and p.proc.stderr is not None
        assert await p.proc.stdout.read() == b""
        err = await p.proc.stderr.read()
        assert b"a stray print" in err and b"a log line" in err


async def test_modern_requests_are_served_statelessly() -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "wire", "version": "1"}}
    async with stdio() as p:
        p.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": {"_meta": meta}})
        r = await p.recv()
        assert r["result"]["supportedVersions"] == ["2026-07-28"]
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}})
        r = await p.recv()
        assert r["result"]["content"] == [{"type": "text", "text": "hi"}]
        assert r["result"]["resultType"] == "complete"
        bad = {**meta, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        p.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": bad}})
        assert (await p.recv())["error"]["code"] == -32022


async def test_cancelled_requests_are_not_answered_and_roots_hook_runs(tmp_path: Path) -> None:
    module = tmp_path / "hooks.py"
    module.write_text(textwrap.dedent('''
        import asyncio
        from tornado_mcp import Context, Server
        server = Server("hooks")
        changes = []

        @server.on_roots_list_changed
        async def roots_changed(session):
            changes.append(session.client_name)

        @server.tool()
        async def wait(ctx: Context) -> str:
            await asyncio.sleep(60)
            return "never"

        @server.tool()
        def roots_changes() -> str:
            return ",".join(changes)
    '''))
    async with stdio(f"{module}:server") as p:
        p.send(INIT)
        await p.recv()
        p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "wait", "arguments": {}}})
        p.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1}})
        p.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "roots_changes", "arguments": {}}})
        r = await p.recv()  # id 1 is never answered: the next line answers id 2
        assert r["id"] == 2
        assert r["result"]["content"] == [{"type": "text", "text": "wire"}]


def test_load_server_refuses_what_is_not_a_server() -> None:
    for target, message in (("nocolon", "is not module:attribute"),
                            ("json:__name__", "is not a tornado_mcp.Server")):
        try:
            load_server(target)
        except (ValueError, TypeError) as exc:
            assert message in str(exc)
        else:
            raise AssertionError(target)
