"""The consent form's ticket: what the user is asked to approve, signed, bound to them.

The consent page carries the authorization request in a hidden field, signed with a key
derived from the store's secret (HMAC-SHA256), naming the user it was shown to and
expiring after :data:`TICKET_TTL` seconds.  The form's POST is honoured only with a
ticket that verifies, has not expired and names the user now logged in: a page on another
site can make a browser post the form (CSRF), but cannot read a ticket shown to that user,
and a ticket the attacker got for themselves names someone else.  Nothing is stored
between the page and the POST.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from .store import derive

#: Seconds a consent page may stay open before its form is refused.
TICKET_TTL = 600
#: The longest ticket accepted (the authorization request it carries is bounded too).
MAX_TICKET_CHARS = 16384


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Tickets:
    """Signs and opens consent tickets with a key derived from ``secret``."""

    def __init__(self, secret: bytes) -> None:
        self._key = derive(secret, "consent ticket")

    def _mac(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode(), hashlib.sha256).digest())

    def issue(self, subject: str, params: dict[str, str]) -> str:
        """A ticket for ``subject`` approving the authorization request ``params``."""
        body = _b64(json.dumps({"sub": subject, "exp": int(time.time()) + TICKET_TTL,
                                "req": params}, separators=(",", ":")).encode())
        return f"{body}.{self._mac(body)}"

    def open(self, ticket: str, subject: str) -> dict[str, str] | None:
        """The request a valid, unexpired ticket issued to ``subject`` carries, else None."""
        if not isinstance(ticket, str) or len(ticket) > MAX_TICKET_CHARS:
            return None
        body, _, mac = ticket.partition(".")
        if not body or not hmac.compare_digest(mac, self._mac(body)):
            return None
        try:
            data: Any = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(data, dict) or data.get("sub") != subject \
                or not isinstance(data.get("exp"), int) or data["exp"] < time.time():
            return None
        req = data.get("req")
        if not isinstance(req, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in req.items()):
            return None
        return req
