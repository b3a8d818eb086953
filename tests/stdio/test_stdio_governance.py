"""Over stdio, on a real subprocess's pipes: a tool's timeout answers a tool error naming it,
a call over its max_concurrency is refused in-band with -32029 (no HTTP status there), and
a call within both runs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from test_stdio_engine import call, initialized, text
from test_stdio_wire import Proc, script_server

pytestmark = pytest.mark.timeout(90)

SERVER = '''
import asyncio
from tornado_mcp import Server
from tornado_mcp.stdio import run

server = Server("governed-over-stdio")
release = asyncio.Event()

@server.tool(timeout=0.2)
async def slow() -> str:
    await asyncio.sleep(30)
    return "never"

@server.tool(max_concurrency=1)
async def held() -> str:
    await release.wait()
    return "held done"

@server.tool()
async def let_go() -> str:
    release.set()
    return "released"

run(server)
'''


@asynccontextmanager
async def governed(tmp_path: Path) -> AsyncIterator[Proc]:
    async with script_server(tmp_path / "governed_server.py", SERVER) as p:
        yield p


async def test_a_timeout_over_stdio_is_a_tool_error_naming_it(tmp_path: Path) -> None:
    async with governed(tmp_path) as p:
        await initialized(p)
        p.send(call(1, "slow"))
        answer = await p.recv()
        assert answer["id"] == 1 and answer["result"]["isError"] is True
        assert text(answer) == "Tool slow timed out after 0.2 s (its timeout) and was cancelled"


async def test_max_concurrency_over_stdio_is_refused_in_band(tmp_path: Path) -> None:
    async with governed(tmp_path) as p:
        await initialized(p)
        p.send(call(1, "held"))  # at the bound: it runs (and waits)
        p.send(call(2, "held"))  # one over: refused at once
        refused = await p.recv()
        assert refused["id"] == 2 and "result" not in refused
        assert refused["error"]["code"] == -32029
        assert "tool held has 1 calls running (its max_concurrency)" in \
            refused["error"]["message"]
        assert refused["error"]["data"] == {"retryAfter": 1}
        p.send(call(3, "let_go"))
        answers = {m["id"]: m for m in (await p.recv(), await p.recv())}
        assert text(answers[1]) == "held done" and text(answers[3]) == "released"
