"""Over stdio, a burst of task-creating calls to a ``max_concurrency=1`` task tool creates
one task; the others are refused in-band with -32029, and the run holds the slot until it
ends (then a new creation is admitted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_stdio_engine import TASKS, call, modern
from test_stdio_wire import script_server

pytestmark = pytest.mark.timeout(60)

SERVER = '''
import asyncio
from tornado_mcp import Server
from tornado_mcp.protocol import TOOLS_CALL
from tornado_mcp.server.bounds import CallBounds
from tornado_mcp.stdio import run
from tornado_mcp.tasks import task_tool

server = Server("burst")

@task_tool(server)
async def exclusive_job(seconds: float = 0.5) -> str:
    await asyncio.sleep(seconds)
    return "done"

server.set_bounds(TOOLS_CALL, "exclusive_job", CallBounds(max_concurrency=1))
run(server)
'''


async def test_a_task_burst_over_stdio_admits_one(tmp_path: Path) -> None:
    caps = {"extensions": {TASKS: {}}}
    async with script_server(tmp_path / "burst.py", SERVER) as p:
        for burst in range(5):
            for i in range(6):
                p.send(call(f"{burst}-{i}", "exclusive_job", {"seconds": 0.3}, modern(caps)))
            answers = [await p.recv() for _ in range(6)]
            created = [a for a in answers if "result" in a]
            refused = [a for a in answers if "error" in a]
            assert len(created) == 1 and len(refused) == 5, answers
            assert {a["error"]["code"] for a in refused} == {-32029}
            task_id = created[0]["result"]["taskId"]
            for n in range(200):  # poll (bounded) until the run ended
                p.send({"jsonrpc": "2.0", "id": f"get-{burst}-{n}", "method": "tasks/get",
                        "params": {"taskId": task_id, "_meta": modern(caps)}})
                status = (await p.recv())["result"]["status"]
                if status == "completed":
                    break
                await asyncio.sleep(0.02)
            assert status == "completed"
