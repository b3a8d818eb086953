"""The dashboard's governance API: GET api/tools, PATCH api/tools/<name> (validated, all or
nothing, 404 for an unknown tool, XSRF-checked with a login cookie, refused read-only,
recorded), GET api/principals and GET api/audit with its filters."""

from __future__ import annotations

from typing import Any

import httpx
from admin_support import BEARER, initialize, log_in, page_xsrf, running_admin

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def call_echo(client: httpx.AsyncClient, mcp: str, text: str, request_id: int = 1) -> Any:
    r = await client.post(mcp, json={
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}},
        headers={**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28",
                 "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
    assert r.status_code == 200, r.text
    return r


async def test_tools_list_every_tool_with_statistics_and_bounds() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        for i in range(3):
            await call_echo(client, srv.mcp, "hi", i)
        body = (await client.get(f"{srv.admin}/api/tools", headers=BEARER)).json()
        (echo,) = body["items"]
        assert {k: echo[k] for k in ("name", "calls", "errors", "refusals", "in_flight",
                                     "timeout", "max_concurrency")} == {
            "name": "echo", "calls": 3, "errors": 0, "refusals": 0, "in_flight": 0,
            "timeout": None, "max_concurrency": None}
        assert echo["p50_ms"] is not None and echo["p99_ms"] >= echo["p50_ms"]
        one = (await client.get(f"{srv.admin}/api/tools/echo", headers=BEARER)).json()
        assert one["calls"] == 3
        missing = await client.get(f"{srv.admin}/api/tools/nope", headers=BEARER)
        assert missing.status_code == 404 and "No such tool: nope" in missing.json()["error"]


async def test_patch_overrides_bounds_live_and_null_removes_them() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        url = f"{srv.admin}/api/tools/echo"
        r = await client.patch(url, json={"timeout": 2.5, "max_concurrency": 4},
                               headers=BEARER)
        assert r.status_code == 200, r.text
        assert (r.json()["timeout"], r.json()["max_concurrency"], r.json()["changed"]) \
            == (2.5, 4, True)
        assert srv.transport.options.tool_bounds == {"echo": {"timeout": 2.5,
                                                              "max_concurrency": 4}}
        r = await client.patch(url, json={"timeout": None}, headers=BEARER)
        assert (r.json()["timeout"], r.json()["max_concurrency"]) == (None, 4)
        overview = (await client.get(f"{srv.admin}/api/overview", headers=BEARER)).json()
        change = overview["changes"][0]
        assert change["action"] == "limits" and "tool_bounds" in change["detail"]


async def test_bad_patches_are_400_naming_the_field_and_change_nothing() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        url = f"{srv.admin}/api/tools/echo"
        await client.patch(url, json={"max_concurrency": 2}, headers=BEARER)
        for body, field, message in (
                ({"timeout": -1}, "timeout", "must be a positive number of seconds or null"),
                ({"timeout": "soon"}, "timeout", "must be a positive number of seconds"),
                ({"max_concurrency": 0}, "max_concurrency", "must be a positive integer"),
                ({"max_concurrency": 2.5}, "max_concurrency", "must be a positive integer"),
                ({"max_concurrency": True}, "max_concurrency", "must be a positive integer"),
                ({"retries": 3, "timeout": 1}, "retries", "unknown field")):
            r = await client.patch(url, json=body, headers=BEARER)
            assert r.status_code == 400, (body, r.text)
            assert message in r.json()["errors"][field], r.json()
        for raw in (b"[]", b"{}", b"null"):
            r = await client.patch(url, content=raw, headers=BEARER)
            assert r.status_code == 400
        r = await client.patch(url, content=b"{not json", headers=BEARER)
        assert r.status_code == 400
        assert srv.transport.options.tool_bounds == {"echo": {"max_concurrency": 2}}
        r = await client.patch(f"{srv.admin}/api/tools/nope", json={"timeout": 1},
                               headers=BEARER)
        assert r.status_code == 404
        assert srv.transport.options.tool_bounds == {"echo": {"max_concurrency": 2}}


async def test_patch_with_a_login_cookie_needs_the_xsrf_token_and_read_only_refuses() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        await log_in(client, srv.admin)
        xsrf = await page_xsrf(client, srv.admin)
        url = f"{srv.admin}/api/tools/echo"
        assert (await client.patch(url, json={"timeout": 1})).status_code == 403
        ok = await client.patch(url, json={"timeout": 1}, headers={"X-XSRFToken": xsrf})
        assert ok.status_code == 200
        assert srv.transport.options.tool_bounds == {"echo": {"timeout": 1.0}}
    async with running_admin(read_only=True) as srv, httpx.AsyncClient() as client:
        r = await client.patch(f"{srv.admin}/api/tools/echo", json={"timeout": 1},
                               headers=BEARER)
        assert r.status_code == 403
        assert srv.transport.options.tool_bounds == {}


async def test_principals_and_the_audit_trail_with_filters() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        assert (await initialize(client, srv.mcp)).status_code == 200
        for i in range(3):
            await call_echo(client, srv.mcp, "secret-value", i)
        principals = (await client.get(f"{srv.admin}/api/principals",
                                       headers=BEARER)).json()["items"]
        assert [(p["principal"], p["calls"], p["in_flight"]) for p in principals] == [
            ("address:127.0.0.1", 3, 0)]
        assert principals[0]["last_seen"] > 0
        audit = await client.get(f"{srv.admin}/api/audit",
                                 params={"tool": "echo", "outcome": "ok", "limit": "2"},
                                 headers=BEARER)
        items = audit.json()["items"]
        assert [i["request_id"] for i in items] == [2, 1]
        assert "secret-value" not in audit.text
        none = await client.get(f"{srv.admin}/api/audit", params={"principal": "nobody"},
                                headers=BEARER)
        assert none.json()["items"] == []
        for params, field in (({"outcome": "maybe"}, "outcome"), ({"limit": "x"}, "limit"),
                              ({"limit": "0"}, "limit"), ({"limit": "1001"}, "limit")):
            bad = await client.get(f"{srv.admin}/api/audit", params=params, headers=BEARER)
            assert bad.status_code == 400 and field in bad.json()["errors"], params


async def test_metrics_export_a_latency_histogram_and_outcomes_per_tool() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        for i in range(2):
            await call_echo(client, srv.mcp, "hi", i)
        text = (await client.get(f"{srv.admin}/metrics", headers=BEARER)).text
        lines = text.splitlines()
        assert "# TYPE tornado_mcp_tool_call_duration_seconds histogram" in lines
        assert 'tornado_mcp_tool_call_duration_seconds_count{tool="echo"} 2.0' in lines
        assert 'tornado_mcp_tool_call_duration_seconds_bucket{le="+Inf",tool="echo"} 2.0' \
            in lines
        buckets = [line for line in lines
                   if line.startswith("tornado_mcp_tool_call_duration_seconds_bucket")]
        assert len(buckets) == 18  # 17 bounds and +Inf, cumulative
        counts = [float(line.rsplit(" ", 1)[1]) for line in buckets]
        assert counts == sorted(counts)
        assert 'tornado_mcp_tool_calls_total{outcome="ok",tool="echo"} 2.0' in lines
        assert 'tornado_mcp_tool_calls_total{outcome="refused",tool="echo"} 0.0' in lines
        assert "principal=" not in text and "127.0.0.1" not in text  # no per-caller label
