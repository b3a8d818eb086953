"""The 2026-07-28 status ladder: missing client capabilities (400, -32021), unknown or removed
methods and methods behind unadvertised capabilities (404, -32601), bad params (400), handler
crashes (200 with -32603, nothing leaked).
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import (
    Running,
    error_of,
    modern_meta,
    result_of,
    running,
    tool_text,
)

from tornado_mcp import Context, Server

pytestmark = pytest.mark.timeout(60)

# -- capabilities and methods ---------------------------------------------------------------------

async def test_missing_client_capability_is_400_32021(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_missing_capability", "arguments": {}},
                         request_id="cap-1")
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32021
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}
    assert r.json["id"] == "cap-1"
    ok = await srv.modern("tools/call", {"name": "test_missing_capability", "arguments": {}},
                          meta=modern_meta({"sampling": {}}))
    assert ok.status == 200
    assert "declared sampling" in tool_text(result_of(ok))


async def test_require_client_capability_with_a_nested_path() -> None:
    server = Server("nested")

    @server.tool()
    def needs_form(ctx: Context) -> str:
        ctx.require_client_capability("elicitation", "form")
        return "ok"

    async with running(server) as srv:
        r = await srv.modern("tools/call", {"name": "needs_form", "arguments": {}},
                             meta=modern_meta({"elicitation": {}}))
        assert r.status == 400
        assert error_of(r)["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
        ok = await srv.modern("tools/call", {"name": "needs_form", "arguments": {}},
                              meta=modern_meta({"elicitation": {"form": {}}}))
        assert ok.status == 200


@pytest.mark.parametrize("method", ["no/such/method", "initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "resources/unsubscribe"])
async def test_unknown_and_removed_methods_are_404_32601(srv: Running, method: str) -> None:
    r = await srv.modern(method, {"uri": "test://static-text", "level": "info"},
                         request_id=314)
    assert r.status == 404, r.body
    assert r.content_type.startswith("application/json")
    assert error_of(r)["code"] == -32601
    assert r.json["id"] == 314


async def test_methods_behind_unadvertised_capabilities_are_404() -> None:
    server = Server("tools-only")

    @server.tool()
    def only() -> str:
        return "ok"

    async with running(server) as srv:
        for method, params in (("prompts/list", {}), ("prompts/get", {"name": "p"}),
                               ("resources/list", {}), ("resources/read", {"uri": "x://y"}),
                               ("resources/templates/list", {}),
                               ("completion/complete",
                                {"ref": {"type": "ref/prompt", "name": "p"},
                                 "argument": {"name": "a", "value": ""}})):
            r = await srv.modern(method, params, request_id=method)
            assert r.status == 404, (method, r.body)
            assert error_of(r)["code"] == -32601
            assert r.json["id"] == method
        assert (await srv.modern("tools/list")).status == 200


async def test_unknown_tool_is_400_32602(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "nope", "arguments": {}})
    assert r.status == 400
    assert error_of(r)["code"] == -32602


async def test_handler_crash_is_200_32603_without_leaking() -> None:
    server = Server("crash")

    @server.method("x/crash")
    def crash(params: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    async with running(server) as srv:
        r = await srv.modern("x/crash")
        assert r.status == 200  # -32603 is not on the 400 ladder
        assert error_of(r)["code"] == -32603
        assert "secret" not in r.body.decode()
