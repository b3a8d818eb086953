"""The dashboard's JSON API, login, XSRF, read-only mode and metrics, over real HTTP.

Every test starts a real Transport with admin_ui mounted (``admin_support.running_admin``)
and talks to it with httpx, the way an operator's script or browser would.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import httpx
import pytest
from admin_support import (
    BEARER,
    TOKEN,
    initialize,
    listen_request,
    log_in,
    open_session,
    page_xsrf,
    running_admin,
    sse_messages,
    wait_until,
)

import admin_ui
from admin_ui.schemas import FieldErrors, load_limit_changes
from tornado_mcp.options import SPECS_BY_NAME

API_GETS = [
    "api/overview",
    "api/history",
    "api/sessions",
    "api/streams",
    "api/limits",
    "api/sessions/nope",
    "api/streams/nope",
    "api/tools",
    "api/tools/echo",
    "api/principals",
    "api/audit",
    "api/no-such-endpoint",
    "metrics",
]


async def login(client: httpx.AsyncClient, admin: str, name: str = "alice") -> str:
    """Log in through the form like a browser; return the XSRF token for later requests."""
    page = await client.get(f"{admin}/login")
    assert page.status_code == 200
    resp = await log_in(client, admin, name)
    assert resp.status_code == 303, resp.text
    assert resp.headers["Location"] == "/admin/"
    assert "tornado_mcp_admin" in client.cookies
    return await page_xsrf(client, admin)


async def get_json(client: httpx.AsyncClient, url: str, **kw: Any) -> Any:
    resp = await client.get(url, headers=BEARER, **kw)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Content-Type"].startswith("application/json")
    return resp.json()


# -- mounting --------------------------------------------------------------------------------


async def test_mount_requires_a_token_and_a_real_prefix() -> None:
    async with running_admin() as srv:
        with pytest.raises(ValueError, match="token"):
            admin_ui.routes(srv.transport, "/x", token="")
        with pytest.raises(ValueError, match="prefix"):
            admin_ui.routes(srv.transport, "admin", token=TOKEN)
        with pytest.raises(ValueError, match="prefix"):
            admin_ui.routes(srv.transport, "/", token=TOKEN)


# -- authentication ------------------------------------------------------------------------


@pytest.mark.parametrize("path", API_GETS)
async def test_api_refuses_anonymous_and_wrong_tokens_with_401(path: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        anon = await client.get(f"{srv.admin}/{path}")
        assert anon.status_code == 401
        assert anon.json()["error"]
        assert anon.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = await client.get(f"{srv.admin}/{path}", headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 401
        assert "not right" in wrong.json()["error"]
        # A token that shares a prefix with the real one is just as wrong.
        near = await client.get(
            f"{srv.admin}/{path}", headers={"Authorization": f"Bearer {TOKEN[:-1]}"}
        )
        assert near.status_code == 401


async def test_changes_refuse_anonymous_callers() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        before = srv.transport.options.max_sessions
        resp = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 3})
        assert resp.status_code == 401
        resp = await client.delete(f"{srv.admin}/api/sessions/abc")
        assert resp.status_code == 401
        assert srv.transport.options.max_sessions == before


async def test_page_redirects_to_login_and_login_sets_cookie() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        page = await client.get(f"{srv.admin}/")
        assert page.status_code == 302
        assert page.headers["Location"].startswith("/admin/login?next=")
        bare = await client.get(srv.admin)
        assert bare.status_code in (301, 302)

        await login(client, srv.admin)
        cookie = next(c for c in client.cookies.jar if c.name == "tornado_mcp_admin")
        assert cookie.path == "/admin"
        page = await client.get(f"{srv.admin}/")
        assert page.status_code == 200
        assert "Apply changes" in page.text
        assert "Content-Security-Policy" in page.headers
        assert page.headers["X-Frame-Options"] == "DENY"
        # The cookie works for the API too.
        resp = await client.get(f"{srv.admin}/api/overview")
        assert resp.status_code == 200


async def test_wrong_login_token_is_refused_without_a_cookie() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.post(f"{srv.admin}/login", data={"token": "guess"})
        assert resp.status_code == 401
        assert "not right" in resp.text
        assert "tornado_mcp_admin" not in client.cookies


async def test_login_from_another_sites_page_is_refused() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        for header in ({"Origin": "https://evil.example"}, {"Origin": "null"},
                       {"Referer": "https://evil.example/login"}):
            resp = await client.post(f"{srv.admin}/login", data={"token": TOKEN},
                                     headers=header)
            assert resp.status_code == 403, header
            assert "tornado_mcp_admin" not in client.cookies
        own = srv.base.removeprefix("http://")
        resp = await client.post(f"{srv.admin}/login", data={"token": TOKEN},
                                 headers={"Origin": f"http://{own}"})
        assert resp.status_code == 303
        assert "tornado_mcp_admin" in client.cookies


async def test_login_never_redirects_off_the_dashboard() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await log_in(client, srv.admin, next_="//evil.example/")
        assert resp.status_code == 303
        assert resp.headers["Location"] == "/admin/"


async def test_forged_cookie_is_not_a_login() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        client.cookies.set("tornado_mcp_admin", "2|1:0|10:1700000000|17:tornado_mcp_admin|"
                           "8:YWxpY2U=|" + "0" * 64, domain="127.0.0.1", path="/admin")
        resp = await client.get(f"{srv.admin}/api/overview")
        assert resp.status_code == 401


# -- XSRF ------------------------------------------------------------------------------------


async def test_cookie_requests_need_xsrf_but_bearer_requests_do_not() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        xsrf = await login(client, srv.admin)
        url = f"{srv.admin}/api/limits"

        refused = await client.patch(url, json={"max_sessions": 7})
        assert refused.status_code == 403
        assert "XSRF" in refused.json()["error"]
        assert srv.transport.options.max_sessions != 7

        wrong = await client.patch(url, json={"max_sessions": 7},
                                   headers={"X-XSRFToken": "2|00000000|" + "0" * 32 + "|1"})
        assert wrong.status_code == 403

        ok = await client.patch(url, json={"max_sessions": 7}, headers={"X-XSRFToken": xsrf})
        assert ok.status_code == 200, ok.text
        assert srv.transport.options.max_sessions == 7

    async with running_admin() as srv, httpx.AsyncClient() as client:
        ok = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 8},
                                headers=BEARER)
        assert ok.status_code == 200, ok.text
        assert srv.transport.options.max_sessions == 8


async def test_bearer_works_when_the_application_enforces_xsrf_itself() -> None:
    settings = {"xsrf_cookies": True, "cookie_secret": "app-secret"}
    async with running_admin(app_settings=settings) as srv, httpx.AsyncClient() as client:
        ok = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 9},
                                headers=BEARER)
        assert ok.status_code == 200, ok.text
        xsrf = await login(client, srv.admin)
        refused = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 10})
        assert refused.status_code == 403
        ok = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 10},
                                headers={"X-XSRFToken": xsrf})
        assert ok.status_code == 200


# -- overview, sessions ----------------------------------------------------------------------


async def test_sessions_show_what_real_clients_retain() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        ids = [await open_session(client, srv.mcp, f"client-{n}") for n in range(3)]

        overview = await get_json(client, f"{srv.admin}/api/overview")
        assert overview["sessions"] == {"count": 3, "limit": 10_000}
        assert overview["retained"]["bytes"] > 0
        assert overview["retained"]["values"] > 0
        assert overview["process"]["rss_bytes"] > 0
        assert overview["process"]["threads"] >= 1
        assert overview["bounds"]["session_retained_values"] == 1024
        assert set(overview["refusals"]) >= {"max_sessions", "max_request_bytes"}

        page = await get_json(client, f"{srv.admin}/api/sessions")
        assert page["total"] == page["matched"] == 3
        assert {s["id"] for s in page["items"]} == set(ids)
        for s in page["items"]:
            assert s["client_name"].startswith("client-")
            assert s["client_version"] == "1.0"
            assert s["protocol_version"] == "2025-11-25"
            assert 0 < s["retained_bytes"] <= 65_536
            assert 0 < s["retained_values"] <= 1024

        one = await get_json(client, f"{srv.admin}/api/sessions",
                             params={"q": "CLIENT-1"})
        assert [s["client_name"] for s in one["items"]] == ["client-1"]
        assert one["matched"] == 1 and one["total"] == 3

        asc = await get_json(client, f"{srv.admin}/api/sessions",
                             params={"sort": "client_name", "order": "asc", "limit": 2})
        assert [s["client_name"] for s in asc["items"]] == ["client-0", "client-1"]
        rest = await get_json(client, f"{srv.admin}/api/sessions",
                              params={"sort": "client_name", "order": "asc", "offset": 2})
        assert [s["client_name"] for s in rest["items"]] == ["client-2"]

        detail = await get_json(client, f"{srv.admin}/api/sessions/{ids[0]}")
        assert detail["id"] == ids[0]
        assert detail["bounds"]["session_retained_bytes"] == 65_536


async def test_bad_list_queries_get_a_message_per_field() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.get(
            f"{srv.admin}/api/sessions",
            params={"sort": "password", "order": "up", "limit": "0", "offset": "x"},
            headers=BEARER,
        )
        assert resp.status_code == 400
        errors = resp.json()["errors"]
        assert set(errors) == {"sort", "order", "limit", "offset"}
        assert all(isinstance(m, str) and m for m in errors.values())


async def test_ending_a_session_makes_its_id_unknown() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        sid = await open_session(client, srv.mcp, "doomed")
        resp = await client.delete(f"{srv.admin}/api/sessions/{sid}", headers=BEARER)
        assert resp.status_code == 200
        assert resp.json() == {"id": sid, "ended": True}
        after = await client.post(
            srv.mcp,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream",
                     "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"},
        )
        assert after.status_code == 404
        again = await client.delete(f"{srv.admin}/api/sessions/{sid}", headers=BEARER)
        assert again.status_code == 404
        overview = await get_json(client, f"{srv.admin}/api/overview")
        assert overview["changes"][0]["action"] == "end_session"
        assert overview["changes"][0]["actor"].startswith("admin:api@")


# -- limits ----------------------------------------------------------------------------------


async def test_limits_lists_every_live_option() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        body = await get_json(client, f"{srv.admin}/api/limits")
        assert body["limits"] == srv.transport.options.live_values()
        assert {s["name"] for s in body["specs"]} == set(body["limits"])
        assert "stateless" in body["fixed"]
        assert body["read_only"] is False


@pytest.mark.parametrize(
    ("changes", "fields"),
    [
        ({"max_sessions": 0}, {"max_sessions"}),
        ({"max_sessions": -5, "max_request_bytes": None}, {"max_sessions", "max_request_bytes"}),
        ({"max_sessions": "10"}, {"max_sessions"}),
        ({"max_sessions": True}, {"max_sessions"}),
        ({"max_sessions": 1.5}, {"max_sessions"}),
        ({"session_idle_timeout": 0}, {"session_idle_timeout"}),
        ({"session_idle_timeout": "soon"}, {"session_idle_timeout"}),
        ({"stateless": True}, {"stateless"}),
        ({"no_such_limit": 1}, {"no_such_limit"}),
        ({"max_sessions": 5, "listen_keepalive_interval": -1}, {"listen_keepalive_interval"}),
    ],
)
async def test_bad_limit_values_get_400_with_a_message_per_field(
    changes: dict[str, Any], fields: set[str]
) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        before = srv.transport.options.live_values()
        resp = await client.patch(f"{srv.admin}/api/limits", json=changes, headers=BEARER)
        assert resp.status_code == 400
        body = resp.json()
        assert set(body["errors"]) == fields
        assert all(isinstance(m, str) and m for m in body["errors"].values())
        assert srv.transport.options.live_values() == before  # all or nothing


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"{}", b"null"])
async def test_limits_body_must_be_a_json_object_naming_something(raw: bytes) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.patch(f"{srv.admin}/api/limits", content=raw, headers=BEARER)
        assert resp.status_code == 400
        assert resp.json()["error"]


async def test_lowered_cap_refuses_new_sessions_and_keeps_live_ones() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        first = await open_session(client, srv.mcp, "first")
        second = await open_session(client, srv.mcp, "second")
        resp = await client.patch(f"{srv.admin}/api/limits",
                                  json={"max_sessions": 1, "session_idle_timeout": None},
                                  headers=BEARER)
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert body["changed"]["max_sessions"] == {"old": 10_000, "new": 1}
        assert body["changed"]["session_idle_timeout"] == {"old": 1800.0, "new": None}
        assert srv.transport.options.max_sessions == 1

        refused = await initialize(client, srv.mcp, "third")
        assert refused.status_code == 503

        # Both sessions opened before the change still work.
        for sid in (first, second):
            ok = await client.post(
                srv.mcp,
                json={"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream",
                         "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"},
            )
            assert ok.status_code == 200, ok.text

        overview = await get_json(client, f"{srv.admin}/api/overview")
        assert overview["sessions"] == {"count": 2, "limit": 1}
        assert overview["refusals"]["max_sessions"] >= 1
        change = overview["changes"][0]
        assert change["action"] == "limits"
        assert change["actor"].startswith("admin:api@127.0.0.1")
        assert change["detail"]["max_sessions"] == {"old": 10_000, "new": 1}


async def test_lowered_request_bytes_refuse_larger_posts() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.patch(f"{srv.admin}/api/limits",
                                  json={"max_request_bytes": 100}, headers=BEARER)
        assert resp.status_code == 200
        refused = await initialize(client, srv.mcp, "x" * 200)
        assert refused.status_code == 413


# -- read-only -------------------------------------------------------------------------------


async def test_read_only_refuses_every_change_with_403() -> None:
    async with running_admin(read_only=True) as srv, httpx.AsyncClient() as client:
        sid = await open_session(client, srv.mcp, "kept")
        before = srv.transport.options.live_values()
        for method, path, body in [
            ("PATCH", "api/limits", {"max_sessions": 1}),
            ("DELETE", f"api/sessions/{sid}", None),
            ("DELETE", "api/streams/whatever", None),
        ]:
            resp = await client.request(method, f"{srv.admin}/{path}", json=body,
                                        headers=BEARER)
            assert resp.status_code == 403, (method, path)
            assert "read-only" in resp.json()["error"]
        assert srv.transport.options.live_values() == before
        page = await get_json(client, f"{srv.admin}/api/sessions")
        assert [s["id"] for s in page["items"]] == [sid]
        limits = await get_json(client, f"{srv.admin}/api/limits")
        assert limits["read_only"] is True

        # The page hides the controls, but logging in and out still works.
        await login(client, srv.admin)
        html = (await client.get(f"{srv.admin}/")).text
        assert "Apply changes" not in html
        assert "read-only" in html
        assert ">End<" not in html


# -- listen streams --------------------------------------------------------------------------


async def test_streams_are_listed_detailed_and_closed_gracefully() -> None:
    async with running_admin() as srv, httpx.AsyncClient(timeout=20) as client:
        headers, body = listen_request("listen-1")
        async with client.stream("POST", srv.mcp, json=body, headers=headers) as resp:
            assert resp.status_code == 200
            chunks: list[str] = []

            async def read_all() -> None:
                async for text in resp.aiter_text():
                    chunks.append(text)

            reader = asyncio.create_task(read_all())

            async def listed() -> bool:
                page = await get_json(client, f"{srv.admin}/api/streams")
                return bool(page["total"] == 1)

            await wait_until(listed, what="the listen stream to be listed")
            page = await get_json(client, f"{srv.admin}/api/streams")
            (stream,) = page["items"]
            assert stream["subscription_id"] == "listen-1"
            assert stream["honored"].get("toolsListChanged") is True
            assert "uris" not in stream
            overview = await get_json(client, f"{srv.admin}/api/overview")
            assert overview["streams"] == {"count": 1, "limit": 1000}

            detail = await get_json(client, f"{srv.admin}/api/streams/{stream['id']}")
            assert detail["uris"] == []
            assert detail["bounds"]["stream_uri_count"] == 1024

            closed = await client.delete(f"{srv.admin}/api/streams/{stream['id']}",
                                         headers=BEARER)
            assert closed.status_code == 200
            assert closed.json() == {"id": stream["id"], "closed": True}
            await asyncio.wait_for(reader, 10)  # the response ends after the final result

        messages = sse_messages("".join(chunks))
        assert any(m.get("id") == "listen-1" and "result" in m for m in messages), chunks
        page = await get_json(client, f"{srv.admin}/api/streams")
        assert page["total"] == 0
        gone = await client.delete(f"{srv.admin}/api/streams/{stream['id']}", headers=BEARER)
        assert gone.status_code == 404


# -- metrics ---------------------------------------------------------------------------------


def parse_metrics(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


async def test_metrics_export_usage_next_to_limits_without_session_labels() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        sid = await open_session(client, srv.mcp, "scraped")
        await client.patch(f"{srv.admin}/api/limits",
                           json={"max_sessions": 1, "max_listen_subscriptions": None},
                           headers=BEARER)
        assert (await initialize(client, srv.mcp, "refused")).status_code == 503

        resp = await client.get(f"{srv.admin}/metrics", headers=BEARER)
        assert resp.status_code == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = resp.text
        assert sid not in text and "scraped" not in text
        m = parse_metrics(text)
        assert m["tornado_mcp_sessions"] == 1
        assert m["tornado_mcp_option_max_sessions"] == 1
        assert math.isinf(m["tornado_mcp_option_max_listen_subscriptions"])
        assert m["tornado_mcp_largest_session_retained_bytes"] > 0
        assert m['tornado_mcp_refusals_total{bound="max_sessions"}'] >= 1
        assert m["tornado_mcp_requests_total"] >= 1
        assert m["process_resident_memory_bytes"] > 0
        for spec in SPECS_BY_NAME.values():
            if spec.live and spec.kind != "tool_bounds":  # per tool: in GET api/tools
                assert f"tornado_mcp_option_{spec.name}" in m
        assert "# TYPE tornado_mcp_refusals_total counter" in text
        lines = text.splitlines()
        # The value (1) is checked above; the sample line's spelling of it is the library's.
        usage = next(i for i, line in enumerate(lines) if line.startswith("tornado_mcp_sessions "))
        assert lines[usage + 3].startswith("tornado_mcp_option_max_sessions ")


# -- errors ----------------------------------------------------------------------------------


async def test_errors_are_json_and_never_tracebacks() -> None:
    async with running_admin(app_settings={"debug": False, "serve_traceback": True}) as srv, \
            httpx.AsyncClient() as client:
        missing = await client.get(f"{srv.admin}/api/nothing/here", headers=BEARER)
        assert missing.status_code == 404
        assert missing.json()["error"]
        gone = await client.get(f"{srv.admin}/api/sessions/unknown", headers=BEARER)
        assert gone.status_code == 404
        history = await client.get(f"{srv.admin}/api/history", params={"since": "x"},
                                   headers=BEARER)
        assert history.status_code == 400
        assert history.json()["errors"] == {"since": "Must be a number."}

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("secret internals")

        srv.transport.snapshot = broken  # type: ignore[method-assign]
        crashed = await client.get(f"{srv.admin}/api/overview", headers=BEARER)
        assert crashed.status_code == 500
        assert crashed.json()["error"].startswith("The dashboard hit an internal error")
        for resp in (missing, gone, history, crashed):
            assert "Traceback" not in resp.text
            assert "secret internals" not in resp.text


async def test_history_fills_while_the_loop_runs() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:

        async def sampled() -> bool:
            body = await get_json(client, f"{srv.admin}/api/history")
            return len(body["samples"]) >= 2

        await wait_until(sampled, timeout=5, what="two history samples")
        body = await get_json(client, f"{srv.admin}/api/history")
        first, last = body["samples"][0], body["samples"][-1]
        assert set(first) == {"t", "sessions", "streams", "retained_bytes", "rss_bytes",
                              "cpu_percent", "request_rate"}
        newer = await get_json(client, f"{srv.admin}/api/history",
                               params={"since": str(first["t"])})
        assert all(s["t"] > first["t"] for s in newer["samples"])
        assert newer["samples"][-1]["t"] >= last["t"]


# -- the schema on its own -------------------------------------------------------------------


def test_limit_schema_accepts_what_the_options_accept() -> None:
    assert load_limit_changes({"max_sessions": 5.0}) == {"max_sessions": 5}
    assert load_limit_changes({"max_sessions": None}) == {"max_sessions": None}
    assert load_limit_changes({"session_idle_timeout": 2}) == {"session_idle_timeout": 2}
    with pytest.raises(FieldErrors) as info:
        load_limit_changes({"max_request_bytes": None, "sse_keepalive_interval": float("nan")})
    assert set(info.value.errors) == {"max_request_bytes", "sse_keepalive_interval"}
    assert info.value.errors["max_request_bytes"] == "may not be none"  # the library's
