"""The dashboard behind a host application's own login (``admin_ui.routes(authenticate=)``).

A real Tornado application on a loopback port whose login is a signed ``user`` cookie (or
an ``Authorization: token`` header) stands in for the host: its ``authenticate`` callable
is asked instead of the dashboard's token, sync or async; anonymous API calls get 401,
anonymous browsers go to the host's login page (or get a 401 page when there is none), the
dashboard's own login page sends them there too, cookie changes need the XSRF token (and
no foreign ``Origin``) while header-authenticated ones do not, and a token together with a
hook is refused.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import tornado.web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import RequestHandler, create_signed_value

import admin_ui
from tornado_mcp import Server, Transport

SECRET = "host-cookie-secret-0123456789"
HOST_TOKEN = "host-api-token-0123456789"


def sync_user(handler: RequestHandler) -> str | None:
    header = handler.request.headers.get("Authorization", "")
    if header in (f"token {HOST_TOKEN}", f"Bearer {HOST_TOKEN}"):
        return "script"
    name = handler.get_signed_cookie("user")
    return name.decode() if name else None


async def async_user(handler: RequestHandler) -> str | None:
    return sync_user(handler)


@contextlib.asynccontextmanager
async def host_app(authenticate: Callable[[RequestHandler], Any],
                   login_url: str | None = "/login") -> AsyncIterator[str]:
    transport = Transport(Server("host"))
    app = tornado.web.Application(
        transport.routes("/mcp") + admin_ui.routes(transport, "/admin",
                                                   authenticate=authenticate,
                                                   login_url=login_url),
        cookie_secret=SECRET, xsrf_cookies=True)
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets(sockets)
    try:
        yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    finally:
        server.stop()
        await server.close_all_connections()
        await transport.close()


def user_cookie(name: str) -> str:
    return create_signed_value(SECRET, "user", name).decode()


@pytest.mark.parametrize("authenticate", [sync_user, async_user])
async def test_the_hosts_login_replaces_the_token(
        authenticate: Callable[[RequestHandler], str | Awaitable[str | None] | None]) -> None:
    assert inspect.iscoroutinefunction(authenticate) == (authenticate is async_user)
    async with host_app(authenticate) as base, httpx.AsyncClient(base_url=base) as http:
        anonymous = await http.get("/admin/api/overview")
        assert anonymous.status_code == 401
        assert anonymous.json() == {"error": "Log in first, or send Authorization: Bearer "
                                             "<token>."}
        page = await http.get("/admin/")
        assert page.status_code == 302
        assert page.headers["Location"] == "/login?next=%2Fadmin%2F"
        own_login = await http.get("/admin/login?next=/admin/")
        assert own_login.status_code == 303
        assert own_login.headers["Location"] == "/login?next=%2Fadmin%2F"
        by_header = await http.get("/admin/api/overview",
                                   headers={"Authorization": f"token {HOST_TOKEN}"})
        assert by_header.status_code == 200
        http.cookies.set("user", user_cookie("alice"))
        shown = await http.get("/admin/")
        assert shown.status_code == 200
        assert "signed in as <strong>alice</strong>" in shown.text
        assert "Log out" not in shown.text
        missing = await http.get("/admin/api/nothing-here")
        assert missing.status_code == 404


async def test_changes_need_xsrf_with_a_cookie_but_not_with_a_header() -> None:
    async with host_app(async_user) as base, httpx.AsyncClient(base_url=base) as http:
        http.cookies.set("user", user_cookie("alice"))
        page = await http.get("/admin/")
        xsrf = http.cookies["_xsrf"]
        assert page.status_code == 200
        refused = await http.patch("/admin/api/limits", json={"max_sessions": 9})
        assert refused.status_code == 403
        changed = await http.patch("/admin/api/limits", json={"max_sessions": 9},
                                   headers={"X-XSRFToken": xsrf})
        assert changed.status_code == 200, changed.text
        foreign = await http.patch("/admin/api/limits", json={"max_sessions": 7},
                                   headers={"X-XSRFToken": xsrf,
                                            "Origin": "https://sibling.example"})
        assert foreign.status_code == 403  # another site's page, even with the token
        http.cookies.clear()
        scripted = await http.patch("/admin/api/limits", json={"max_sessions": 8},
                                    headers={"Authorization": f"token {HOST_TOKEN}"})
        assert scripted.status_code == 200
        assert scripted.json()["limits"]["max_sessions"] == 8


async def test_without_a_login_url_an_anonymous_browser_gets_a_401_page() -> None:
    async with host_app(sync_user, login_url=None) as base, \
            httpx.AsyncClient(base_url=base) as http:
        page = await http.get("/admin/")
        assert page.status_code == 401
        assert "Log in to the application first." in page.text
        login = await http.get("/admin/login")
        assert login.status_code == 404


def test_a_token_and_a_hook_together_are_refused() -> None:
    with pytest.raises(ValueError, match="pass token or authenticate, not both"):
        admin_ui.routes(Transport(Server("x")), "/admin", token="t" * 20,
                        authenticate=sync_user)
