"""The dashboard's HTML side: the page itself, login and logout, its static files, and 404s.

The page is a shell: the script on it fills every panel from the JSON API
(:mod:`admin_ui.api`).  Authentication, read-only mode, XSRF and error pages are the base
handler's (:mod:`admin_ui.base`).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from tornado.web import StaticFileHandler

from tornado_mcp.introspection import REFUSAL_KINDS
from tornado_mcp.options import OPTION_SPECS

from .auth import COOKIE_MAX_AGE_DAYS, COOKIE_NAME, clean_name
from .base import CONTENT_SECURITY_POLICY, AdminHandler, ApiError, check_host, log, reason_phrase
from .guard import retry_after
from .state import AdminState


class LoginHandler(AdminHandler):
    """``GET/POST login``: the form that trades the token for a signed cookie.

    Its POST needs no XSRF token (there is no login yet to bind one to) but is refused from
    another site's page (``Origin``), and wrong tokens are throttled like bearer ones."""

    api = False
    needs_login = False
    allowed_when_read_only = frozenset({"POST"})

    def _next(self) -> str:
        """Where to go after login: only a path inside this dashboard (no open redirect, no
        ``..`` out of it, nothing a header could choke on)."""
        target = self.get_argument("next", "")
        prefix = self.admin.prefix
        home = prefix + "/"
        parts = urllib.parse.urlsplit(target)
        if parts.scheme or parts.netloc or "\\" in target or target.startswith("//") \
                or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
            return home
        segments = urllib.parse.unquote(parts.path).split("/")
        if any(seg in (".", "..") for seg in segments) or not parts.path.startswith(home):
            return home
        return target

    def _to_host_login(self) -> bool:
        """Under the host's login, send the browser there (or to the page) instead."""
        if self.admin.authenticate is None:
            return False
        if self.admin.login_url is None:
            raise ApiError(404, "This dashboard uses the application's own login.")
        next_url = urllib.parse.urlencode({"next": self._next()})
        self.redirect(f"{self.admin.login_url}?{next_url}", status=303)
        return True

    def get(self) -> None:
        if self._to_host_login():
            return
        if self.authenticate() is not None:
            self.redirect(self._next())
            return
        self.finish(self.render_page("login.html", error=None, next=self._next()))

    async def post(self) -> None:
        if self._to_host_login():
            return
        name = clean_name(self.get_body_argument("name", ""))
        token = self.get_body_argument("token", "")
        wait = self.admin.throttle.retry_after(self.request.remote_ip)
        if wait is not None:  # the token is not even compared
            after = retry_after(wait)
            self.set_status(429)
            self.set_header("Retry-After", after)
            self.finish(self.render_page(
                "login.html", error=f"Too many wrong tokens; try again in {after} s.",
                next=self._next()))
            return
        if not self.token_checked(token):
            log.warning("admin: failed login from %s", self.request.remote_ip)
            self.set_status(401)
            self.finish(self.render_page("login.html", error="That token is not right.",
                                         next=self._next()))
            return
        self.set_cookie(
            COOKIE_NAME,
            self.admin.gatekeeper.sign(name).decode("ascii"),
            path=self.admin.prefix,
            httponly=True,
            secure=self.secure_cookies(),
            samesite="Strict",
            expires_days=COOKIE_MAX_AGE_DAYS,
        )
        log.info("admin: %s logged in from %s", name, self.request.remote_ip)
        self.redirect(self._next(), status=303)


class LogoutHandler(AdminHandler):
    """``POST logout``: forgets the login cookie (XSRF-checked, allowed when read-only)."""

    api = False
    allowed_when_read_only = frozenset({"POST"})

    def post(self) -> None:
        self.admin.gatekeeper.revoke(self.get_cookie(COOKIE_NAME))  # copies die with it
        self.clear_cookie(COOKIE_NAME, path=self.admin.prefix, httponly=True,
                          secure=self.secure_cookies(), samesite="Strict")
        self.redirect(f"{self.admin.prefix}/login", status=303)


#: How the limits form groups the live options, by concern; an option not named here is
#: shown under "Other".  ``tool_bounds`` is edited per tool, in the tools table.
LIMIT_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Sessions and requests", ("max_sessions", "session_idle_timeout", "max_request_bytes",
                               "max_initialize_request_bytes",
                               "server_to_client_request_timeout", "shutdown_grace")),
    ("Streams", ("max_listen_subscriptions", "max_resource_subscription_bytes",
                 "listen_keepalive_interval", "sse_keepalive_interval", "max_stream_queue",
                 "stream_stall_timeout", "event_store_max_bytes", "event_store_max_age",
                 "sse_retry_interval")),
    ("Tasks", ("max_tasks", "max_task_result_bytes", "task_ttl")),
    ("Callers and tools", ("rate_limit_per_principal", "max_concurrent_calls_per_principal",
                           "max_audit_entries")),
    ("Authentication", ("max_bearer_token_bytes", "hide_unauthorized")),
    ("Sign-in (the app's authorization server)", (
        "oauth_max_clients", "oauth_max_redirect_uris", "oauth_max_client_metadata_bytes",
        "oauth_registrations_per_minute")),
    ("Cluster", ("cluster_outage_buffer", "forward_idle_timeout")),
)


def limit_groups(specs: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """``specs`` in the form's groups, in order; what no group names goes under "Other"."""
    by_name = {s["name"]: s for s in specs if s["kind"] != "tool_bounds"}
    groups = []
    for title, names in LIMIT_GROUPS:
        rows = [by_name.pop(n) for n in names if n in by_name]
        if rows:
            groups.append((title, rows))
    if by_name:
        groups.append(("Other", list(by_name.values())))
    return groups


class PageHandler(AdminHandler):
    """``GET /``: the dashboard page; the script on it fills itself from the JSON API."""

    api = False

    def get(self) -> None:
        specs = [
            {"name": s.name, "kind": s.kind, "nullable": s.nullable, "help": s.help,
             "default": s.default}
            for s in OPTION_SPECS if s.live
        ]
        self.finish(self.render_page(
            "dashboard.html",
            groups=limit_groups(specs),
            who=self.identity.name if self.identity else "",
            own_login=self.admin.authenticate is None,
            xsrf_token=self.xsrf_for_page(),
            refusal_kinds=REFUSAL_KINDS,
            signin=self.admin.signin is not None,
        ))



class AdminStaticFileHandler(StaticFileHandler):
    """The dashboard's own script, styles and icon: same headers and host rule as the rest,
    and errors that never show a traceback."""

    def initialize(self, path: str, admin: AdminState) -> None:  # type: ignore[override]
        super().initialize(path)
        self.admin = admin

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "same-origin")
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)

    def prepare(self) -> None:
        check_host(self, self.admin)  # an ApiError is an HTTPError: a plain 403

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.clear_header("Content-Type")
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(reason_phrase(status_code) + "\n")


class NotFoundHandler(AdminHandler):
    """Any other path under the prefix: 404 for everyone (after the host check)."""

    api = False
    needs_login = False

    def prepare(self) -> None:
        super().prepare()
        if not self.answered:
            raise ApiError(404, "Not found.")

