"""Security review of the admin dashboard, over real HTTP (``admin_support.running_admin``).

The review found five defects; four are fixed and their tests pass. The one still marked
``xfail(strict=True)`` is a known limitation (defence in depth; see its reason). The other
tests pin down what the review checked and found sound.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from pathlib import Path

import httpx
import pytest
from admin_support import BEARER, TOKEN, log_in, open_session, page_xsrf, running_admin
from tornado.web import create_signed_value

import admin_ui
from admin_ui.auth import COOKIE_NAME

ADMIN_DIR = Path(admin_ui.__file__).resolve().parent

API_ROUTES = [
    "api/overview", "api/history", "api/sessions", "api/streams", "api/limits",
    "api/sessions/x", "api/streams/x", "api/nope", "metrics",
]


async def login(client: httpx.AsyncClient, admin: str, name: str = "alice",
                next_: str = "/admin/") -> httpx.Response:
    page = await client.get(f"{admin}/login")
    assert page.status_code == 200, page.status_code
    return await log_in(client, admin, name, next_)


async def logged_in(client: httpx.AsyncClient, admin: str) -> str:
    resp = await login(client, admin)
    assert resp.status_code == 303, resp.text
    assert client.cookies.get(COOKIE_NAME)
    return await page_xsrf(client, admin)


# ================================================================================================
# Defects found in the review (fixed, except the one marked xfail)
# ================================================================================================


@pytest.mark.xfail(strict=True, reason=(
    "Low (defence in depth): admin handlers are not @stream_request_body, so Tornado "
    "buffers an anonymous body (up to HTTPServer max_body_size, 100 MB by default) before "
    "prepare() refuses it, and MAX_JSON_BODY is checked only after it is all in memory. "
    "The app's default 404 handler buffers the same way, so the full fix also needs "
    "HTTPServer(max_body_size=...) at the application level"))
async def test_anonymous_body_is_refused_before_it_is_read() -> None:
    async with running_admin() as srv:
        host, port = srv.base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            # Announce a 50 MB body and send none of it: a handler that refuses before
            # reading answers at once; one that buffers first waits for the 50 MB.
            writer.write(b"PATCH /admin/api/limits HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 50000000\r\n\r\n")
            await writer.drain()
            try:
                status = await asyncio.wait_for(reader.readline(), 2.0)
            except TimeoutError:
                status = b""
        finally:
            writer.close()
        assert status.split(b" ")[1:2] in ([b"401"], [b"413"]), status


@pytest.mark.parametrize("path", [
    "static/no-such-file.js",   # StaticFileHandler 404
    "static/",                  # StaticFileHandler 403 ("is not a file")
    "static/..%2f__init__.py",  # StaticFileHandler 403 ("not in root static directory")
    "metrics/",                 # under the prefix but unrouted: the app's default 404
])
async def test_no_traceback_anywhere_under_the_prefix(path: str) -> None:
    settings = {"debug": False, "serve_traceback": True}
    async with running_admin(app_settings=settings) as srv, httpx.AsyncClient() as client:
        resp = await client.get(f"{srv.admin}/{path}")
        assert resp.status_code in (403, 404)
        assert "Traceback" not in resp.text
        assert "site-packages" not in resp.text and str(ADMIN_DIR) not in resp.text
        assert resp.headers.get("X-Content-Type-Options") == "nosniff"


async def test_cookie_is_dead_after_logout() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        xsrf = await logged_in(client, srv.admin)
        stolen = client.cookies.get(COOKIE_NAME)
        out = await client.post(f"{srv.admin}/logout", data={"_xsrf": xsrf})
        assert out.status_code == 303
        async with httpx.AsyncClient(cookies={COOKIE_NAME: stolen}) as replay:
            resp = await replay.get(f"{srv.admin}/api/overview")
            assert resp.status_code == 401


async def test_dashboard_refuses_foreign_host_like_the_mcp_endpoint() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        evil = {"Host": "attacker.example"}
        mcp = await client.post(srv.mcp, json={}, headers=evil)
        assert mcp.status_code == 403  # the transport protects itself...
        page = await client.get(f"{srv.admin}/login", headers=evil)
        assert page.status_code == 403  # ...the dashboard should too


@pytest.mark.parametrize("target", ["/admin/../evil", "/admin/%2e%2e/evil",
                                    "/admin/./../mcp"])
async def test_login_next_cannot_leave_the_dashboard_by_dot_segments(target: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await login(client, srv.admin, next_=target)
        assert resp.status_code == 303
        assert resp.headers["Location"] == "/admin/"


# ================================================================================================
# Checked and found sound (regression guards)
# ================================================================================================


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PUT", "POST", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", API_ROUTES)
async def test_every_method_on_every_api_route_needs_auth(method: str, path: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.request(method, f"{srv.admin}/{path}")
        assert resp.status_code == 401, (method, path, resp.status_code)


@pytest.mark.parametrize("path", [
    "/admin/api/overview/", "/admin/api/sessions/", "/admin/API/overview", "/Admin/api/overview",
    "/admin//api/overview", "/admin/./api/overview", "/admin/api/sessions/..%2Flimits",
    "/admin/api/%6Fverview", "/admin/static/..%2F..%2Fauth.py", "/admin/static/..%2Fstate.py",
])
async def test_path_tricks_never_reach_data_anonymously(path: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        # httpx would normalise dot segments; send the raw path.
        resp = await client.send(client.build_request("GET", srv.base + path))
        assert resp.status_code in (401, 403, 404), (path, resp.status_code)
        assert '"sessions"' not in resp.text and "Gatekeeper" not in resp.text


async def test_pages_redirect_anonymous_browsers_for_every_method() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        for method in ("GET", "HEAD", "POST", "OPTIONS"):
            for path in ("/", "/logout"):
                resp = await client.request(method, f"{srv.admin}{path}")
                assert resp.status_code == 302, (method, path)
                assert resp.headers["Location"].startswith("/admin/login")


async def test_login_cookie_attributes_and_signature() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await login(client, srv.admin)
        header = next(h for h in resp.headers.get_list("set-cookie")
                      if h.startswith(COOKIE_NAME + "="))
        lowered = header.lower()
        assert "httponly" in lowered and "samesite=strict" in lowered
        assert "path=/admin" in lowered and "expires=" in lowered
        assert "secure" not in lowered  # plain HTTP here; Secure is set over https

        # A cookie signed by another mount (another secret) is not a login here.
        other = admin_ui.AdminState(srv.transport, "/other", TOKEN, False)
        forged = other.gatekeeper.sign("mallory").decode()
        async with httpx.AsyncClient(cookies={COOKIE_NAME: forged}) as c2:
            assert (await c2.get(f"{srv.admin}/api/overview")).status_code == 401


async def test_expired_cookie_is_refused() -> None:
    async with running_admin() as srv:
        # This mount's gatekeeper, found through the application's router.
        app = srv.http_server.request_callback
        rules = [r for host in app.default_router.rules  # type: ignore[attr-defined]
                 for r in getattr(host.target, "rules", [])]
        gate = next(r.target_kwargs["admin"].gatekeeper for r in rules
                    if "admin" in (r.target_kwargs or {}))
        gate._live["n1"] = time.time()  # a live login, so only the age can refuse it
        old = create_signed_value(gate._secret, COOKIE_NAME, "n1:alice",
                                  clock=lambda: time.time() - 2 * 86400)
        fresh = create_signed_value(gate._secret, COOKIE_NAME, "n1:alice")
        async with httpx.AsyncClient(cookies={COOKIE_NAME: old.decode()}) as c:
            assert (await c.get(f"{srv.admin}/api/overview")).status_code == 401
        async with httpx.AsyncClient(cookies={COOKIE_NAME: fresh.decode()}) as c:
            assert (await c.get(f"{srv.admin}/api/overview")).status_code == 200


async def test_cookie_changes_need_xsrf_and_wrong_bearer_beats_cookie() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        sid = await open_session(client, srv.mcp, "victim")
        xsrf = await logged_in(client, srv.admin)
        # DELETE with the cookie only (what a forged request would carry).
        resp = await client.delete(f"{srv.admin}/api/sessions/{sid}")
        assert resp.status_code == 403
        assert "Traceback" not in resp.text and resp.json()["error"]
        # A bogus bearer header does not switch XSRF off for the cookie.
        resp = await client.delete(f"{srv.admin}/api/sessions/{sid}",
                                   headers={"Authorization": "Bearer wrong"})
        assert resp.status_code == 401
        resp = await client.delete(f"{srv.admin}/api/sessions/{sid}",
                                   headers={"Authorization": "Basic Zm9vOmJhcg=="})
        assert resp.status_code == 403
        page = await client.get(f"{srv.admin}/api/sessions", headers=BEARER)
        assert [s["id"] for s in page.json()["items"]] == [sid]
        # Logout is a POST that needs the XSRF token too.
        out = await client.post(f"{srv.admin}/logout")
        assert out.status_code == 403
        assert (await client.get(f"{srv.admin}/api/overview")).status_code == 200
        out = await client.post(f"{srv.admin}/logout", data={"_xsrf": xsrf})
        assert out.status_code == 303


@pytest.mark.parametrize("target", [
    "//evil.example/", "https://evil.example/", "/admin\\@evil.example", "/admin/\\evil",
    "/\\evil.example", "/adminx/", "javascript:alert(1)", "/admin", " /admin/",
])
async def test_login_next_is_never_an_open_redirect(target: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await login(client, srv.admin, next_=target)
        assert resp.status_code == 303
        location = resp.headers["Location"]
        parts = urllib.parse.urlsplit(location)
        assert not parts.scheme and not parts.netloc and location.startswith("/admin/")


async def test_header_injection_through_next_is_impossible() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await login(client, srv.admin, next_="/admin/\r\nSet-Cookie: x=1")
        assert "x=1" not in " ".join(resp.headers.get_list("set-cookie"))
        assert "\n" not in resp.headers.get("Location", "")


async def test_hostile_names_are_escaped_on_the_page_and_never_html_in_js() -> None:
    hostile = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    async with running_admin() as srv, httpx.AsyncClient() as client:
        await open_session(client, srv.mcp, hostile)
        await logged_in(client, srv.admin)
        page = await client.get(f"{srv.admin}/")
        assert "<img src=x" not in page.text and "<script>alert" not in page.text
        login_page = await client.get(f"{srv.admin}/login?next=" +
                                      urllib.parse.quote('/admin/"><script>x</script>'))
        assert "<script>x" not in login_page.text
    # The page's script builds every node with textContent/setAttribute, never markup.
    js = (ADMIN_DIR / "static" / "admin.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "javascript:", "href"):
        assert sink not in js, sink
    for template in (ADMIN_DIR / "templates").glob("*.html"):
        text = template.read_text()
        assert "|safe" not in text.replace(" ", "") or "xsrf_form_html|safe" in \
            text.replace(" ", "")
        assert "http://" not in text and "https://" not in text  # no CDN


async def test_csp_is_strict_and_on_every_dashboard_answer() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        for path in ("login", "api/overview", "metrics", ""):
            resp = await client.get(f"{srv.admin}/{path}")
            csp = resp.headers["Content-Security-Policy"]
            assert "default-src 'none'" in csp and "script-src 'self'" in csp
            assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
            assert "frame-ancestors 'none'" in csp and "http" not in csp
            assert resp.headers["X-Frame-Options"] == "DENY"
            assert resp.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(("params", "status"), [
    ({"q": "x" * 201}, 400),
    ({"limit": "501"}, 400),
    ({"limit": "9" * 5000}, 400),
    ({"offset": "9" * 5000}, 400),
    ({"offset": str(10**18)}, 200),
    ({"sort": "__class__"}, 400),
    ({"sort": "has_get_stream"}, 400),
])
async def test_list_queries_are_bounded(params: dict[str, str], status: int) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.get(f"{srv.admin}/api/sessions", params=params, headers=BEARER)
        assert resp.status_code == status, resp.text
        assert "Traceback" not in resp.text


@pytest.mark.parametrize("since", ["nan", "inf", "-inf", "1e400", "-1"])
async def test_history_since_accepts_odd_floats_without_error(since: str) -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.get(f"{srv.admin}/api/history", params={"since": since},
                                headers=BEARER)
        assert resp.status_code == 200
        assert len(resp.json()["samples"]) <= 600


async def test_metrics_leak_no_client_data() -> None:
    async with running_admin() as srv, httpx.AsyncClient() as client:
        sid = await open_session(client, srv.mcp, 'evil"} 1\nfake_metric{x="')
        text = (await client.get(f"{srv.admin}/metrics", headers=BEARER)).text
        assert sid not in text and "evil" not in text and "fake_metric" not in text
        assert TOKEN not in text
