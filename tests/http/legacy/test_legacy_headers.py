"""The legacy era's request headers: ``Accept``, ``Content-Type``, the HTTP method and
``MCP-Protocol-Version``.
"""

from __future__ import annotations

import json

import pytest
from mcp_http import (
    assert_refused,
    error_of,
    example_server,
    final,
    legacy_headers,
    raw_post,
    rpc,
    running,
)

# -- Accept, Content-Type, methods ----------------------------------------------------------------

@pytest.mark.parametrize("accept", [None, "application/json", "text/event-stream", "text/html"])
async def test_post_accept_missing_a_type_is_406(accept: str | None) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await raw_post(srv, legacy_headers(sid, Accept=accept), json.dumps(rpc("ping")))
        assert_refused(r, 406, -32600,
                       "Accept header must include application/json and text/event-stream")


@pytest.mark.parametrize("accept", ["application/json, text/event-stream",
                                    "application/json;q=0.9, text/event-stream;q=0.5",
                                    "*/*", "APPLICATION/JSON, Text/Event-Stream"])
async def test_post_accept_variants_are_accepted(accept: str) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"Accept": accept})
        assert final(r)["result"] == {}


async def test_json_response_mode_needs_only_application_json() -> None:
    async with running(example_server(), json_response=True) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"Accept": "application/json"})
        assert r.status == 200 and r.content_type.startswith("application/json")
        assert r.json == {"jsonrpc": "2.0", "id": 1, "result": {}}
        bad = await srv.post(rpc("ping"), session=sid, headers={"Accept": "text/event-stream"})
        assert_refused(bad, 406, -32600, "Accept header must include application/json")


@pytest.mark.parametrize("ctype", [None, "text/plain", "application/x-www-form-urlencoded",
                                   "application/jsonx"])
async def test_content_type_other_than_json_is_415(ctype: str | None) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        headers = legacy_headers(sid, **{"Content-Type": ctype})
        r = await raw_post(srv, headers, json.dumps(rpc("ping")))
        assert_refused(r, 415, -32600,
                       "Unsupported Media Type: Content-Type must be application/json")


async def test_content_type_with_charset_is_accepted() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid,
                           headers={"Content-Type": "application/json; charset=utf-8"})
        assert final(r)["result"] == {}


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
async def test_unknown_http_method_is_405_with_a_jsonrpc_body(method: str) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.request(method, b"{}", legacy_headers(sid))
        assert_refused(r, 405, -32600, "Method not allowed")


# -- MCP-Protocol-Version -------------------------------------------------------------------------

@pytest.mark.parametrize("header", ["1999-01-01", "not-a-version"])
async def test_unsupported_protocol_version_header_is_400(header: str) -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, version=header)
        assert r.status == 400
        err = error_of(r)
        assert err["code"] == -32022 and err["data"]["requested"] == header


async def test_empty_protocol_version_header_is_400_invalid_request() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("ping"), session=sid, headers={"MCP-Protocol-Version": ""})
        assert_refused(r, 400, -32600, "Unsupported protocol version")


async def test_2025_03_26_header_and_no_header_accepted_on_a_2025_11_25_session() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize("2025-11-25")
        r = await srv.post(rpc("ping"), session=sid, version="2025-03-26")
        assert final(r)["result"] == {}
        h = legacy_headers(sid, **{"MCP-Protocol-Version": None})
        r2 = await raw_post(srv, h, json.dumps(rpc("ping", request_id=3)))
        assert final(r2) == {"jsonrpc": "2.0", "id": 3, "result": {}}
