"""The base of every dashboard handler: it does the checking once, so the others stay small.

:class:`AdminHandler` does, once for every handler below it, what each would otherwise repeat:

1. **Authenticate** -- a bearer header or the signed login cookie (:mod:`admin_ui.auth`),
   or, when the dashboard was mounted with ``authenticate=``, the host application's own
   login instead (Jupyter Server's identity provider, say).  Without one, the JSON API
   answers 401 and the HTML page redirects to the login page.
2. **Refuse changes when read-only** -- 403 for every state-changing method.
3. **Check XSRF** for state-changing requests authenticated by cookie (bearer requests are
   exempt: another site cannot make a browser send that header).
4. **Answer errors as JSON** (``{"error": "...", "errors": {...}}``) for the API, a short
   page for HTML, and never a traceback, whatever the application's ``debug`` setting.

The handlers themselves live by what they serve: :mod:`admin_ui.pages` (the HTML page, login,
logout, static files) and :mod:`admin_ui.api` (the JSON API and the Prometheus endpoint).
"""

from __future__ import annotations

import inspect
import json
import logging
import urllib.parse
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any, ClassVar

from tornado.web import HTTPError, RequestHandler

from .auth import COOKIE_NAME, Identity, clean_name
from .state import AdminState

log = logging.getLogger("admin_ui")

#: Methods that change something; read-only mode refuses them and cookies need XSRF.
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Largest JSON body the API reads (a limits change is a few hundred bytes).
MAX_JSON_BODY = 64 * 1024

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
))


class ApiError(HTTPError):
    """An error whose ``message`` (and optional per-field ``errors``) the client may see."""

    def __init__(
        self, status: int, message: str, errors: dict[str, str] | None = None
    ) -> None:
        super().__init__(status, message.replace("%", "%%"))
        self.message = message
        self.errors = errors


def _to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


