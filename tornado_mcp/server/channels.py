"""A stream of messages to one client, as a Protocol: :class:`StreamChannel`.

A legacy :class:`~tornado_mcp.server.session.Session` keeps its GET stream as one, and the
engine's listen streams (:mod:`tornado_mcp.engine.listen_index`) send on one.  The
transports implement it (an SSE response over HTTP, ``SSEChannel``; the pipe over stdio),
from a layer above, so the protocol core and the engine name it by what they use of it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol


class StreamChannel(Protocol):
    """A stream of messages to a client: bounded, and never waiting on the peer.  Two
    implementations, both in the transports above this layer: ``SSEChannel`` (HTTP) and
    the stdio connection's listen channel."""

    @property
    def closed(self) -> bool:
        """True once the stream has ended."""

    @property
    def done(self) -> asyncio.Future[None]:
        """Resolves when the stream has ended."""

    @property
    def queue_depth(self) -> int:
        """Messages queued and not yet written."""

    def send(self, message: bytes, key: Any = None) -> bool:
        """Queue one encoded JSON-RPC message; False when the stream is closed or just
        overflowed.  ``key`` marks an idempotent change notification (see
        :func:`~tornado_mcp.engine.listen_index.change_key`): a stream may drop one while
        another with the key waits."""

    def close(self, final: bytes | None = None) -> None:
        """End the stream after what is queued (and ``final``, an encoded message)."""

    def abort(self) -> None:
        """End the stream now, dropping what is queued (a peer that is not reading)."""
