"""The dashboard's request handlers: one base class that does the checking, then small ones.

:class:`AdminHandler` does, once for every handler below it, what each would otherwise repeat:

1. **Authenticate** -- a bearer header or the signed login cookie (:mod:`admin_ui.auth`).
   Without either, the JSON API answers 401 and the HTML page redirects to the login page.
2. **Refuse changes when read-only** -- 403 for every state-changing method.
3. **Check XSRF** for state-changing requests authenticated by cookie (bearer requests are
   exempt: another site cannot make a browser send that header).
4. **Answer errors as JSON** (``{"error": "...", "errors": {...}}``) for the API, a short
   page for HTML, and never a traceback, whatever the application's ``debug`` setting.

The rest are thin: they read a snapshot, shape it into JSON, or call one transport method.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import asdict
from http import HTTPStatus
from typing import Any, ClassVar

from tornado.web import HTTPError, RequestHandler, StaticFileHandler

from tornado_mcp.introspection import REFUSAL_KINDS, SessionInfo, StreamInfo
from tornado_mcp.options import (
    MAX_INITIALIZE_PARAMS_VALUES,
    MAX_RESOURCE_SUBSCRIPTION_URIS,
    OPTION_SPECS,
    OptionError,
)

from . import metrics
from .auth import COOKIE_MAX_AGE_DAYS, COOKIE_NAME, Identity, clean_name
from .schemas import (
    FieldErrors,
    SessionQuerySchema,
    StreamQuerySchema,
    load_limit_changes,
    load_query,
)
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
        protected either way, and bearer API calls work either way.
        """
        if self._bearer_header() is not None:
            return
        super().check_xsrf_cookie()

    def prepare(self) -> None:
        check_host(self, self.admin)
        self.admin.history.start()  # no-op once running; starts plots on the first request
        method = self.request.method or "GET"
        if self.needs_login:
            self.identity = self.authenticate()
            if self.identity is None:
                self._refuse_anonymous()  # raises for the API; redirects (finishes) for pages
                return
        if method in UNSAFE_METHODS:
            if self.admin.read_only and method not in self.allowed_when_read_only:
                raise ApiError(403, "This dashboard is read-only: changes are turned off.")
            self.check_xsrf_cookie()

    def _refuse_anonymous(self) -> None:
        if self.api:
            if self._bearer_header() is not None:
                raise ApiError(401, "The bearer token is not right.")
            raise ApiError(401, "Log in first, or send Authorization: Bearer <token>.")
        login = f"{self.admin.prefix}/login"
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
            message = _reason(status_code)
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


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


# -- pages --------------------------------------------------------------------------------------


class LoginHandler(AdminHandler):
    """``GET/POST login``: the form that trades the token for a signed cookie."""

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

    def get(self) -> None:
        if self.authenticate() is not None:
            self.redirect(self._next())
            return
        self.finish(self.render_page("login.html", error=None, next=self._next(),
                                     xsrf_form_html=self.xsrf_form_html()))

    async def post(self) -> None:
        name = clean_name(self.get_body_argument("name", ""))
        token = self.get_body_argument("token", "")
        if not self.admin.gatekeeper.token_matches(token):
            log.warning("admin: failed login from %s", self.request.remote_ip)
            self.set_status(401)
            self.finish(self.render_page("login.html", error="That token is not right.",
                                         next=self._next(),
                                         xsrf_form_html=self.xsrf_form_html()))
            return
        self.set_cookie(
            COOKIE_NAME,
            self.admin.gatekeeper.sign(name).decode("ascii"),
            path=self.admin.prefix,
            httponly=True,
            secure=self.request.protocol == "https",
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
        self.clear_cookie(COOKIE_NAME, path=self.admin.prefix)
        self.redirect(f"{self.admin.prefix}/login", status=303)


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
            specs=specs,
            who=self.identity.name if self.identity else "",
            xsrf_token=self.xsrf_token.decode("ascii"),
            refusal_kinds=REFUSAL_KINDS,
        ))


# -- JSON API -----------------------------------------------------------------------------------


