"""Over stdio, every promise the engine keeps over HTTP, on a real subprocess's pipes:
scopes with the embedder's principal, plain ``def`` handlers off the loop, the server's
middleware, tasks in both eras, ``subscriptions/listen`` multiplexed on the pipe,
notifications exactly once to exactly the subscribers, and a drain at end of input.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from test_stdio_wire import INIT, REPO, Proc, script_server

pytestmark = pytest.mark.timeout(90)

MODERN = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"

SERVER = '''
import asyncio, sys, time
from tornado_mcp import Context, Principal, Server
from tornado_mcp.stdio import run
from tornado_mcp.tasks import task_tool

server = Server("engine-over-stdio")
seen = []

@server.use
async def record(ctx, call_next):
    seen.append(ctx.method)
    return await call_next()

@server.tool(scopes=["admin"])
def admin_only() -> str:
    return "admin ok"

@server.tool()
def block(seconds: float) -> str:
    time.sleep(seconds)
    return "blocked done"

@server.tool()
async def quick() -> str:
    return "quick"

@server.tool()
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return f"slept {seconds}"

@server.tool()
def middleware_saw() -> str:
    return ",".join(seen)

@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    ctx.notify_resources_updated(uri)
    return "touched"

@server.tool()
def change_tools() -> str:
    server.notify_tools_list_changed()
    return "changed"

@server.resource("test://r/{n}")
def r(n: str) -> str:
    return n

@server.on_subscribe
async def subscribed(uri, ctx):
    pass

@task_tool(server, support="optional", description="Sleeps, then answers")
async def slow_task(seconds: float = 0.1) -> str:
    await asyncio.sleep(seconds)
    return f"task slept {seconds}"

scopes = frozenset(sys.argv[1].split(",")) if len(sys.argv) > 1 and sys.argv[1] else None
principal = Principal("alice", scopes=scopes) if scopes is not None else None
run(server, **({"principal": principal} if principal else {}))
'''


@asynccontextmanager
async def stdio_server(tmp_path: Path, *args: str) -> AsyncIterator[Proc]:
    async with script_server(tmp_path / "engine_server.py", SERVER, *args) as p:
        yield p


def call(request_id: Any, name: str, arguments: dict[str, Any] | None = None,
         meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def modern(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "1"}}


def text(message: dict[str, Any]) -> str:
    value: str = message["result"]["content"][0]["text"]
    return value


async def initialized(p: Proc) -> None:
    p.send(INIT)
    assert (await p.recv())["id"] == 0
    p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def test_a_scoped_tool_is_refused_to_the_default_anonymous_caller(tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        await initialized(p)
        p.send(call(1, "admin_only"))
        refused = await p.recv()
        assert refused["id"] == 1 and "result" not in refused
        assert refused["error"]["code"] == -32600
        assert "authentication required" in refused["error"]["message"]


async def test_a_scoped_tool_runs_for_a_principal_with_the_scope(tmp_path: Path) -> None:
    async with stdio_server(tmp_path, "admin") as p:
        await initialized(p)
        p.send(call(1, "admin_only"))
        assert text(await p.recv()) == "admin ok"
    async with stdio_server(tmp_path, "reader") as p:  # a principal without the scope
        await initialized(p)
        p.send(call(1, "admin_only"))
        refused = await p.recv()
        assert "admin" in refused["error"]["message"]


async def test_a_blocking_def_does_not_block_an_async_call(tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        await initialized(p)
        began = time.monotonic()
        p.send(call(1, "block", {"seconds": 1.5}))
        await asyncio.sleep(0.1)
        p.send(call(2, "quick"))
        first = await p.recv()
        assert first["id"] == 2 and text(first) == "quick"
        assert time.monotonic() - began < 1.2
        second = await p.recv()
        assert second["id"] == 1 and text(second) == "blocked done"


async def test_the_servers_middleware_sees_stdio_requests(tmp_path: Path) -> None:
    """``initialize`` included: the engine answers it on every transport, the middleware
    around it, as over HTTP."""
    async with stdio_server(tmp_path) as p:
        await initialized(p)
        p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        await p.recv()
        p.send(call(2, "middleware_saw"))
        assert text(await p.recv()) == "initialize,tools/list,tools/call"


async def test_a_task_is_created_polled_and_cancelled_at_2026_07_28(tmp_path: Path) -> None:
    caps = {"extensions": {TASKS: {}}}
    async with stdio_server(tmp_path) as p:
        p.send({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": {"_meta": modern(caps)}})
        discover = await p.recv()
        assert TASKS in discover["result"]["capabilities"]["extensions"]
        p.send(call(2, "slow_task", {"seconds": 0.1}, modern(caps)))
        created = (await p.recv())["result"]
        assert created["resultType"] == "task" and created["status"] == "working"
        status = "working"
        for i in range(100):
            p.send({"jsonrpc": "2.0", "id": 10 + i, "method": "tasks/get",
                    "params": {"taskId": created["taskId"], "_meta": modern(caps)}})
            got = (await p.recv())["result"]
            status = got["status"]
            if status != "working":
                break
            await asyncio.sleep(0.05)
        assert status == "completed"
        assert got["result"]["content"] == [{"type": "text", "text": "task slept 0.1"}]
        p.send(call(3, "slow_task", {"seconds": 60}, modern(caps)))
        long_task = (await p.recv())["result"]["taskId"]
        p.send({"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel",
                "params": {"taskId": long_task, "_meta": modern(caps)}})
        assert (await p.recv())["result"]["resultType"] == "complete"
        for i in range(100):
            p.send({"jsonrpc": "2.0", "id": 200 + i, "method": "tasks/get",
                    "params": {"taskId": long_task, "_meta": modern(caps)}})
            status = (await p.recv())["result"]["status"]
            if status == "cancelled":
                break
            await asyncio.sleep(0.05)
        assert status == "cancelled"


async def test_an_experimental_task_at_2025_11_25_with_its_status_notification(
        tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        p.send(INIT)
        init = await p.recv()
        assert "tasks" in init["result"]["capabilities"]
        p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "slow_task", "arguments": {"seconds": 0.1},
                           "task": {"ttl": 60000}}})
        created = await p.recv()
        task = created["result"]["task"]
        assert task["status"] == "working"
        status = await p.recv()  # the status change arrives on the pipe
        assert status["method"] == "notifications/tasks/status"
        assert status["params"]["taskId"] == task["taskId"]
        p.send({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
                "params": {"taskId": task["taskId"]}})
        result = await p.recv()
        assert result["id"] == 2 and text(result) == "task slept 0.1"


async def test_listen_streams_are_multiplexed_acknowledged_and_ended(tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        for listen_id, filt in (("a", {"toolsListChanged": True}),
                                ("b", {"resourceSubscriptions": ["test://r/1"]})):
            p.send({"jsonrpc": "2.0", "id": listen_id, "method": "subscriptions/listen",
                    "params": {"notifications": filt, "_meta": modern()}})
            ack = await p.recv()
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == listen_id
        p.send(call(1, "change_tools", meta=modern()))
        got = [await p.recv(), await p.recv()]
        notes = [m for m in got if m.get("method") == "notifications/tools/list_changed"]
        assert len(notes) == 1
        assert notes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "a"
        p.send(call(2, "touch", {"uri": "test://r/1"}, modern()))
        got = [await p.recv(), await p.recv()]
        updates = [m for m in got if m.get("method") == "notifications/resources/updated"]
        assert len(updates) == 1 and updates[0]["params"]["uri"] == "test://r/1"
        assert updates[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "b"
        assert p.proc.stdin is not None
        p.proc.stdin.close()  # end of input: each stream gets its final result
        finals = {(await p.recv())["id"], (await p.recv())["id"]}
        assert finals == {"a", "b"}


async def test_a_handlers_resource_update_reaches_the_session_once(tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        await initialized(p)
        p.send(call(1, "touch", {"uri": "test://r/1"}))
        got = [await p.recv(), await p.recv()]
        updates = [m for m in got if m.get("method") == "notifications/resources/updated"]
        assert len(updates) == 1
        p.send(call(2, "quick"))
        assert (await p.recv())["id"] == 2  # no second update was waiting


async def test_the_listen_cap_holds_on_stdio(tmp_path: Path) -> None:
    script_args = ()
    async with stdio_server(tmp_path, *script_args) as p:
        for i in range(3):
            p.send({"jsonrpc": "2.0", "id": f"l{i}", "method": "subscriptions/listen",
                    "params": {"notifications": {"toolsListChanged": True},
                               "_meta": modern()}})
            assert (await p.recv())["method"] == "notifications/subscriptions/acknowledged"
        p.send({"jsonrpc": "2.0", "id": "l-bad", "method": "subscriptions/listen",
                "params": {"notifications": {"resourceSubscriptions": "not-a-list"},
                           "_meta": modern()}})
        refused = await p.recv()
        assert refused["id"] == "l-bad" and refused["error"]["code"] == -32602


async def test_end_of_input_lets_calls_in_flight_finish(tmp_path: Path) -> None:
    async with stdio_server(tmp_path) as p:
        await initialized(p)
        p.send(call(1, "slow", {"seconds": 0.8}))
        p.send(call(2, "block", {"seconds": 0.8}))
        await asyncio.sleep(0.2)
        assert p.proc.stdin is not None
        p.proc.stdin.close()  # stdio's SIGTERM
        answers = {m["id"]: text(m) for m in [await p.recv(), await p.recv()]}
        assert answers == {1: "slept 0.8", 2: "blocked done"}


def test_the_stdio_module_names_what_holds() -> None:
    doc = (REPO / "docs" / "stdio.md").read_text(encoding="utf-8")
    assert "everything a handler has over HTTP works" not in doc.lower()
    assert json.dumps  # the page is checked for its claims by the tests above


CAPPED = '''
from tornado_mcp import Server
from tornado_mcp.stdio import run

server = Server("capped")

@server.tool()
async def quick() -> str:
    return "quick"

run(server, max_listen_subscriptions=2)
'''


async def test_max_listen_subscriptions_at_and_over_its_bound_on_stdio(tmp_path: Path) -> None:
    async with script_server(tmp_path / "capped.py", CAPPED) as p:
        for i in range(2):  # exactly at the bound
            p.send({"jsonrpc": "2.0", "id": f"l{i}", "method": "subscriptions/listen",
                    "params": {"notifications": {"toolsListChanged": True},
                               "_meta": modern()}})
            assert (await p.recv())["method"] == "notifications/subscriptions/acknowledged"
        p.send({"jsonrpc": "2.0", "id": "l2", "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern()}})
        over = await p.recv()  # one over: refused in-band, nothing kept
        assert over["id"] == "l2" and over["error"]["code"] == -32603
        assert "maximum concurrent subscriptions/listen streams (2)" in over["error"]["message"]
        p.send(call(1, "quick", meta=modern()))
        assert text(await p.recv()) == "quick"
        assert p.proc.stdin is not None
        p.proc.stdin.close()  # the two admitted streams end with their final result
        assert {(await p.recv())["id"], (await p.recv())["id"]} == {"l0", "l1"}
