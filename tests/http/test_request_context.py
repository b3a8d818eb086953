"""What a handler sees of the HTTP request: read-only headers, the client's address, and
the principal (anonymous on an endpoint without authentication), in both eras."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import running

from tornado_mcp import ANONYMOUS, Context, Principal, Server


def _server() -> Server:
    server = Server("context")

    @server.tool()
    def who(ctx: Context) -> dict[str, Any]:
        """Report what the context knows of the request."""
        headers = ctx.headers
        try:
            headers["X-Tamper"] = "1"  # type: ignore[index]
            writable = True
        except TypeError:
            writable = False
        return {"principal": ctx.principal.as_dict(), "trace": headers.get("x-trace-id"),
                "remote_ip": ctx.remote_ip, "writable": writable}

    return server


def _payload(reply: Any) -> dict[str, Any]:
    result = reply.messages[-1]["result"]
    assert result.get("isError") is not True, result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


EXPECTED = {"principal": {"subject": None, "scopes": [], "method": "anonymous",
                          "authenticated": False},
            "trace": "abc-123", "remote_ip": "127.0.0.1", "writable": False}


async def test_a_legacy_handler_reads_headers_address_and_principal() -> None:
    async with running(_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": "who", "arguments": {}}},
                           session=sid, headers={"X-Trace-Id": "abc-123"})
        assert r.status == 200
        assert _payload(r) == EXPECTED


async def test_a_modern_handler_reads_headers_address_and_principal() -> None:
    async with running(_server()) as srv:
        r = await srv.modern("tools/call", {"name": "who", "arguments": {}},
                             headers={"X-Trace-Id": "abc-123"})
        assert r.status == 200
        assert _payload(r) == EXPECTED


def test_a_principal_is_immutable_and_checks_scopes() -> None:
    p = Principal.of("alice", ["read", "write"], {"iss": "https://issuer.example"})
    assert p.authenticated and p.has_scopes("read") and p.has_scopes("read", "write")
    assert not p.has_scopes("admin")
    assert p.as_dict() == {"subject": "alice", "scopes": ["read", "write"], "method": "host",
                           "authenticated": True}
    with pytest.raises(TypeError):
        p.claims["iss"] = "forged"  # type: ignore[index]
    assert not ANONYMOUS.authenticated and ANONYMOUS.as_dict()["subject"] is None
