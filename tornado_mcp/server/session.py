"""Legacy-era sessions: what an ``initialize`` leaves behind, and the store that bounds them.

A session keeps only what it needs: the client's name and version, the negotiated protocol
version, its log level, and the ``clientInfo`` and ``capabilities`` of its ``initialize`` as
compact JSON bytes (decoded on the rare occasions they are read), which keeps an idle
session small.  The store registers a session only once it is accepted, removes it in one
place (:meth:`SessionStore.remove`) whatever the reason, and evicts idle ones both
periodically and on access.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..protocol import RESOURCES_UPDATED, jsonio
from ..protocol.identity import ANONYMOUS, Principal

if TYPE_CHECKING:
    from .channels import StreamChannel
    from .context import Context


class Session:
    """One legacy session; see the module docstring."""

    __slots__ = (
        "__weakref__",
        "_retained",
        "client_name",
        "client_version",
        "created_at",
        "get_channel",
        "id",
        "in_flight",
        "last_active",
        "log_level",
        "notifier",
        "pending",
        "principal",
        "protocol_version",
        "retained_values",
        "subscription_bytes",
        "subscriptions",
    )

    def __init__(self, session_id: str, protocol_version: str, client_info: Any,
                 capabilities: Any, retained_values: int) -> None:
        self.id = session_id
        self.protocol_version = protocol_version
        info = client_info if isinstance(client_info, dict) else {}
        self.client_name: str | None = info.get("name") if isinstance(info.get("name"), str) \
            else None
        self.client_version: str | None = info.get("version") \
            if isinstance(info.get("version"), str) else None
        self._retained = jsonio.dumps_retained({"clientInfo": client_info,
                                                "capabilities": capabilities})
        self.retained_values = retained_values
        self.created_at = time.time()
        self.last_active = time.monotonic()
        self.log_level: str | None = None
        self.get_channel: StreamChannel | None = None
        self.in_flight: dict[Any, Context] = {}
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.notifier: Callable[[Session, str, dict[str, Any] | None], bool] | None = None
        #: Who opened the session; only that caller may use it (see :mod:`tornado_mcp.auth`).
        self.principal: Principal = ANONYMOUS
        #: The URIs it subscribed to, when the server tracks subscriptions
        #: (:meth:`~tornado_mcp.Server.track_subscriptions`), and their UTF-8 bytes.
        self.subscriptions: set[str] = set()
        self.subscription_bytes = 0

    @property
    def retained_bytes(self) -> int:
        """Bytes kept: its ``initialize``'s client info and capabilities, and the URIs
        it subscribed to."""
        return len(self._retained) + self.subscription_bytes

    @property
    def client_info(self) -> dict[str, Any] | None:
        info = jsonio.loads(self._retained).get("clientInfo")
        return info if isinstance(info, dict) else None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        caps = jsonio.loads(self._retained).get("capabilities")
        return caps if isinstance(caps, dict) else {}

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def idle_for(self, now: float) -> float:
        """Seconds idle; a session with a request in flight or a GET stream is never idle."""
        if self.in_flight or (self.get_channel is not None and not self.get_channel.closed):
            return 0.0
        return now - self.last_active

    def send_notification(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Send a notification on this session's GET stream only (thread-safe).

        False when the session has no GET stream (or has ended).
        """
        if self.notifier is None:
            return False
        return self.notifier(self, method, params)

    def notify_resources_updated(self, uri: str) -> bool:
        """Tell this session, and only it, that ``uri`` changed (on its GET stream;
        thread-safe).  Listen streams and the sessions the server tracks are reached by
        :meth:`Server.notify_resources_updated`, once each: call that once per change."""
        if self.notifier is None:
            return False
        return self.notifier(self, RESOURCES_UPDATED, {"uri": uri})


class SessionStore:
    """Sessions by id, bounded by ``max_sessions`` and ``session_idle_timeout``."""

    def __init__(self, max_sessions: Callable[[], int | None],
                 idle_timeout: Callable[[], float | None],
                 on_remove: Callable[[Session], None]) -> None:
        self._sessions: dict[str, Session] = {}
        self._max_sessions = max_sessions
        self._idle_timeout = idle_timeout
        self._on_remove = on_remove

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[Session]:
        return iter(list(self._sessions.values()))

    @staticmethod
    def new_id() -> str:
        return secrets.token_hex(16)

    def _expired(self, session: Session, now: float) -> bool:
        timeout = self._idle_timeout()
        # The clock test first: it is cheap, and idle_for can only be shorter.
        return timeout is not None and now - session.last_active > timeout \
            and session.idle_for(now) > timeout

    def get(self, session_id: str) -> Session | None:
        """The live session, evicting it first if it has expired."""
        session = self._sessions.get(session_id)
        if session is not None and self._expired(session, time.monotonic()):
            self.remove(session)
            return None
        return session

    def admit(self, session: Session) -> bool:
        """Register ``session`` unless the store is full (after reclaiming expired ones)."""
        cap = self._max_sessions()
        if cap is not None and len(self._sessions) >= cap:
            self.reap()
            if len(self._sessions) >= cap:
                return False
        self._sessions[session.id] = session
        return True

    def remove(self, session: Session) -> bool:
        """The one place a session ends: DELETE, expiry, an admin, or close()."""
        if self._sessions.get(session.id) is not session:
            return False
        del self._sessions[session.id]
        self._on_remove(session)
        return True

    def reap(self) -> int:
        now = time.monotonic()
        expired = [s for s in self._sessions.values() if self._expired(s, now)]
        for session in expired:
            self.remove(session)
        return len(expired)
