"""Per-tool bounds (``timeout``, ``max_concurrency``), the per-caller concurrency bound,
their live overrides, task runs within them, and the per-tool and per-caller statistics."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
import tornado.web
from mcp_http import (
    TIMEOUT,
    assert_refused,
    result_of,
    running,
    tool_text,
    wait_until,
)

from tornado_mcp import Server, Transport
from tornado_mcp.options import OptionError
from tornado_mcp.protocol.identity import Principal
from tornado_mcp.transport.handler import MCPHandler


class Gate:
    """Holds calls until released; counts how many are waiting."""

    def __init__(self) -> None:
        self.waiting = 0
        self.open = asyncio.Event()

    async def hold(self) -> None:
        self.waiting += 1
        try:
            await self.open.wait()
        finally:
            self.waiting -= 1


def bounded_server(gate: Gate, blocker: threading.Event) -> Server:
    server = Server("bounded")

    @server.tool(max_concurrency=2)
    async def held(label: str) -> str:
        await gate.hold()
        return f"done {label}"

    @server.tool(timeout=0.2)
    async def slow() -> str:
        await asyncio.sleep(30)
        return "never"

    @server.tool(timeout=0.2)
    async def quick() -> str:
        await asyncio.sleep(0.01)
        return "in time"

    @server.tool(timeout=0.2, max_concurrency=1)
    def blocking() -> str:
        blocker.wait(TIMEOUT)
        return "late"

    @server.tool()
    async def free(label: str) -> str:
        await gate.hold()
        return label

    @server.resource("data://slow", timeout=0.2)
    async def slow_resource() -> str:
        await asyncio.sleep(30)
        return "never"

    @server.prompt(timeout=0.2)
    async def slow_prompt() -> str:
        await asyncio.sleep(30)
        return "never"

    return server


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def blocker() -> threading.Event:
    event = threading.Event()
    yield event  # type: ignore[misc]
    event.set()


async def test_calls_at_max_concurrency_run_and_one_over_is_429(gate: Gate,
                                                                 blocker: threading.Event
                                                                 ) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        first = [asyncio.ensure_future(srv.modern("tools/call", call("held", label=str(i)),
                                                  request_id=i)) for i in range(2)]
        await wait_until(lambda: gate.waiting == 2)
        over = await srv.modern("tools/call", call("held", label="x"), request_id=9)
        err = assert_refused(over, 429, -32029, "tool held has 2 calls running "
                                                "(its max_concurrency)", 9)
        assert err["data"] == {"retryAfter": 1}
        assert over.headers["Retry-After"] == "1"
        gate.open.set()
        done = await asyncio.gather(*first)
        assert [tool_text(result_of(r)) for r in done] == ["done 0", "done 1"]
        row = next(t for t in srv.transport.snapshot().tools if t.name == "held")
        assert (row.calls, row.refusals, row.in_flight, row.max_concurrency) == (3, 1, 0, 2)
        assert srv.transport.snapshot().refusals["max_concurrency"] == 1


async def test_legacy_call_over_max_concurrency_is_429_too(gate: Gate,
                                                          blocker: threading.Event) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        sid = await srv.initialize()
        first = [asyncio.ensure_future(srv.post(
            {"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": call("held", label=str(i))}, session=sid)) for i in range(2)]
        await wait_until(lambda: gate.waiting == 2)
        over = await srv.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                               "params": call("held", label="x")}, session=sid)
        assert_refused(over, 429, -32029, "max_concurrency", 7)
        gate.open.set()
        assert all(r.status == 200 for r in await asyncio.gather(*first))


async def test_a_call_past_its_timeout_is_a_tool_error_naming_it(gate: Gate,
                                                                blocker: threading.Event
                                                                ) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        r = await srv.modern("tools/call", call("slow"))
        result = result_of(r)
        assert result["isError"] is True
        assert tool_text(result) == "Tool slow timed out after 0.2 s (its timeout) and was " \
                                    "cancelled"
        fine = result_of(await srv.modern("tools/call", call("quick"), request_id=2))
        assert tool_text(fine) == "in time" and not fine.get("isError")
        rows = {t.name: t for t in srv.transport.snapshot().tools}
        assert (rows["slow"].timeouts, rows["slow"].errors, rows["slow"].in_flight) == (1, 1, 0)
        assert rows["quick"].outcomes["ok"] == 1


async def test_a_resource_or_prompt_past_its_timeout_is_an_error_naming_it(
        gate: Gate, blocker: threading.Event) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        r = await srv.modern("resources/read", {"uri": "data://slow"})
        assert r.json["error"]["code"] == -32603
        assert "timed out after 0.2 s (its timeout)" in r.json["error"]["message"]
        p = await srv.modern("prompts/get", {"name": "slow_prompt"}, request_id=2)
        assert "Prompt slow_prompt timed out after 0.2 s" in p.json["error"]["message"]
        outcomes = [a.outcome for a in srv.transport.audit()]
        assert outcomes == ["timeout", "timeout"]


async def test_a_timed_out_plain_def_is_counted_until_its_thread_returns(
        gate: Gate, blocker: threading.Event) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        r = await srv.modern("tools/call", call("blocking"))
        assert "timed out after 0.2 s" in tool_text(result_of(r))

        def row() -> Any:
            return next(t for t in srv.transport.snapshot().tools if t.name == "blocking")

        assert row().in_flight == 1  # its thread still runs
        again = await srv.modern("tools/call", call("blocking"), request_id=2)
        assert_refused(again, 429, -32029, "max_concurrency", 2)
        blocker.set()
        await wait_until(lambda: row().in_flight == 0)
        blocker.clear()
        third = await srv.modern("tools/call", call("blocking"), request_id=3)
        assert "timed out" in tool_text(result_of(third))  # admitted again
        blocker.set()


async def test_operator_overrides_apply_live_and_null_removes_a_bound(
        gate: Gate, blocker: threading.Event) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        options = srv.transport.options
        options.update({"tool_bounds": {"slow": {"timeout": None},
                                        "free": {"max_concurrency": 1}}}, actor="ops")
        rows = {t.name: t for t in srv.transport.snapshot().tools}
        assert (rows["slow"].timeout, rows["free"].max_concurrency) == (None, 1)
        first = asyncio.ensure_future(srv.modern("tools/call", call("free", label="a")))
        await wait_until(lambda: gate.waiting == 1)
        over = await srv.modern("tools/call", call("free", label="b"), request_id=2)
        assert_refused(over, 429, -32029, "tool free has 1 calls running", 2)
        gate.open.set()
        assert tool_text(result_of(await first)) == "a"
        with pytest.raises(OptionError) as bad:
            options.update({"tool_bounds": {"free": {"max_concurrency": 0}}})
        assert "free.max_concurrency must be a positive integer or null" in str(bad.value)


class PerUser(MCPHandler):
    """The endpoint behind a host application's login (here: a trusted test header)."""

    def prepare(self) -> None:
        self.principal = Principal.of(self.request.headers["X-User"])
        super().prepare()


