"""The governance's table of callers is bounded: at most MAX_PRINCIPALS callers are kept,
the least recently seen dropped first; a caller's in-flight count is kept apart, so one
with calls running is never forgotten mid-call."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tornado_mcp import Server
from tornado_mcp.engine import governance
from tornado_mcp.engine.governance import Governance
from tornado_mcp.options import Options
from tornado_mcp.protocol.identity import Principal
from tornado_mcp.server.context import Context
from tornado_mcp.sync.handlers import SyncRunner


def setup() -> tuple[Server, Governance]:
    server = Server("callers")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server, Governance(server, Options(), SyncRunner(None))


def context(server: Server, who: str) -> Context:
    return Context(server, "tools/call", {"name": "echo", "arguments": {"text": who}}, who,
                   None, principal=Principal.of(who))


async def answer(method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {"content": []}


async def test_the_least_recently_seen_caller_is_dropped_past_the_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(governance, "MAX_PRINCIPALS", 3)
    server, gov = setup()
    for who in ("a", "b", "c"):
        await gov.call(context(server, who), answer)
    assert [p.principal for p in gov.principal_rows()] == ["host:c", "host:b", "host:a"]
    await gov.call(context(server, "a"), answer)  # seen again: now the most recent
    await gov.call(context(server, "d"), answer)  # one over: b, the least recent, goes
    rows = gov.principal_rows()
    assert [p.principal for p in rows] == ["host:d", "host:a", "host:c"]
    assert {p.principal: p.calls for p in rows} == {"host:d": 1, "host:a": 2, "host:c": 1}


async def test_a_caller_with_calls_running_keeps_its_in_flight_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(governance, "MAX_PRINCIPALS", 1)
    server, gov = setup()
    gate = asyncio.Event()

    async def held(method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        await gate.wait()
        return {"content": []}

    running = asyncio.ensure_future(gov.call(context(server, "a"), held))
    await asyncio.sleep(0)
    await gov.call(context(server, "b"), answer)  # pushes a out of the table
    assert gov.caller_in_flight == {"host:a": 1}
    gate.set()
    await running
    assert gov.caller_in_flight == {}
