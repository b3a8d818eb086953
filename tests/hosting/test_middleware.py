"""Middleware over real HTTP: the chain's order, what it sees (method, params, principal,
headers, the tool and its arguments), refusing with a clear JSON-RPC error in both eras
and in a batch, replacing a result, and that a failing middleware is no traceback.
"""

from __future__ import annotations

from typing import Any

from mcp_http import (
    assert_refused,
    example_server,
    final,
    legacy_call,
    result_of,
    rpc,
    running,
    tool_text,
)

from tornado_mcp import Context
from tornado_mcp.engine.middleware import CallNext, Refused, ToolCall, tool_middleware
from tornado_mcp.protocol.errors import MCPError

ECHO = {"name": "echo", "arguments": {"text": "hi"}}


async def test_chain_runs_in_order_around_every_request_with_the_context() -> None:
    seen: list[tuple[str, ...]] = []

    def recorder(tag: str) -> Any:
        async def mw(ctx: Context, call_next: CallNext) -> dict[str, Any]:
            seen.append((tag, "in", ctx.method, str(ctx.principal.subject),
                         ctx.headers.get("X-Trace", "")))
            result = await call_next()
            seen.append((tag, "out", ctx.method))
            return result
        return mw

    async with running(example_server(), middleware=[recorder("a"), recorder("b")]) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", ECHO, 2), session=sid, headers={"X-Trace": "t1"})
        assert tool_text(result_of(r)) == "hi"
        m = await srv.modern("tools/call", ECHO, headers={"X-Trace": "t2"})
        assert tool_text(result_of(m)) == "hi"
    assert seen == [
        ("a", "in", "initialize", "None", ""), ("b", "in", "initialize", "None", ""),
        ("b", "out", "initialize"), ("a", "out", "initialize"),
        ("a", "in", "tools/call", "None", "t1"), ("b", "in", "tools/call", "None", "t1"),
        ("b", "out", "tools/call"), ("a", "out", "tools/call"),
        ("a", "in", "tools/call", "None", "t2"), ("b", "in", "tools/call", "None", "t2"),
        ("b", "out", "tools/call"), ("a", "out", "tools/call"),
    ]


async def test_tool_middleware_sees_the_tool_and_its_arguments_only_for_tools() -> None:
    calls: list[ToolCall] = []

    @tool_middleware
    async def spy(ctx: Context, call: ToolCall, call_next: CallNext) -> dict[str, Any]:
        calls.append(call)
        return await call_next()

    async with running(example_server()) as srv:
        srv.transport.use(spy)
        assert "tools" in result_of(await srv.modern("tools/list"))
        assert tool_text(result_of(await srv.modern("tools/call", ECHO))) == "hi"
    assert calls == [ToolCall("echo", {"text": "hi"})]


async def test_refused_is_a_clear_error_with_its_status_in_both_eras() -> None:
    @tool_middleware
    async def no_echo(ctx: Context, call: ToolCall, call_next: CallNext) -> dict[str, Any]:
        if call.name == "echo":
            raise Refused("Forbidden: echo is not for you", data={"tool": call.name})
        return await call_next()

    async with running(example_server(), middleware=[no_echo]) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", ECHO, 7), session=sid)
        err = assert_refused(r, 403, -32030, "Forbidden: echo is not for you", 7)
        assert err["data"] == {"tool": "echo"}
        m = await srv.modern("tools/call", ECHO, request_id=8)
        assert_refused(m, 403, -32030, "Forbidden: echo is not for you", 8)
        # Other requests pass.
        assert "tools" in (await legacy_call(srv, sid, "tools/list", {}, 9))["result"]


async def test_refused_with_its_own_status_code_and_headers() -> None:
    async def teapot(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        raise Refused("No coffee", status=418, code=-32099, headers={"X-Why": "teapot"})

    async with running(example_server(), middleware=[teapot]) as srv:
        m = await srv.modern("tools/list", request_id=3)
        assert_refused(m, 418, -32099, "No coffee", 3)
        assert m.headers["X-Why"] == "teapot"


async def test_a_batched_refusal_is_an_error_entry() -> None:
    async def only_ping(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method != "ping":
            raise Refused("Forbidden: only ping")
        return await call_next()

    async with running(example_server(), middleware=[only_ping]) as srv:
        r = await srv.post(rpc("initialize", {"protocolVersion": "2025-03-26",
                                              "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "1"}}, 0))
        # initialize itself is refused: 403, no session.
        assert_refused(r, 403, -32030, "Forbidden: only ping", 0)
        assert len(srv.transport.sessions) == 0
    async with running(example_server(), middleware=[]) as srv:
        sid = await srv.initialize("2025-03-26")
        srv.transport.use(only_ping)
        r = await srv.post([rpc("ping", None, 1), rpc("tools/list", None, 2)], session=sid,
                           version="2025-03-26")
        assert r.status == 200
        assert r.json == [{"jsonrpc": "2.0", "id": 1, "result": {}},
                          {"jsonrpc": "2.0", "id": 2, "error": {
                              "code": -32030, "message": "Forbidden: only ping"}}]


async def test_a_middleware_can_answer_or_change_the_result() -> None:
    async def shout(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        if ctx.method == "ping":
            return {"pong": True}
        result = await call_next()
        if ctx.method == "tools/call":
            result["content"] = [{"type": "text", "text": result["content"][0]["text"].upper()}]
        return result

    async with running(example_server(), middleware=[shout]) as srv:
        assert result_of(await srv.modern("ping")) == {"pong": True}
        assert tool_text(result_of(await srv.modern("tools/call", ECHO))) == "HI"


async def test_errors_raised_by_a_middleware() -> None:
    async def invalid(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        raise MCPError(-32602, "Invalid params: said the middleware")

    async def broken(ctx: Context, call_next: CallNext) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    async with running(example_server(), middleware=[invalid]) as srv:
        assert_refused(await srv.modern("tools/list", request_id=4), 400, -32602,
                       "Invalid params: said the middleware", 4)
    async with running(example_server(), middleware=[broken]) as srv:
        r = await srv.modern("tools/list", request_id=5)
        assert r.status == 200
        assert final(r)["error"] == {"code": -32603, "message": "Internal error"}
        assert b"secret" not in r.body and b"Traceback" not in r.body