async def test_per_caller_concurrency_at_and_over_the_bound(gate: Gate,
                                                             blocker: threading.Event) -> None:
    server = bounded_server(gate, blocker)
    transport = Transport(server, max_concurrent_calls_per_principal=2)

    def routes(t: Transport) -> list[Any]:
        return [tornado.web.url("/mcp2", PerUser, {"transport": t})]

    async with running(server, transport=transport, extra_routes=routes) as srv:
        srv.url = srv.url + "2"
        alice = {"X-User": "alice"}
        first = [asyncio.ensure_future(srv.modern("tools/call", call("free", label=str(i)),
                                                  request_id=i, headers=alice))
                 for i in range(2)]
        await wait_until(lambda: gate.waiting == 2)
        over = await srv.modern("tools/call", call("free", label="x"), request_id=5,
                                headers=alice)
        assert_refused(over, 429, -32029, "this caller has 2 calls in flight (the "
                                          "max_concurrent_calls_per_principal limit)", 5)
        assert over.headers["Retry-After"] == "1"
        bob = asyncio.ensure_future(srv.modern("tools/call", call("free", label="bob"),
                                               request_id=6, headers={"X-User": "bob"}))
        await wait_until(lambda: gate.waiting == 3)  # another caller is not held back
        rows = {p.principal: p for p in transport.snapshot().principals}
        assert (rows["host:alice"].in_flight, rows["host:alice"].refusals,
                rows["host:bob"].in_flight) \
            == (2, 1, 1)
        transport.options.update({"max_concurrent_calls_per_principal": None})
        gate.open.set()
        await asyncio.gather(*first, bob)
        assert transport.snapshot().refusals["max_concurrent_calls_per_principal"] == 1


async def test_statistics_list_every_tool_with_percentiles(gate: Gate,
                                                           blocker: threading.Event) -> None:
    async with running(bounded_server(gate, blocker)) as srv:
        for i in range(3):
            await srv.modern("tools/call", call("quick"), request_id=i)
        await srv.modern("tools/call", call("nope"), request_id=9)  # unknown: no row
        rows = {t.name: t for t in srv.transport.snapshot().tools}
        assert {"held", "slow", "quick", "blocking", "free"} <= set(rows)
        assert "nope" not in rows
        quick = rows["quick"]
        assert quick.calls == 3 and sum(quick.buckets) == 3
        assert quick.p50_ms is not None and quick.p99_ms is not None
        assert 5 <= quick.p50_ms <= quick.p99_ms <= 250
        assert rows["held"].p50_ms is None and rows["held"].calls == 0
