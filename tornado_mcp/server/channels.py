"""What a legacy :class:`~tornado_mcp.server.session.Session` holds of the transport that
serves it, as Protocols: its GET stream, and the requests it has in flight.

The session only keeps them (and asks whether the stream is still open); the transport
puts its own objects there (an SSE channel, a request's ``Context``), so this layer never
names a transport class.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol


class SessionStream(Protocol):
    """A session's GET stream: a channel of messages to the client."""

    @property
    def closed(self) -> bool:
        """True once the stream has ended."""

    @property
    def done(self) -> asyncio.Future[None]:
        """Resolves when the stream has ended."""

    def send(self, message: bytes, key: Any = None) -> bool:
        """Queue one encoded JSON-RPC message (``key`` marks an idempotent change a newer
        one makes redundant); False when the stream is closed or full."""

    def close(self, final: bytes | None = None) -> None:
        """End the stream after what is queued (and ``final``)."""

    def abort(self) -> None:
        """End the stream now, dropping what is queued (a peer that is not reading)."""


class Cancellable(Protocol):
    """A request in flight in a session: the client may cancel it, or the session end."""

    def cancel(self) -> None:
        """Stop the request's handler; a no-op once it is done or cancelled."""
