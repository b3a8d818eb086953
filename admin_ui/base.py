"""The base of every dashboard handler: it does the checking once, so the others stay small.

:class:`AdminHandler` does, once for every handler below it, what each would otherwise repeat:

1. **Authenticate** -- a bearer header or the signed login cookie (:mod:`admin_ui.auth`),
   a wrong bearer token counting against :mod:`admin_ui.throttle` (429 while over it),
   or, when the dashboard was mounted with ``authenticate=``, the host application's own
   login instead (Jupyter Server's identity provider, say).  Without one, the JSON API
   answers 401 and the HTML page redirects to the login page.
2. **Refuse changes when read-only** -- 403 for every state-changing method.
3. **Check forgery** for state-changing requests authenticated by cookie: ``Origin`` or
   ``Referer``, when sent, must name this host (:mod:`admin_ui.guard`), and the request must
   carry the XSRF token of its login (:meth:`admin_ui.auth.Gatekeeper.xsrf_token`; under the
   host's login, the host's own Tornado XSRF token).  Bearer requests are exempt: another
   site cannot make a browser send that header.
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
from asyncio import Future
from collections.abc import Awaitable
from http import HTTPStatus
from typing import Any, ClassVar

from tornado.web import HTTPError, RequestHandler

from .auth import COOKIE_NAME, Identity, clean_name
from .guard import foreign_origin, retry_after
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
        self, status: int, message: str, errors: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, message.replace("%", "%%"))
        self.message = message
        self.errors = errors
        #: Extra headers of the error answer (``Retry-After`` of a 429).
        self.headers = headers or {}


def too_many_failures(seconds: float) -> ApiError:
    """The 429 of a throttled caller, with ``Retry-After``."""
    after = retry_after(seconds)
    return ApiError(429, f"Too many wrong tokens; try again in {after} s.",
                    headers={"Retry-After": after})


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
    #: The response is complete (Tornado keeps its own flag private).
    answered = False

    def initialize(self, admin: AdminState) -> None:
        self.admin = admin
        self.identity = None

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]:
        self.answered = True
        return super().finish(chunk)

    # -- headers ----------------------------------------------------------------------------

    def set_default_headers(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "same-origin")
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
            return Identity("api") if self.token_checked(bearer) else None
        name = gate.read(self.get_cookie(COOKIE_NAME))
        return Identity(name) if name else None

    def token_checked(self, candidate: str) -> bool:
        """Whether ``candidate`` is the token, unless this address (or everyone) has sent
        too many wrong ones lately: then 429 and ``candidate`` is not even compared."""
        throttle = self.admin.throttle
        wait = throttle.retry_after(self.request.remote_ip)
        if wait is not None:
            raise too_many_failures(wait)
        if self.admin.gatekeeper.token_matches(candidate):
            return True
        throttle.failed(self.request.remote_ip)
        wait = throttle.retry_after(self.request.remote_ip)
        if wait is not None:  # logged once: from now on its tokens are refused unread
            log.warning("admin: too many wrong tokens (from %s, or overall): tokens are "
                        "refused unread for %s s", self.request.remote_ip, retry_after(wait))
        return False

    def get_current_user(self) -> Identity | None:
        return self.identity

    def check_xsrf_cookie(self) -> None:
        """Nothing: :meth:`prepare` checks forgery itself, once it knows who is calling.

        Tornado calls this before :meth:`prepare` when the application enables
        ``xsrf_cookies``; the dashboard's check (:meth:`check_forgery`) runs either way, so it
        is protected, and bearer API calls work, whatever the application's settings.
        """

    def _header_credentials(self) -> bool:
        """A bearer header (or, under the host's login, ``Authorization: token ...``,
        Jupyter's own scheme): not ambient, so exempt from the forgery checks."""
        if self._bearer_header() is not None:
            return True
        return self.admin.authenticate is not None and _token_scheme(
            self.request.headers.get("Authorization"))

    def check_forgery(self) -> None:
        """Refuse a state-changing request another site may have made through the browser."""
        if self._header_credentials():
            return
        why = foreign_origin(self.request)
        if why is not None:
            raise ApiError(403, why)
        if not self.needs_login:
            return  # the login form itself: there is no login to bind a token to yet
        if self.admin.authenticate is not None:
            super().check_xsrf_cookie()  # the host's own (Tornado's) XSRF token
            return
        candidate = (self.get_argument("_xsrf", None)
                     or self.request.headers.get("X-Xsrftoken")
                     or self.request.headers.get("X-Csrftoken"))
        if not self.admin.gatekeeper.xsrf_matches(self.get_cookie(COOKIE_NAME), candidate):
            raise ApiError(403, "The XSRF check failed: send this login's token (the page's "
                                "data-xsrf) in an X-XSRFToken header or an _xsrf field "
                                "(reload the page if you logged in again).")

    def xsrf_for_page(self) -> str:
        """The XSRF token the page embeds: this login's, or the host's Tornado token."""
        if self.admin.authenticate is not None:
            return self.xsrf_token.decode("ascii")
        return self.admin.gatekeeper.xsrf_token(self.get_cookie(COOKIE_NAME)) or ""

    def secure_cookies(self) -> bool:
        """Whether cookies get ``Secure``: the request came over TLS, directly or (with
        ``HTTPServer(xheaders=True)``) through a proxy that says so in X-Forwarded-Proto."""
        return self.request.protocol == "https"

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
        self.identity = Identity(clean_name(name))
        self._check_unsafe()

    def _check_unsafe(self) -> None:
        method = self.request.method or "GET"
        if method in UNSAFE_METHODS:
            if self.admin.read_only and method not in self.allowed_when_read_only:
                raise ApiError(403, "This dashboard is read-only: changes are turned off.")
            self.check_forgery()

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

    def log_exception(self, typ: Any, value: BaseException | None, tb: Any) -> None:
        """Tornado's logging, minus one warning per throttled request: an attacker's 429s
        would flood the log (the moment an address is throttled is logged once instead)."""
        if isinstance(value, ApiError) and value.status_code == 429:
            return
        super().log_exception(typ, value, tb)

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
        if self.answered:
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
        if isinstance(exc, ApiError):
            for name, value in exc.headers.items():
                self.set_header(name, value)
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

    ``Origin`` is judged by the forgery check instead (:meth:`AdminHandler.check_forgery`),
    on state-changing requests only.
    """
    transport = admin.transport
    if transport.options.dns_rebinding_protection:
        verdict = transport.host_origin_verdict(handler.request.headers.get("Host"), None)
        if verdict is not None:
            raise ApiError(403, verdict)
