"""The authorization endpoint: the page a user's browser is sent to by their client.

:class:`AuthorizePage` is mixed into the host application's own base handler
(``SignIn(login=BaseHandler)``), so the app's ``get_current_user`` decides who the user is
and its ``login_url`` is where an anonymous browser goes, with ``next`` back to this very
request (a path on this server, never another site).  A logged-in user sees the consent
page; its form (``POST``) carries a signed ticket bound to that user (:mod:`..issuer.consent`),
and Tornado's XSRF token too when the app turns ``xsrf_cookies`` on.

A request whose client or redirect URI does not check out gets an error page, never a
redirect: the user is only ever sent to a redirect URI the client registered.  The page
may not be framed (``X-Frame-Options``, ``frame-ancestors``), loads nothing from
elsewhere, and sends no ``Referer`` (the URL holds the request's ``state``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

import tornado.web
from markupsafe import Markup

from ..issuer.records import METADATA_DOCUMENT
from ..issuer.server import Answer, Consent
from .handlers import call_of, guarded, reason

if TYPE_CHECKING:
    from . import SignIn

log = logging.getLogger("tornado_mcp.authserver")

#: The longest query string an authorization request may have.
MAX_QUERY_BYTES = 8192
#: The largest consent form accepted, in bytes.
MAX_CONSENT_FORM_BYTES = 32 * 1024
CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'", "style-src 'self'", "img-src 'self'", "base-uri 'none'",
    "frame-ancestors 'none'"))


def local_next(target: str | None, default: str = "/") -> str:
    """``target`` if it is a path on this server (where a login page may send the browser
    after logging in), else ``default``: never another site (``//evil.example``,
    ``https://...``, ``/\\evil``), nor anything a header could choke on.  For the host
    app's login handler, which :class:`AuthorizePage` sends back with ``?next=``."""
    if not target or not target.startswith("/") or target.startswith("//") \
            or "\\" in target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return default
    parts = urlsplit(target)
    return default if parts.scheme or parts.netloc else target


class AuthorizePage(tornado.web.RequestHandler):
    """``GET`` the consent page (after the host's login), ``POST`` the user's answer."""

    def initialize(self, signin: SignIn) -> None:
        self.signin = signin

    def set_default_headers(self) -> None:
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)

    # -- who ------------------------------------------------------------------------------
    def _subject(self) -> str | None:
        user = self.current_user
        return None if user is None else self.signin.subject(user)

    def _to_login(self) -> None:
        """Off to the host's login page, with ``next`` back here (a path, or this
        server's full URL when the login page is on another host)."""
        login = self.get_login_url()
        target = self.request.uri or "/"
        if urlsplit(login).scheme:
            target = self.signin.base_url.rstrip("/") + target
        sep = "&" if "?" in login else "?"
        self.redirect(login + sep + urlencode({"next": target}))

    # -- answers --------------------------------------------------------------------------
    def render_page(self, name: str, code: int = 200, **values: Any) -> None:
        self.set_status(code)
        self.finish(self.signin.render(name, **values))

    def error_page(self, status: int, error: str, description: str) -> None:
        self.render_page("error.html", status, status=status, error=error,
                         description=description)

    def _answer(self, answer: Answer) -> None:
        location = answer.location
        if location is not None and not answer.page:
            self.redirect(location)
            return
        body = answer.body or {}
        self.error_page(answer.status, str(body.get("error", "invalid_request")),
                        str(body.get("error_description", "")))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.error_page(status_code, "server_error" if status_code >= 500
                        else "invalid_request", reason(status_code))

    def unavailable(self) -> None:
        self.error_page(503, "temporarily_unavailable",
                        "sign-in is unavailable for a moment; try again shortly")

    # -- GET: the consent page ------------------------------------------------------------
    @guarded
    async def get(self) -> None:
        if len(self.request.query) > MAX_QUERY_BYTES:
            self.error_page(414, "invalid_request", "the authorization request is too long")
            return
        subject = self._subject()
        if subject is None:
            self._to_login()
            return
        issuer = self.signin.issuer
        result = await issuer.authorize(call_of(self, issuer.urls["authorize"]), subject)
        if isinstance(result, Answer):
            self._answer(result)
            return
        self._consent(subject, result)

    def _consent(self, subject: str, consent: Consent) -> None:
        client = consent.client
        parts = urlsplit(consent.redirect_uri)
        described = dict(self.signin.issuer.scopes)
        self.render_page(
            "consent.html", subject=subject, client_name=client.name,
            client_id=client.client_id,
            source="its metadata document" if client.source == METADATA_DOCUMENT
            else "registered", redirect_to=parts.netloc or f"{parts.scheme}:",
            resource=consent.resource,
            scopes=[(s, described.get(s, "")) for s in consent.scopes],
            withheld=[(s, described.get(s, "")) for s in consent.withheld],
            ticket=consent.ticket, action=self.signin.authorize_path,
            xsrf_html=Markup(self.xsrf_form_html()) if self.settings.get("xsrf_cookies")
            else "")

    # -- POST: the user's answer ----------------------------------------------------------
    @guarded
    async def post(self) -> None:
        if len(self.request.body) > MAX_CONSENT_FORM_BYTES:
            self.error_page(413, "invalid_request", "the consent form is too large")
            return
        subject = self._subject()
        if subject is None:
            self.error_page(403, "access_denied", "you are no longer logged in; "
                            "start again from your application")
            return
        ticket = self.get_body_argument("ticket", "")
        decision = self.get_body_argument("decision", "")
        if decision not in ("approve", "deny"):
            self.error_page(400, "invalid_request", "answer Allow or Deny")
            return
        answer = await self.signin.issuer.decide(ticket, subject, decision == "approve")
        self._answer(answer)
