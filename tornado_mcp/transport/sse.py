"""Server-Sent Events on a response, with a bounded outgoing queue.

An :class:`SSEChannel` owns one open response of either way of serving a request: it
writes with ``write`` and ``flush``, and when the stream ends it tells the exchange
(``stream_ended``), which finishes the response in the request's own task (see
:meth:`~tornado_mcp.transport.flow.RequestFlow.stream`), so whatever wraps the request
sees it end where it began.  :meth:`SSEChannel.send` frames one
JSON-RPC message as an SSE event; it never blocks and never holds a lock: when nothing is
being flushed the frame is written at once; while a flush is under way frames wait in a
queue of at most ``max_queue`` entries, and a consumer that stops reading long enough to
fill it is disconnected, so it cannot slow anyone else or make the server hold more.
Idle channels get a keepalive comment every ``keepalive()`` seconds, and a peer that has
taken nothing for ``stall()`` seconds while data waits for it is disconnected too, so it
frees its slot even when all it is sent are coalesced duplicates (both read each time, so
a live change applies at once).

"Data waits" covers both places bytes can wait: a write of ours still pending, and bytes
already handed to the kernel that the peer has not acknowledged.  The second matters
because a kernel send buffer holds up to megabytes: a peer that stops reading a quiet
stream never leaves a write of ours pending.  On Linux the channel reads the socket's
unacknowledged byte count (``SIOCOUTQ``) on its timer, and counts the peer as progressing
only while what it acknowledged grows (the bytes the channel's completed flushes handed
to the kernel, less that backlog); it drops a stalled peer between one and two
``stall()`` periods after it stopped reading.  Elsewhere only pending writes count.

All methods must be called on the IOLoop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError

from ..protocol import Refusal
from . import seams

if TYPE_CHECKING:
    from .flow import RequestFlow

__all__ = ["KEEPALIVE_FRAME", "SSE_CONTENT_TYPE", "SSE_EXTRA_HEADERS", "SSE_HEADERS",
           "SSEChannel", "frame"]

if sys.platform.startswith("linux"):
    import fcntl
    import termios

    def unacknowledged_bytes(sock: socket.socket) -> int | None:
        """Bytes written to ``sock`` that its peer has not acknowledged (``SIOCOUTQ``),
        or ``None`` when the socket cannot say."""
        try:
            out = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
        except (OSError, ValueError):
            return None
        value: int = struct.unpack("i", out)[0]
        return value
else:  # pragma: no cover - exercised on Linux only
    def unacknowledged_bytes(sock: socket.socket) -> int | None:
        """Not available on this platform: only pending writes count as waiting."""
        return None

SSE_CONTENT_TYPE = "text/event-stream"
#: The headers of an SSE response besides its ``Content-Type``.
SSE_EXTRA_HEADERS = (
    ("Cache-Control", "no-cache, no-transform"),
    ("Connection", "keep-alive"),
    ("X-Accel-Buffering", "no"),
)
SSE_HEADERS = (("Content-Type", SSE_CONTENT_TYPE), *SSE_EXTRA_HEADERS)

KEEPALIVE_FRAME = b": ping\n\n"


def frame(message: bytes) -> bytes:
    """One SSE event carrying the encoded JSON-RPC message ``message``."""
    return b"event: message\ndata: " + message + b"\n\n"


class SSEChannel:
    """One open SSE response; see the module docstring."""

    __slots__ = ("_acked", "_closing", "_flush_started", "_flushing", "_in_flight",
                 "_keepalive", "_max_queue", "_on_overflow", "_queue", "_queued_keys",
                 "_stall", "_timer", "_timer_due", "_waiting_since", "_written", "closed",
                 "coalesced", "done", "ended", "exchange", "last_write")

    def __init__(self, exchange: RequestFlow, max_queue: Callable[[], int],
                 keepalive: Callable[[], float | None] = lambda: None,
                 on_overflow: Callable[[Refusal], None] | None = None,
                 stall: Callable[[], float | None] = lambda: None) -> None:
        for name, value in SSE_HEADERS:
            exchange.set_header(name, value)
        #: The request this stream answers (an ``MCPHandler`` or a fast-path exchange).
        self.exchange = exchange
        self._queue: deque[bytes] = deque()
        self._queued_keys: set[Any] = set()
        self.coalesced = 0
        self._flushing = False
        self._closing = False
        self._max_queue = max_queue
        self._keepalive = keepalive
        self._on_overflow = on_overflow
        self._stall = stall
        self._flush_started = 0.0
        self._timer_due = 0.0
        self._timer: object | None = None
        #: Bytes the peer had acknowledged when data was last seen waiting in the kernel,
        #: and since when it has waited with no more acknowledged (None: nothing waits).
        self._acked = 0
        self._waiting_since: float | None = None
        #: Bytes handed to the kernel by completed flushes, and those of the flush under way.
        self._written = 0
        self._in_flight = 0
        self.closed = False
        self.last_write = time.monotonic()
        loop = asyncio.get_running_loop()
        #: Resolves when the stream has ended: nothing more will be sent on it.
        self.ended: asyncio.Future[None] = loop.create_future()
        #: Resolves when the response is over: finished and written, or dropped.
        self.done: asyncio.Future[None] = loop.create_future()
        self._arm_timer()

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        """Send the status line and headers now, before any event."""
        self._write(b"")

    def send(self, message: bytes, key: Any = None) -> bool:
        """Queue or write one encoded JSON-RPC message as an event; False when the
        channel is closed or just overflowed.

        ``key`` marks an idempotent notification (a list change, a resource update): while
        a frame with the same key is still waiting, another is redundant and is dropped, so
        a burst of changes costs a slow stream one frame per distinct change, not one per
        event.
        """
        return self.send_frame(b"event: message\ndata: " + message + b"\n\n", key)

    def send_frame(self, data: bytes, key: Any = None) -> bool:
        """Queue or write one SSE frame as it is (an event with an id, a ``retry``, a
        comment); see :meth:`send`."""
        if self.closed or self._closing:
            return False
        if self._flushing:
            if key is not None:
                if key in self._queued_keys:
                    self.coalesced += 1
                    return True
                self._queued_keys.add(key)
            if len(self._queue) >= self._max_queue():
                if self._on_overflow is not None:
                    self._on_overflow(Refusal.MAX_STREAM_QUEUE)
                self.abort()
                return False
            self._queue.append(data)
            return True
        self._write(data)
        return not self.closed

    def close(self, final: bytes | None = None) -> None:
        """End the stream gracefully, after everything queued and ``final`` (an encoded
        message): both are handed to the response at once (the queue is bounded, and this
        is its end), and the exchange finishes it; :attr:`done` resolves once that is
        written."""
        if self.closed or self._closing:
            return
        self._closing = True
        data = b"".join(self._queue)
        if final is not None:
            data += b"event: message\ndata: " + final + b"\n\n"
        self._queue.clear()
        self._queued_keys.clear()
        if data:
            with contextlib.suppress(RuntimeError):  # the response was finished under us
                self.exchange.write(data)
        self._mark_closed(dropped=False)
        self.exchange.stream_ended(self)

    def abort(self) -> None:
        """Drop the connection now (the peer is gone, or too slow)."""
        if self.closed and self.done.done():
            return
        self._mark_closed()
        seams.close(self.exchange.request.connection)

    def finished(self, written: asyncio.Future[None]) -> None:
        """The exchange finished the response: :attr:`done` once ``written`` is."""
        def over(_: asyncio.Future[None]) -> None:
            if not self.done.done():
                self.done.set_result(None)
        written.add_done_callback(over)

    # -- internals ------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        try:
            if data:
                self.exchange.write(data)
            fut = self.exchange.flush()
        except (StreamClosedError, RuntimeError):
            self._mark_closed()
            return
        self._flushing = True
        self._in_flight = len(data)
        self.last_write = self._flush_started = time.monotonic()
        stall = self._stall()
        if stall is not None and self._flush_started + stall / 2 < self._timer_due:
            self._rearm()  # a stall check would be due before the timer fires
        fut.add_done_callback(self._flushed)

    def _flushed(self, fut: asyncio.Future[None]) -> None:
        self._flushing = False
        if fut.cancelled() or fut.exception() is not None:
            self._mark_closed()
            return
        self._written += self._in_flight
        if self.closed:
            return
        if self._queue:
            data = b"".join(self._queue)
            self._queue.clear()
            self._queued_keys.clear()
            self._write(data)

    def _mark_closed(self, dropped: bool = True) -> None:
        """Nothing more is sent: the stream has :attr:`ended` (and, ``dropped``, the
        response is over too: nobody will finish it)."""
        self.closed = True
        self._queue.clear()
        self._queued_keys.clear()
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None
        if not self.ended.done():
            self.ended.set_result(None)
        if dropped and not self.done.done():
            self.done.set_result(None)

    def _arm_timer(self) -> None:
        """Wake at the next keepalive due time, or when a pending write would count as
        stalled, whichever is first (re-checking every few seconds when neither is set,
        since both can be turned on while the stream is open)."""
        if self.closed:
            return
        now = time.monotonic()
        due = now + 5.0
        interval = self._keepalive()
        if interval is not None:
            due = min(due, self.last_write + interval)
        stall = self._stall()
        if stall is not None:
            if self._flushing:
                due = min(due, self._flush_started + stall)
            if self._waiting_since is not None:
                due = min(due, now + stall / 2)
            elif self.last_write + stall / 2 > now:  # look once soon after each write
                due = min(due, self.last_write + stall / 2)
        loop = IOLoop.current()
        self._timer_due = due
        self._timer = loop.call_at(loop.time() + max(0.0, due - now), self._tick)

    def _stalled(self, now: float, stall: float) -> bool:
        """Whether the peer has taken nothing for ``stall`` seconds while data waited."""
        if self._flushing and now - self._flush_started >= stall:
            return True  # a write of ours has been pending all that time
        sock = seams.socket_of(self.exchange.request.connection)
        unacked = unacknowledged_bytes(sock) if sock is not None else None
        if not unacked:
            self._waiting_since = None
            return False
        acked = self._written - unacked
        if self._waiting_since is None or acked > self._acked:
            self._acked = acked
            self._waiting_since = now
            return False
        return now - self._waiting_since >= stall

    def _rearm(self) -> None:
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None
        self._arm_timer()

    def _tick(self) -> None:
        self._timer = None
        if self.closed:
            return
        now = time.monotonic()
        stall = self._stall()
        if stall is not None and self._stalled(now, stall):
            if self._on_overflow is not None:
                self._on_overflow(Refusal.STREAM_STALL_TIMEOUT)
            self.abort()  # the peer has not taken a byte for too long
            return
        interval = self._keepalive()
        if not self._closing and interval is not None \
                and now - self.last_write >= interval * 0.999:
            self.send_frame(KEEPALIVE_FRAME)
        self._arm_timer()