class AdminHandler(RequestHandler):
    """Base of every dashboard handler: authentication, read-only, XSRF, errors."""

    #: ``True`` for JSON answers (errors included), ``False`` for HTML pages.
    api: ClassVar[bool] = True
    #: ``False`` only for the login page, which must be reachable without logging in.
    needs_login: ClassVar[bool] = True
    #: Unsafe methods this handler allows even on a read-only dashboard (logout).
    allowed_when_read_only: ClassVar[frozenset[str]] = frozenset()

    admin: AdminState
    identity: Identity | None

    def initialize(self, admin: AdminState) -> None:
        self.admin = admin
        self.identity = None

    # -- headers ----------------------------------------------------------------------------

    def set_default_headers(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)

    # -- authentication ---------------------------------------------------------------------

    def _bearer_header(self) -> str | None:
        return self.admin.gatekeeper.bearer(self.request.headers.get("Authorization"))

    def authenticate(self) -> Identity | None:
        """Who is calling: by bearer token first, then by login cookie; ``None`` if nobody.

        A request that sends a bearer header is judged by it alone: a wrong token fails even
        when a valid cookie rides along.
        """
        gate = self.admin.gatekeeper
        bearer = self._bearer_header()
        if bearer is not None:
            return Identity("api", "bearer") if gate.token_matches(bearer) else None
        name = gate.read(self.get_cookie(COOKIE_NAME))
        return Identity(name, "cookie") if name else None

    def get_current_user(self) -> Identity | None:
        return self.identity

    def check_xsrf_cookie(self) -> None:
        """Tornado's XSRF check, skipped for bearer requests (they cannot be forged).

        This runs both when the application enables ``xsrf_cookies`` (Tornado calls it before
        :meth:`prepare`) and when it does not (:meth:`prepare` calls it), so the dashboard is
        protected either way, and bearer API calls work either way.  Under the host's login,
        ``Authorization: token ...`` (Jupyter's own scheme) is exempt too, for the same reason.
        """
        if self._bearer_header() is not None or (
                self.admin.authenticate is not None and _token_scheme(
                    self.request.headers.get("Authorization"))):
            return
        super().check_xsrf_cookie()

    def prepare(self) -> Awaitable[None] | None:
        check_host(self, self.admin)
        self.admin.history.start()  # no-op once running; starts plots on the first request
        if self.needs_login:
            if self.admin.authenticate is not None:
                return self._prepare_with_host_login(self.admin.authenticate(self))
            self.identity = self.authenticate()
            if self.identity is None:
                self._refuse_anonymous()  # raises for the API; redirects (finishes) for pages
                return None
        self._check_unsafe()
        return None

    async def _prepare_with_host_login(self, named: str | Awaitable[str | None] | None) -> None:
        """The rest of :meth:`prepare` once the host's login has named the caller."""
        name = await named if inspect.isawaitable(named) else named
        if not name:
            self._refuse_anonymous()
            return
        self.identity = Identity(clean_name(name), "host")
        self._check_unsafe()

    def _check_unsafe(self) -> None:
        method = self.request.method or "GET"
        if method in UNSAFE_METHODS:
            if self.admin.read_only and method not in self.allowed_when_read_only:
                raise ApiError(403, "This dashboard is read-only: changes are turned off.")
            self.check_xsrf_cookie()

    def _refuse_anonymous(self) -> None:
        if self.api:
            if self._bearer_header() is not None:
                raise ApiError(401, "The bearer token is not right.")
            raise ApiError(401, "Log in first, or send Authorization: Bearer <token>.")
        if self.admin.authenticate is not None and self.admin.login_url is None:
            raise ApiError(401, "Log in to the application first.")
        login = self.admin.login_url or f"{self.admin.prefix}/login"
        if self.request.method in ("GET", "HEAD"):
            login += "?" + urllib.parse.urlencode({"next": self.request.uri or ""})
        self.redirect(login)  # finished: Tornado skips the method after prepare()

    # -- answers ----------------------------------------------------------------------------

    def write_json(self, value: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(_to_json(value))

    def read_json(self) -> Any:
        body = self.request.body
        if len(body) > MAX_JSON_BODY:
            raise ApiError(413, f"The body is over {MAX_JSON_BODY} bytes.")
        try:
            return json.loads(body or b"null")
        except ValueError:
            raise ApiError(400, "The body is not valid JSON.") from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Answer an error without ever showing a traceback, as JSON or as a small page."""
        if self._finished:
            return
        exc = kwargs.get("exc_info", (None, None, None))[1]
        errors: dict[str, str] | None = None
        if isinstance(exc, ApiError):
            message = exc.message
            errors = exc.errors
        elif isinstance(exc, HTTPError) and "_xsrf" in (exc.log_message or ""):
            message = ("The XSRF check failed: send the _xsrf cookie with a matching "
                       "X-XSRFToken header (reload the page if it was open for long).")
        elif status_code >= 500:
            message = "The dashboard hit an internal error; the server log has the details."
        else:
            message = reason_phrase(status_code)
        self.clear_header("Content-Type")
        if status_code == 401:
            self.set_header("WWW-Authenticate", 'Bearer realm="tornado-mcp admin"')
        if self.api:
            body: dict[str, Any] = {"error": message}
            if errors:
                body["errors"] = errors
            self.set_header("Content-Type", "application/json; charset=utf-8")
            self.finish(_to_json(body))
        else:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(self.render_page("error.html", status=status_code, message=message))

    def render_page(self, name: str, **context: Any) -> str:
        template = self.admin.templates.get_template(name)
        return template.render(
            prefix=self.admin.prefix,
            static_url=self.admin.static_url,
            read_only=self.admin.read_only,
            **context,
        )

    def actor(self) -> str:
        who = self.identity.actor if self.identity else "admin:unknown"
        return f"{who}@{self.request.remote_ip}"


def _token_scheme(authorization: str | None) -> bool:
    scheme = (authorization or "").strip().partition(" ")[0].lower()
    return scheme in ("bearer", "token")


def reason_phrase(status: int) -> str:
    """The standard reason phrase of ``status`` (``"Not Found"``), or ``"Error"``."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def check_host(handler: RequestHandler, admin: AdminState) -> None:
    """The MCP endpoint's DNS-rebinding rule on ``Host``, applied to the dashboard too: a
    page on a rebound domain must not reach it through the operator's browser.

    ``Origin`` is left to the dashboard's own defences (XSRF tokens and a SameSite=Strict
    cookie): its pages send no referrer, so browsers send ``Origin: null`` on its forms.
    """
    transport = admin.transport
    if transport.options.dns_rebinding_protection:
        verdict = transport.host_origin_verdict(handler.request.headers.get("Host"), None)
        if verdict is not None:
            raise ApiError(403, verdict)
