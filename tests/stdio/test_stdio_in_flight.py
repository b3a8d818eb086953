"""The stdio transport's ``max_in_flight`` bound, on a real subprocess's pipes: exactly
``max_in_flight`` requests run at once and are all answered; one more while they run is
refused at once with ``-32600``; once they are answered the next request is served.

The server is a program calling ``tornado_mcp.stdio.run(server, max_in_flight=3)``: its
``hold`` tool logs that it started, then waits until the client sends
``notifications/roots/list_changed`` (a notification is never counted in flight).
"""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from test_stdio_wire import INIT, REPO, WAIT, Proc

BOUND = 3

PROGRAM = textwrap.dedent(f'''
    import asyncio
    from tornado_mcp import Context, Server
    from tornado_mcp.stdio import run

    server = Server("in-flight")
    release = asyncio.Event()

    @server.on_roots_list_changed
    async def roots_changed(session):
        release.set()

    @server.tool()
    async def hold(n: int, ctx: Context) -> str:
        ctx.info(f"started {{n}}")
        await release.wait()
        return f"held {{n}}"

    if __name__ == "__main__":
        run(server, max_in_flight={BOUND})
''')


def call(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "hold", "arguments": {"n": request_id}}}


async def start(tmp_path: Path) -> Proc:
    program = tmp_path / "in_flight.py"
    program.write_text(PROGRAM)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(program), cwd=REPO, env={"PYTHONPATH": str(REPO)},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    return Proc(proc)


async def stop(p: Proc) -> None:
    assert p.proc.stdin is not None
    p.proc.stdin.close()
    await asyncio.wait_for(p.proc.wait(), WAIT)


async def test_max_in_flight_exactly_at_and_one_over(tmp_path: Path) -> None:
    p = await start(tmp_path)
    try:
        p.send(INIT)
        assert (await p.recv())["id"] == 0
        p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for i in range(1, BOUND + 1):  # exactly at the bound: all three run at once
            p.send(call(i))
        started = [await p.recv() for _ in range(BOUND)]
        assert sorted(m["params"]["data"] for m in started) == [
            f"started {i}" for i in range(1, BOUND + 1)]
        assert all(m["method"] == "notifications/message" for m in started)
        p.send(call(BOUND + 1))  # one over, while the three still run
        assert await p.recv() == {"jsonrpc": "2.0", "id": BOUND + 1, "error": {
            "code": -32600, "message": f"Invalid Request: more than {BOUND} requests in flight"}}
        p.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        answers = [await p.recv() for _ in range(BOUND)]
        assert sorted(a["id"] for a in answers) == list(range(1, BOUND + 1))
        for a in answers:
            assert a["result"]["content"] == [{"type": "text", "text": f"held {a['id']}"}]
        p.send(call(BOUND + 2))  # the three are answered: there is room again
        assert (await p.recv())["params"]["data"] == f"started {BOUND + 2}"
        assert (await p.recv())["result"]["content"][0]["text"] == f"held {BOUND + 2}"
    finally:
        await stop(p)


async def test_one_over_is_refused_when_all_arrive_in_one_read(tmp_path: Path) -> None:
    """Requests read in one chunk are admitted before any of them starts running: the
    bound counts them from the moment they are read, not from when their handler starts."""
    p = await start(tmp_path)
    try:
        p.send(INIT)
        assert (await p.recv())["id"] == 0
        lines = b"".join(json.dumps(call(i)).encode() + b"\n" for i in range(1, BOUND + 2))
        assert p.proc.stdin is not None
        p.proc.stdin.write(lines)  # one write: BOUND + 1 requests at once
        got = [await p.recv() for _ in range(BOUND + 1)]
        refused = [m for m in got if "error" in m]
        assert refused == [{"jsonrpc": "2.0", "id": BOUND + 1, "error": {
            "code": -32600, "message": f"Invalid Request: more than {BOUND} requests in flight"}}]
        assert sorted(m["params"]["data"] for m in got if "method" in m) == [
            f"started {i}" for i in range(1, BOUND + 1)]
        p.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        answers = [await p.recv() for _ in range(BOUND)]
        assert sorted(a["id"] for a in answers) == list(range(1, BOUND + 1))
    finally:
        await stop(p)
