"""Who may use the dashboard: one shared token, checked in constant time.

The embedding application chooses the token (the demo prints a random one).  It is proved
in one of two ways:

* **Bearer header** -- ``Authorization: Bearer <token>`` on every request.  Meant for
  scripts and Prometheus.  A browser never adds this header by itself, so a request that
  carries it cannot have been forged by another site, and it is exempt from the XSRF check.
* **Login cookie** -- a browser posts the token once to the login page and receives a
  signed, HttpOnly, ``SameSite=Strict`` cookie (``Secure`` over HTTPS).  Cookies *are* sent
  cross-site, so every state-changing request made with one must also carry the XSRF token
  of that login (:meth:`Gatekeeper.xsrf_token`): an HMAC of the login's nonce, keyed by the
  mount's secret.  Nobody without the secret can compute it, so a cookie planted from a
  sibling domain (which defeats a double-submit ``_xsrf`` cookie) is of no help, and the
  token of one login is worthless with another.

Wrong tokens are rate-limited per address and overall (:mod:`admin_ui.throttle`).

The cookie is signed with :func:`tornado.web.create_signed_value` using a secret that each
:class:`Gatekeeper` draws at random, so the dashboard works whether or not the application
has a ``cookie_secret``, and a restart (or a new mount) signs every browser out.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import time
from dataclasses import dataclass

from tornado.web import create_signed_value, decode_signed_value

#: Name of the signed login cookie (one per mount, scoped to the mount's path).
COOKIE_NAME = "tornado_mcp_admin"
#: How long a login lasts before the browser must sign in again.
COOKIE_MAX_AGE_DAYS = 1
#: Logins remembered per mount (each a few dozen bytes); the oldest is dropped past it.
MAX_LIVE_LOGINS = 1000

log = logging.getLogger("admin_ui.auth")
#: Operator names (for the audit log) are cut to this and to harmless characters.
_NAME_RE = re.compile(r"[^A-Za-z0-9_.+-]")


@dataclass(frozen=True)
class Identity:
    """An authenticated caller.

    ``name`` is what the operator typed at login (``"api"`` for bearer callers, the host
    app's user name behind its login).  :attr:`actor` is what the limits log records.
    """

    name: str

    @property
    def actor(self) -> str:
        return f"admin:{self.name}"


def clean_name(raw: str | None) -> str:
    """Reduce a login name to something safe to log: ``"Alice Smith"`` -> ``"AliceSmith"``."""
    name = _NAME_RE.sub("", (raw or "").strip())[:40]
    return name or "operator"


class Gatekeeper:
    """Checks tokens and signs and reads login cookies for one dashboard mount."""

    def __init__(self, token: str) -> None:
        if not isinstance(token, str) or not token:
            raise ValueError("admin_ui needs a non-empty token: the dashboard is never anonymous")
        if len(token) < 16:
            log.warning("admin_ui: the dashboard token is short (%d characters); use at least "
                        "16 random ones", len(token))
        self._token = token.encode("utf-8")
        self._secret = secrets.token_bytes(32)
        self._xsrf_key = hmac.new(self._secret, b"admin_ui xsrf", hashlib.sha256).digest()
        #: Logins still valid: nonce -> time signed. Logging out removes its nonce, so a
        #: copied cookie dies with the session; bounded, oldest dropped first.
        self._live: dict[str, float] = {}

    def token_matches(self, candidate: str | None) -> bool:
        """Compare ``candidate`` with the token in constant time (``hmac.compare_digest``)."""
        if candidate is None:
            return False
        return hmac.compare_digest(candidate.encode("utf-8"), self._token)

    def bearer(self, authorization: str | None) -> str | None:
        """The token in an ``Authorization: Bearer ...`` header, or ``None`` if there is none."""
        if not authorization:
            return None
        scheme, _, value = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        return value.strip()

    def sign(self, name: str) -> bytes:
        """The cookie value that proves ``name`` logged in (revocable with :meth:`revoke`)."""
        now = time.time()
        horizon = now - COOKIE_MAX_AGE_DAYS * 86400
        for nonce in [n for n, t in self._live.items() if t < horizon]:
            del self._live[nonce]
        while len(self._live) >= MAX_LIVE_LOGINS:
            del self._live[next(iter(self._live))]
        nonce = secrets.token_hex(16)
        self._live[nonce] = now
        return create_signed_value(self._secret, COOKIE_NAME, f"{nonce}:{clean_name(name)}")

    def _open(self, cookie: str | None) -> tuple[str, str] | None:
        if not cookie:
            return None
        value = decode_signed_value(
            self._secret, COOKIE_NAME, cookie, max_age_days=COOKIE_MAX_AGE_DAYS
        )
        if not value:
            return None
        nonce, _, name = value.decode("utf-8").partition(":")
        return (nonce, name) if nonce in self._live else None

    def read(self, cookie: str | None) -> str | None:
        """The operator name in a valid, unexpired, not logged-out cookie; else ``None``."""
        opened = self._open(cookie)
        return opened[1] if opened else None

    def revoke(self, cookie: str | None) -> None:
        """Log this cookie out: it is refused from now on, wherever it was copied to."""
        opened = self._open(cookie)
        if opened:
            self._live.pop(opened[0], None)

    def xsrf_token(self, cookie: str | None) -> str | None:
        """The XSRF token of the login in ``cookie`` (``None`` if it is not a valid login).

        The same for the whole life of one login, different for every other login."""
        opened = self._open(cookie)
        if opened is None:
            return None
        return hmac.new(self._xsrf_key, opened[0].encode("ascii", "replace"),
                        hashlib.sha256).hexdigest()

    def xsrf_matches(self, cookie: str | None, candidate: str | None) -> bool:
        """Whether ``candidate`` is the XSRF token of the login in ``cookie``."""
        expected = self.xsrf_token(cookie)
        if expected is None or not candidate:
            return False
        return hmac.compare_digest(candidate.encode("utf-8", "replace"),
                                   expected.encode("ascii"))
