"""The call audit trail: one record per tools/call, resources/read and prompts/get with who,
what, how it ended and how long it took; a digest of the arguments, never their values
(unless a tool opts in, then redacted and bounded); the ring's bound; the JSON log line."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import Any

import pytest
from mcp_http import result_of, running, wait_until

from tornado_mcp import Server
from tornado_mcp.engine.audit import MAX_AUDIT_ARGUMENT_BYTES
from tornado_mcp.protocol.errors import MCPError

SECRET = "hunter2-do-not-log"


def audited_server(gate: asyncio.Event) -> Server:
    server = Server("audited")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.tool()
    def broken(text: str) -> str:
        raise MCPError(-32001, "broken on purpose")

    @server.tool(max_concurrency=1)
    async def held(text: str) -> str:
        await gate.wait()
        return text

    @server.tool(timeout=0.1)
    async def slow(text: str) -> str:
        await asyncio.sleep(30)
        return text

    @server.tool(audit_arguments=True, redact=lambda a: {**a, "password": "***"})
    def login(user: str, password: str) -> str:
        return f"hello {user}"

    @server.tool(audit_arguments=True)
    def upload(blob: str) -> str:
        return str(len(blob))

    @server.resource("data://greeting")
    def greeting() -> str:
        return "hi"

    @server.prompt()
    def ask(topic: str) -> str:
        return f"Tell me about {topic}"

    return server


def sha(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def test_each_call_is_recorded_with_its_outcome_and_no_argument_values() -> None:
    gate = asyncio.Event()
    async with running(audited_server(gate)) as srv:
        sid = await srv.initialize()

        async def call(name: str, request_id: int, **arguments: Any) -> Any:
            return await srv.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                   "params": {"name": name, "arguments": arguments}},
                                  session=sid)

        await call("echo", 1, text=SECRET)
        await call("broken", 2, text=SECRET)
        held = asyncio.ensure_future(call("held", 3, text=SECRET))
        await wait_until(lambda: any(t.in_flight for t in srv.transport.snapshot().tools))
        await call("held", 4, text=SECRET)  # refused: max_concurrency 1
        await srv.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 3}}, session=sid)
        await wait_until(lambda: any(a.outcome == "cancelled" for a in srv.transport.audit()))
        held.cancel()
        await call("slow", 5, text=SECRET)
        await srv.post({"jsonrpc": "2.0", "id": 6, "method": "resources/read",
                        "params": {"uri": "data://greeting"}}, session=sid)
        await srv.post({"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
                        "params": {"name": "ask", "arguments": {"topic": SECRET}}},
                       session=sid)
        records = list(reversed(srv.transport.audit()))
        assert [(r.method, r.name, r.outcome, r.code, r.request_id) for r in records] == [
            ("tools/call", "echo", "ok", None, 1),
            ("tools/call", "broken", "error", -32001, 2),
            ("tools/call", "held", "refused", -32029, 4),
            ("tools/call", "held", "cancelled", None, 3),
            ("tools/call", "slow", "timeout", None, 5),
            ("resources/read", "data://greeting", "ok", None, 6),
            ("prompts/get", "ask", "ok", None, 7)]
        first = records[0]
        assert first.arguments_sha256 == sha({"text": SECRET})
        assert first.principal == "address:127.0.0.1" and first.session == sid
        assert first.trace_id is None and first.process is None and first.arguments is None
        assert 0 <= first.duration_ms < 5000 and first.time > 0
        assert records[4].duration_ms >= 100
        for record in records:
            assert SECRET not in json.dumps(record.as_dict(), default=str)
        only = srv.transport.audit(tool="held", outcome="refused")
        assert [r.request_id for r in only] == [4]
        assert srv.transport.audit(principal="address:127.0.0.1", limit=2) == \
            tuple(reversed(records))[:2]


async def test_an_opted_in_tool_keeps_its_redacted_arguments_bounded() -> None:
    async with running(audited_server(asyncio.Event())) as srv:
        await srv.modern("tools/call", {"name": "login",
                                        "arguments": {"user": "ann", "password": SECRET}})
        big = "x" * MAX_AUDIT_ARGUMENT_BYTES
        await srv.modern("tools/call", {"name": "upload", "arguments": {"blob": big}},
                         request_id=2)
        small = "y" * 100
        await srv.modern("tools/call", {"name": "upload", "arguments": {"blob": small}},
                         request_id=3)
        small_rec, big_rec, login = srv.transport.audit()
        assert login.arguments == {"user": "ann", "password": "***"}
        assert login.arguments_sha256 == sha({"user": "ann", "password": SECRET})
        assert SECRET not in json.dumps(login.as_dict())
        compact = json.dumps({"blob": big}, separators=(",", ":"))
        assert big_rec.arguments == {"$truncated": len(compact)}
        assert small_rec.arguments == {"blob": small}


async def test_the_ring_keeps_exactly_max_audit_entries_and_resizes_live() -> None:
    async with running(audited_server(asyncio.Event()), max_audit_entries=3) as srv:
        for i in range(3):
            result_of(await srv.modern("tools/call", {"name": "echo",
                                                      "arguments": {"text": str(i)}},
                                       request_id=i))
        assert [r.request_id for r in srv.transport.audit()] == [2, 1, 0]
        await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "3"}},
                         request_id=3)
        assert [r.request_id for r in srv.transport.audit()] == [3, 2, 1]
        srv.transport.options.update({"max_audit_entries": 2})
        assert [r.request_id for r in srv.transport.audit()] == [3, 2]


async def test_each_call_is_one_json_line_on_the_audit_logger(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tornado_mcp.audit")
    async with running(audited_server(asyncio.Event())) as srv:
        await srv.modern("tools/call", {"name": "echo", "arguments": {"text": SECRET}},
                         request_id="r-1")
    lines = [r.getMessage() for r in caplog.records if r.name == "tornado_mcp.audit"]
    assert len(lines) == 1 and "\n" not in lines[0]
    entry = json.loads(lines[0])
    assert SECRET not in lines[0]
    assert {k: entry[k] for k in ("method", "name", "outcome", "request_id", "principal")} \
        == {"method": "tools/call", "name": "echo", "outcome": "ok", "request_id": "r-1",
            "principal": "address:127.0.0.1"}
    assert entry["arguments_sha256"] == sha({"text": SECRET})