class OverviewHandler(AdminHandler):
    """``GET api/overview``: totals against their caps, refusals, rates and the process."""

    def get(self) -> None:
        admin = self.admin
        snap = admin.transport.snapshot(sessions=False, streams=False)
        limits = snap.limits
        t = snap.totals
        process = admin.probe.read(measure_cpu=False)
        self.write_json({
            "taken_at": snap.taken_at,
            "started_at": snap.started_at,
            "read_only": admin.read_only,
            "sessions": {"count": t.sessions, "limit": limits.get("max_sessions")},
            "streams": {"count": t.listen_streams,
                        "limit": limits.get("max_listen_subscriptions")},
            "get_streams": t.get_streams,
            "in_flight": t.in_flight,
            "retained": {
                "bytes": t.retained_bytes,
                "values": t.retained_values,
                "subscription_uris": t.subscription_uris,
                "subscription_uri_bytes": t.subscription_uri_bytes,
            },
            "requests": {"total": snap.requests_total,
                         "per_second": admin.history.request_rate()},
            "refusals": {k: snap.refusals.get(k, 0) for k in REFUSAL_KINDS}
            | {k: v for k, v in snap.refusals.items() if k not in REFUSAL_KINDS},
            "process": process.as_dict(),
            "bounds": _bounds(limits),
            "limits": admin.transport.options.live_values(),
            "changes": [e.as_dict() for e in reversed(admin.events)][:20],
        })


class HistoryHandler(AdminHandler):
    """``GET api/history?since=T``: plot samples newer than ``T`` (all of them without it)."""

    def get(self) -> None:
        raw = self.get_query_argument("since", None)
        since: float | None = None
        if raw:
            try:
                since = float(raw)
            except ValueError:
                raise ApiError(400, "Bad query.", {"since": "Must be a number."}) from None
        samples = self.admin.history.since(since)
        self.write_json({"now": time.time(), "interval": 1.0,
                         "samples": [s.as_dict() for s in samples]})


def _bounds(limits: dict[str, Any]) -> dict[str, Any]:
    """What each row's numbers are shown against on the page."""
    return {
        "session_retained_bytes": limits.get("max_initialize_request_bytes"),
        "session_retained_values": MAX_INITIALIZE_PARAMS_VALUES,
        "session_idle_timeout": limits.get("session_idle_timeout"),
        "stream_uri_count": MAX_RESOURCE_SUBSCRIPTION_URIS,
        "stream_uri_bytes": limits.get("max_resource_subscription_bytes"),
        "stream_queue": limits.get("max_stream_queue"),
    }


def _page(
    rows: Sequence[Any],
    query: dict[str, Any],
    matches: Callable[[Any, str], bool],
    sort_key: Callable[[Any], Any],
) -> tuple[int, list[Any]]:
    """Filter, sort and slice ``rows``; return how many matched and the requested page."""
    needle = query["q"].strip().lower()
    picked = [r for r in rows if matches(r, needle)] if needle else list(rows)
    picked.sort(key=sort_key, reverse=query["order"] == "desc")
    start = query["offset"]
    return len(picked), picked[start:start + query["limit"]]


def _session_matches(s: SessionInfo, needle: str) -> bool:
    hay = " ".join(x for x in (s.id, s.client_name, s.client_version, s.protocol_version) if x)
    return needle in hay.lower()


def _session_sort(column: str) -> Callable[[SessionInfo], Any]:
    if column == "client_name":
        return lambda s: ((s.client_name or "").lower(), s.client_version or "", s.id)
    return lambda s: (getattr(s, column), s.id)


def _stream_matches(s: StreamInfo, needle: str) -> bool:
    hay = " ".join((s.id, str(s.subscription_id), " ".join(s.honored)))
    return needle in hay.lower()


def _stream_json(s: StreamInfo, with_uris: bool = False) -> dict[str, Any]:
    d = asdict(s)
    if not with_uris:
        d.pop("uris", None)
    return d


def _query_or_400(schema: Any, handler: AdminHandler) -> dict[str, Any]:
    try:
        return load_query(schema, handler.request.query_arguments)
    except FieldErrors as exc:
        raise ApiError(400, "Bad query.", exc.errors) from None


class SessionsHandler(AdminHandler):
    """``GET api/sessions?sort=&order=&q=&offset=&limit=``: one page of sessions."""

    def get(self) -> None:
        query = _query_or_400(SessionQuerySchema(), self)
        snap = self.admin.transport.snapshot(sessions=True, streams=False)
        matched, rows = _page(snap.sessions, query, _session_matches,
                              _session_sort(query["sort"]))
        self.write_json({
            "total": snap.totals.sessions,
            "matched": matched,
            **query,
            "bounds": _bounds(snap.limits),
            "items": [asdict(s) for s in rows],
        })


class SessionHandler(AdminHandler):
    """``GET api/sessions/<id>`` shows one session; ``DELETE`` ends it."""

    def get(self, session_id: str) -> None:
        snap = self.admin.transport.snapshot(sessions=True, streams=False)
        for s in snap.sessions:
            if s.id == session_id:
                self.write_json({**asdict(s), "bounds": _bounds(snap.limits)})
                return
        raise ApiError(404, "No such session (it may have ended).")

    def delete(self, session_id: str) -> None:
        if not self.admin.transport.end_session(session_id):
            raise ApiError(404, "No such session (it may have ended).")
        actor = self.actor()
        log.info("admin: %s ended session %s", actor, session_id)
        self.admin.record(actor, "end_session", {"id": session_id})
        self.write_json({"id": session_id, "ended": True})


