"""An operator's dashboard for a running tornado-mcp server, mounted with one call.

::

    import secrets
    import tornado.web
    import admin_ui
    from tornado_mcp import Server, Transport

    transport = Transport(server)
    app = tornado.web.Application(transport.routes("/mcp"))
    token = secrets.token_urlsafe(24)
    admin_ui.mount(app, transport, prefix="/admin", token=token)
    print(f"dashboard: http://127.0.0.1:8000/admin/  token: {token}")

The dashboard shows sessions, listen streams and retained state against their limits,
plots the last ten minutes, lets an operator tune every live limit and end a session or
close a stream, and serves a JSON API (the page's own) and Prometheus metrics.
``docs/admin.md`` describes the page, the API and how to keep it safe.

It is never anonymous: ``token`` is required.  Keep the dashboard off public interfaces
(bind the application to loopback, or put it behind your own access control).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import tornado.web
from tornado.routing import Rule
from tornado.web import RedirectHandler, url

from .api import (
    ApiNotFoundHandler,
    ClusterHandler,
    HistoryHandler,
    LimitsHandler,
    MetricsHandler,
    OverviewHandler,
    SessionHandler,
    SessionsHandler,
    StreamHandler,
    StreamsHandler,
)
from .governance_api import AuditHandler, PrincipalsHandler, ToolHandler, ToolsHandler
from .pages import (
    AdminStaticFileHandler,
    LoginHandler,
    LogoutHandler,
    NotFoundHandler,
    PageHandler,
)
from .signin_api import ClientHandler, ClientsHandler, ConsentsHandler
from .state import STATIC_DIR, AdminState, Authenticate, TransportLike
from .throttle import FailureLimits

if TYPE_CHECKING:
    from tornado_mcp.authserver import SignIn

__all__ = ["AdminState", "Authenticate", "FailureLimits", "TransportLike", "mount", "routes"]


def _normalize_prefix(prefix: str) -> str:
    if not isinstance(prefix, str) or not prefix.startswith("/"):
        raise ValueError(f"prefix must be a path starting with '/', not {prefix!r}")
    prefix = prefix.rstrip("/")
    if not prefix:
        raise ValueError("prefix must name a path below '/', such as '/admin'")
    return prefix


def routes(
    transport: TransportLike,
    prefix: str = "/admin",
    token: str = "",
    read_only: bool = False,
    authenticate: Authenticate | None = None,
    login_url: str | None = None,
    failure_limits: FailureLimits | None = None,
    signin: SignIn | None = None,
) -> list[Rule]:
    """Build the dashboard's routes for ``transport``, all under ``prefix``.

    Add them to an application yourself (``Application(transport.routes() + routes)``) or
    let :func:`mount` do it.  ``token`` (a non-empty string) is what operators log in with
    and what API clients send as ``Authorization: Bearer <token>``; ``read_only=True`` hides
    every control and makes the API refuse changes with 403.

    ``authenticate`` replaces the token with the host application's own login (then pass
    no ``token``): it is called with each request's handler and returns the caller's name,
    or ``None`` when nobody is logged in, directly or as an awaitable.  Anonymous API calls
    get 401; an anonymous browser is sent to ``login_url`` with ``?next=`` (or gets a 401
    page without one).  Bearer and ``token`` Authorization headers skip the XSRF check,
    cookies do not.  The Jupyter Server extension (``tornado_mcp.jupyter``) uses it.

    ``failure_limits`` sets how fast wrong tokens may come, per address and overall
    (:class:`FailureLimits`; the defaults are in :mod:`admin_ui.throttle`).

    ``signin``: the app's own authorization server
    (:class:`tornado_mcp.authserver.SignIn`); the page then lists the assistants that
    registered and who let which one in, each revocable (:mod:`admin_ui.signin_api`).

    Every call builds an independent dashboard with its own login-cookie secret and its own
    plot history, which starts sampling at once inside a running event loop, or on the
    first request otherwise.
    """
    prefix = _normalize_prefix(prefix)
    admin = AdminState(transport, prefix, token, read_only, authenticate, login_url,
                       failure_limits, signin)
    admin.history.start_if_loop_running()
    p = re.escape(prefix)
    kw: dict[str, Any] = {"admin": admin}
    return [
        url(p, RedirectHandler, {"url": prefix + "/"}),
        url(p + "/", PageHandler, kw),
        url(p + "/login", LoginHandler, kw),
        url(p + "/logout", LogoutHandler, kw),
        url(p + "/api/overview", OverviewHandler, kw),
        url(p + "/api/history", HistoryHandler, kw),
        url(p + "/api/sessions", SessionsHandler, kw),
        url(p + "/api/sessions/([^/]+)", SessionHandler, kw),
        url(p + "/api/streams", StreamsHandler, kw),
        url(p + "/api/streams/([^/]+)", StreamHandler, kw),
        url(p + "/api/limits", LimitsHandler, kw),
        url(p + "/api/cluster", ClusterHandler, kw),
        url(p + "/api/tools", ToolsHandler, kw),
        url(p + "/api/tools/([^/]+)", ToolHandler, kw),
        url(p + "/api/principals", PrincipalsHandler, kw),
        url(p + "/api/audit", AuditHandler, kw),
        url(p + "/api/oauth/clients", ClientsHandler, kw),
        url(p + "/api/oauth/clients/(.+)", ClientHandler, kw),
        url(p + "/api/oauth/consents", ConsentsHandler, kw),
        url(p + "/api/.*", ApiNotFoundHandler, kw),
        url(p + "/metrics", MetricsHandler, kw),
        url(p + "/static/(.*)", AdminStaticFileHandler, {"path": str(STATIC_DIR), "admin": admin}),
        url(p + "/.*", NotFoundHandler, kw),
    ]


def mount(
    app: tornado.web.Application,
    transport: TransportLike,
    prefix: str = "/admin",
    token: str = "",
    read_only: bool = False,
    authenticate: Authenticate | None = None,
    login_url: str | None = None,
    failure_limits: FailureLimits | None = None,
    signin: SignIn | None = None,
) -> None:
    """Add the dashboard to a running or not-yet-started ``app`` at ``prefix``.

    The same as ``app.add_handlers(r".*", routes(transport, prefix, token=...,
    read_only=...))``; see :func:`routes` for the arguments.
    """
    app.add_handlers(r".*", routes(transport, prefix, token=token, read_only=read_only,
                                   authenticate=authenticate, login_url=login_url,
                                   failure_limits=failure_limits, signin=signin))
