"""The 2026-07-28 ``_meta`` envelope: required fields, shapes, optional ``clientInfo``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_http import (
    MODERN,
    Running,
    error_of,
    post_modern_raw,
    result_of,
    tool_text,
)

pytestmark = pytest.mark.timeout(60)

# -- the _meta envelope ---------------------------------------------------------------------------

@pytest.mark.parametrize("meta", [
    None,  # no _meta at all
    {"io.modelcontextprotocol/protocolVersion": MODERN},  # no clientCapabilities
    {"io.modelcontextprotocol/clientCapabilities": {}},  # no protocolVersion
    {"io.modelcontextprotocol/protocolVersion": MODERN,
     "io.modelcontextprotocol/clientCapabilities": ["sampling"]},  # not an object
    {"io.modelcontextprotocol/protocolVersion": MODERN,
     "io.modelcontextprotocol/clientCapabilities": {},
     "io.modelcontextprotocol/clientInfo": {"name": "no-version"}},  # malformed clientInfo
], ids=["missing", "no-capabilities", "no-version", "capabilities-list", "bad-client-info"])
async def test_invalid_envelope_is_400_32602(srv: Running, meta: dict[str, Any] | None) -> None:
    params: dict[str, Any] = {} if meta is None else {"_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                       "params": params}).encode()
    r = await post_modern_raw(srv, body, {"Mcp-Method": "tools/list"})
    assert r.status == 400, r.body
    assert error_of(r)["code"] == -32602
    assert r.json["id"] == 9


async def test_envelope_without_params_at_all_is_400_32602(srv: Running) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).encode()
    r = await post_modern_raw(srv, body, {"Mcp-Method": "tools/list"})
    assert r.status == 400
    assert error_of(r)["code"] == -32602


async def test_client_info_is_optional(srv: Running) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, meta=meta)
    assert r.status == 200
    assert tool_text(result_of(r)) == "x"
