"""Era routing on the dual-era endpoint: which requests are served as 2026-07-28 and which stay
legacy, and the ``protocol_versions`` option (modern only, legacy only).
"""

from __future__ import annotations

import pytest
from mcp_http import (
    LEGACY,
    MODERN,
    Running,
    error_of,
    example_server,
    modern_body,
    modern_meta,
    post_modern_raw,
    result_of,
    running,
    tool_text,
)

pytestmark = pytest.mark.timeout(60)

# -- era routing ----------------------------------------------------------------------------------

async def test_modern_header_without_session_is_served_statelessly(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert r.status == 200
    assert r.content_type.startswith("application/json")
    assert "Mcp-Session-Id" not in r.headers
    result = result_of(r)
    assert result["resultType"] == "complete"
    assert tool_text(result) == "hi"
    assert len(srv.transport.sessions) == 0


async def test_plain_initialize_with_modern_header_stays_legacy(srv: Running) -> None:
    r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": MODERN, "capabilities": {},
                                   "clientInfo": {"name": "c", "version": "1"}}},
                       version=MODERN)
    assert r.status == 200, r.body
    assert r.headers.get("Mcp-Session-Id")
    result = r.json["result"]
    assert result["protocolVersion"] == "2025-11-25"  # counter-offered: a handshake version
    assert "resultType" not in result
    assert len(srv.transport.sessions) == 1


async def test_initialize_carrying_the_envelope_goes_modern_and_is_removed(srv: Running) -> None:
    r = await srv.modern("initialize", {"protocolVersion": MODERN, "capabilities": {},
                                        "clientInfo": {"name": "c", "version": "1"}})
    assert r.status == 404
    assert error_of(r)["code"] == -32601
    assert len(srv.transport.sessions) == 0


async def test_session_with_modern_header_stays_legacy(srv: Running) -> None:
    sid = await srv.initialize()
    r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid,
                       version=MODERN)
    assert r.status == 200
    assert r.content_type.startswith("text/event-stream")
    result = result_of(r)
    assert result["tools"]
    assert "resultType" not in result and "ttlMs" not in result
    # ...and a modern envelope on that session is refused as a lifecycle confusion.
    r2 = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                         "params": {"_meta": modern_meta()}}, session=sid, version=MODERN)
    assert r2.status == 400
    assert error_of(r2)["code"] == -32600
    assert "legacy lifecycle" in error_of(r2)["message"]


@pytest.mark.parametrize("with_session", [False, True])
async def test_unknown_version_goes_modern_and_gets_32022(srv: Running,
                                                          with_session: bool) -> None:
    headers = {"MCP-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}
    if with_session:
        headers["Mcp-Session-Id"] = await srv.initialize()
    r = await post_modern_raw(srv, modern_body("tools/list", request_id=42), headers)
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32022
    assert err["data"] == {"supported": [MODERN], "requested": "2027-01-01"}
    assert r.json["id"] == 42


async def test_unknown_version_on_get_and_delete_is_405(srv: Running) -> None:
    sid = await srv.initialize()
    for method in ("GET", "DELETE"):
        r = await srv.request(method, None, {"Accept": "text/event-stream",
                                             "Mcp-Session-Id": sid,
                                             "MCP-Protocol-Version": "1999-01-01"})
        assert r.status == 405, method
    assert srv.transport.sessions.get(sid) is not None


async def test_legacy_post_with_envelope_but_no_modern_header_is_32020(srv: Running) -> None:
    sid = await srv.initialize()
    r = await srv.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
                        "params": {"_meta": modern_meta()}}, session=sid)
    assert r.status == 400
    assert error_of(r)["code"] == -32020


# -- protocol_versions: modern only ---------------------------------------------------------------

async def test_modern_only_endpoint() -> None:
    async with running(example_server(), protocol_versions=[MODERN]) as srv:
        for method in ("GET", "DELETE"):
            r = await srv.request(method, None, {"Accept": "text/event-stream",
                                                 "Mcp-Session-Id": "whatever"})
            assert r.status == 405, method
        # Mcp-Session-Id is ignored: never looked up, never minted or echoed.
        r = await srv.modern("tools/list", headers={"Mcp-Session-Id": "no-such-session"})
        assert r.status == 200, r.body
        assert "Mcp-Session-Id" not in r.headers
        assert result_of(r)["resultType"] == "complete"
        # A legacy initialize is refused with 400 naming the supported versions.
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": LEGACY, "capabilities": {},
                           "clientInfo": {"name": "c", "version": "1"}}}
        no_header = await srv.post(init)
        assert no_header.status == 400
        assert error_of(no_header)["code"] == -32022
        assert error_of(no_header)["data"]["supported"] == [MODERN]
        legacy_header = await srv.post(init, version=LEGACY)
        assert legacy_header.status == 400
        assert error_of(legacy_header)["code"] == -32022
        assert error_of(legacy_header)["data"] == {"supported": [MODERN],
                                                   "requested": LEGACY}
        for reply in (no_header, legacy_header):
            assert "Mcp-Session-Id" not in reply.headers
        assert len(srv.transport.sessions) == 0
        # server/discover still works and names only the modern version.
        d = await srv.modern("server/discover")
        assert result_of(d)["supportedVersions"] == [MODERN]


async def test_legacy_only_endpoint_refuses_the_modern_header() -> None:
    async with running(example_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.modern("tools/list")
        assert r.status == 400
        assert error_of(r) == {"code": -32600, "message": (
            "Bad Request: this endpoint does not serve protocol 2026-07-28; "
            "open a session with `initialize`")}  # a client falls back to initialize
        assert "Mcp-Session-Id" not in r.headers
        assert len(srv.transport.sessions) == 0
        legacy_discover = await srv.post({"jsonrpc": "2.0", "id": 1,
                                          "method": "server/discover"})
        assert result_of(legacy_discover)["capabilities"]["tools"]
        sid = await srv.initialize()
        ok = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        assert ok.status == 200 and result_of(ok)["tools"]


async def test_legacy_only_discover_advertises_no_modern_version() -> None:
    async with running(example_server(), protocol_versions=[LEGACY]) as srv:
        r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})
        assert result_of(r)["supportedVersions"] == []