class StreamsHandler(AdminHandler):
    """``GET api/streams?sort=&order=&q=&offset=&limit=``: open listen streams (no URIs)."""

    def get(self) -> None:
        query = _query_or_400(StreamQuerySchema(), self)
        snap = self.admin.transport.snapshot(sessions=False, streams=True)
        column = query["sort"]
        matched, rows = _page(snap.streams, query, _stream_matches,
                              lambda s: (getattr(s, column), s.id))
        self.write_json({
            "total": snap.totals.listen_streams,
            "matched": matched,
            **query,
            "bounds": _bounds(snap.limits),
            "items": [_stream_json(s) for s in rows],
        })


class StreamHandler(AdminHandler):
    """``GET api/streams/<id>`` shows one stream with its URIs; ``DELETE`` closes it."""

    def get(self, stream_id: str) -> None:
        snap = self.admin.transport.snapshot(sessions=False, streams=True, stream_uris=True)
        for s in snap.streams:
            if s.id == stream_id:
                self.write_json({**_stream_json(s, with_uris=True),
                                 "bounds": _bounds(snap.limits)})
                return
        raise ApiError(404, "No such stream (it may have closed).")

    async def delete(self, stream_id: str) -> None:
        try:
            closed = await self.admin.transport.close_stream(stream_id)
        except TimeoutError:
            # The final result is queued and the stream is gone from the transport; only a
            # slow client is still reading.  That is closed as far as the operator goes.
            closed = True
        if not closed:
            raise ApiError(404, "No such stream (it may have closed).")
        actor = self.actor()
        log.info("admin: %s closed listen stream %s", actor, stream_id)
        self.admin.record(actor, "close_stream", {"id": stream_id})
        self.write_json({"id": stream_id, "closed": True})


class LimitsHandler(AdminHandler):
    """``GET api/limits`` lists every live limit; ``PATCH`` changes some of them."""

    def _answer(self, changed: dict[str, Any] | None = None) -> None:
        options = self.admin.transport.options
        body: dict[str, Any] = {
            "limits": options.live_values(),
            "fixed": {s.name: getattr(options, s.name) for s in OPTION_SPECS if not s.live},
            "specs": [{"name": s.name, "kind": s.kind, "default": s.default,
                       "nullable": s.nullable, "help": s.help}
                      for s in OPTION_SPECS if s.live],
            "read_only": self.admin.read_only,
        }
        if changed is not None:
            body["changed"] = changed
        self.write_json(body)

    def get(self) -> None:
        self._answer()

    def patch(self) -> None:
        try:
            changes = load_limit_changes(self.read_json())
            actor = self.actor()
            diff = self.admin.transport.options.update(changes, actor=actor)
        except (FieldErrors, OptionError) as exc:
            raise ApiError(400, "Some limits were refused; nothing changed.", exc.errors) from None
        if diff:
            log.info("admin: %s changed limits: %s", actor, ", ".join(
                f"{k} {old!r} -> {new!r}" for k, (old, new) in diff.items()))
        self._answer({k: {"old": old, "new": new} for k, (old, new) in diff.items()})


class MetricsHandler(AdminHandler):
    """``GET metrics``: Prometheus text exposition format (bearer token or login cookie)."""

    def get(self) -> None:
        admin = self.admin
        snap = admin.transport.snapshot(sessions=True, streams=True)
        body = metrics.render(snap, admin.probe.read(measure_cpu=False),
                              admin.probe.cpu_seconds())
        self.set_header("Content-Type", metrics.CONTENT_TYPE)
        self.finish(body)


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


class AdminStaticFileHandler(StaticFileHandler):
    """The dashboard's own script, styles and icon: same headers and host rule as the rest,
    and errors that never show a traceback."""

    def initialize(self, path: str, admin: AdminState) -> None:  # type: ignore[override]
        super().initialize(path)
        self.admin = admin

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)

    def prepare(self) -> None:
        check_host(self, self.admin)  # an ApiError is an HTTPError: a plain 403

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.clear_header("Content-Type")
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(_reason(status_code) + "\n")


class NotFoundHandler(AdminHandler):
    """Any other path under the prefix: 404 for everyone (after the host check)."""

    api = False
    needs_login = False

    def prepare(self) -> None:
        super().prepare()
        if not self._finished:
            raise ApiError(404, "Not found.")


class ApiNotFoundHandler(AdminHandler):
    """Anything else under ``api/``: a JSON 404 (after the login check, like the rest)."""

    def prepare(self) -> None:
        super().prepare()
        raise ApiError(404, "No such API endpoint; docs/admin.md lists them.")
