"""Legacy ``resources/subscribe``, kept for you when you ask: :meth:`Server.track_subscriptions`.

The library keeps no subscription state of its own unless asked: your ``on_subscribe`` and
``on_unsubscribe`` handlers decide what a legacy subscription means.  Asked, a
:class:`SubscriptionTracker` records which URIs each legacy session subscribed to, and then
one call, ``server.notify_resources_updated(uri)``, reaches every session that subscribed
to ``uri`` and every listen stream naming it, once each, on every transport and, in a
cluster, on the process that holds each session.

Every subscription is bounded: at most ``max_per_session`` URIs per session, each of at
most ``max_uri_bytes`` UTF-8 bytes (over either: -32602, nothing recorded).  A session's
subscriptions are counted in what it retains (its ``retained_bytes`` and
``retained_values`` on the dashboard) and dropped with the session.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from ..protocol import INVALID_PARAMS
from ..protocol.errors import MCPError

if TYPE_CHECKING:
    from .session import Session

#: URIs one legacy session may subscribe to, by default.
MAX_SUBSCRIPTIONS_PER_SESSION = 100
#: The longest URI a subscription may name, in UTF-8 bytes, by default.
MAX_SUBSCRIPTION_URI_BYTES = 2048


class SubscriptionTracker:
    """Which legacy sessions subscribed to which URIs; see the module docstring.

    Subscribing and unsubscribing run on the event loop; :meth:`subscribers` may be
    called from any thread (notifications may be sent from any thread).
    """

    def __init__(self, max_per_session: int = MAX_SUBSCRIPTIONS_PER_SESSION,
                 max_uri_bytes: int = MAX_SUBSCRIPTION_URI_BYTES) -> None:
        if max_per_session < 1 or max_uri_bytes < 1:
            raise ValueError("max_per_session and max_uri_bytes must be positive")
        self.max_per_session = max_per_session
        self.max_uri_bytes = max_uri_bytes
        self._lock = threading.Lock()
        self._by_uri: dict[str, weakref.WeakSet[Session]] = {}

    def subscribe(self, session: Session, uri: str) -> None:
        """Record that ``session`` subscribed to ``uri`` (again: nothing changes)."""
        if uri in session.subscriptions:
            return
        size = len(uri.encode("utf-8"))
        if size > self.max_uri_bytes:
            raise MCPError(INVALID_PARAMS, f"Invalid params: a subscribed uri may be at most "
                                           f"{self.max_uri_bytes} bytes",
                           {"limit": "max_uri_bytes", "value": self.max_uri_bytes})
        if len(session.subscriptions) >= self.max_per_session:
            raise MCPError(INVALID_PARAMS, "Invalid params: a session may subscribe to at "
                                           f"most {self.max_per_session} resources",
                           {"limit": "max_per_session", "value": self.max_per_session})
        with self._lock:
            session.subscriptions.add(uri)
            session.subscription_bytes += size
            session.retained_values += 1
            self._by_uri.setdefault(uri, weakref.WeakSet()).add(session)

    def unsubscribe(self, session: Session, uri: str) -> None:
        """Forget ``session``'s subscription to ``uri``, if it had one."""
        if uri not in session.subscriptions:
            return
        with self._lock:
            self._drop(session, uri)

    def forget(self, session: Session) -> None:
        """The session ended: drop all its subscriptions."""
        with self._lock:
            for uri in list(session.subscriptions):
                self._drop(session, uri)

    def subscribed(self, session: Session, uri: str) -> bool:
        return uri in session.subscriptions

    def subscribers(self, uri: str) -> list[Session]:
        """The live sessions subscribed to ``uri`` (any thread)."""
        with self._lock:
            holders = self._by_uri.get(uri)
            return list(holders) if holders else []

    def __len__(self) -> int:
        """URIs at least one session is subscribed to."""
        return len(self._by_uri)

    def _drop(self, session: Session, uri: str) -> None:
        session.subscriptions.discard(uri)
        session.subscription_bytes -= len(uri.encode("utf-8"))
        session.retained_values -= 1
        holders = self._by_uri.get(uri)
        if holders is not None:
            holders.discard(session)
            if not holders:
                del self._by_uri[uri]
