"""Server-Sent Events on a Tornado response, with a bounded outgoing queue.

An :class:`SSEChannel` owns one open response.  :meth:`SSEChannel.send` never blocks and
never holds a lock: when nothing is being flushed the frame is written at once; while a
flush is under way frames wait in a queue of at most ``max_queue`` entries, and a consumer
that stops reading long enough to fill it is disconnected, so it cannot slow anyone else or
make the server hold more.  Idle channels get a keepalive comment every
``keepalive()`` seconds, and a channel whose pending write has not completed for
``stall()`` seconds is disconnected too, so a peer that stopped reading frees its slot
even when all it is sent are coalesced duplicates (both read each time, so a live change
applies at once).

All methods must be called on the IOLoop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError

from . import jsonio
from .protocol import Refusal

SSE_HEADERS = (
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache, no-transform"),
    ("Connection", "keep-alive"),
    ("X-Accel-Buffering", "no"),
)

KEEPALIVE_FRAME = b": ping\n\n"


def frame(message: Any) -> bytes:
    """One SSE event carrying a JSON-RPC message."""
    return b"event: message\ndata: " + jsonio.dumps(message) + b"\n\n"


class SSEChannel:
    """One open SSE response; see the module docstring."""

    __slots__ = ("_closing", "_flush_started", "_flushing", "_keepalive", "_max_queue",
                 "_on_overflow", "_queue", "_queued_keys", "_stall", "_timer", "_timer_due",
                 "closed",
                 "coalesced", "done", "handler", "last_write")

    def __init__(self, handler: Any, max_queue: Callable[[], int],
                 keepalive: Callable[[], float | None] = lambda: None,
                 on_overflow: Callable[[Refusal], None] | None = None,
                 stall: Callable[[], float | None] = lambda: None) -> None:
        for name, value in SSE_HEADERS:
            handler.set_header(name, value)
        self.handler = handler
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
        self.closed = False
        self.last_write = time.monotonic()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arm_timer()

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        """Send the status line and headers now, before any event."""
        self._write(b"")

    def send(self, data: bytes, key: Any = None) -> bool:
        """Queue or write one frame; False when the channel is closed or just overflowed.

        ``key`` marks an idempotent notification (a list change, a resource update): while
        a frame with the same key is still waiting, another is redundant and is dropped, so
        a burst of changes costs a slow stream one frame per distinct change, not one per
        event.
        """
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
        """End the response gracefully, after ``final`` and everything queued before it."""
        if self.closed or self._closing:
            return
        if final is not None:
            self.send(final)
        self._closing = True
        if not self._flushing:
            self._finish()

    def abort(self) -> None:
        """Drop the connection now (the peer is gone, or too slow)."""
        if self.closed:
            return
        self._mark_closed()
        try:
            conn = self.handler.request.connection
            if conn is not None:
                conn.close()
        except Exception:
            pass

    # -- internals ------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        try:
            if data:
                self.handler.write(data)
            fut = self.handler.flush()
        except (StreamClosedError, RuntimeError):
            self._mark_closed()
            return
        self._flushing = True
        self.last_write = self._flush_started = time.monotonic()
        stall = self._stall()
        if stall is not None and self._flush_started + stall < self._timer_due:
            self._rearm()  # a stall would be due before the timer fires
        fut.add_done_callback(self._flushed)

    def _flushed(self, fut: asyncio.Future[None]) -> None:
        self._flushing = False
        if fut.cancelled() or fut.exception() is not None:
            self._mark_closed()
            return
        if self.closed:
            return
        if self._queue:
            data = b"".join(self._queue)
            self._queue.clear()
            self._queued_keys.clear()
            self._write(data)
        elif self._closing:
            self._finish()

    def _finish(self) -> None:
        if self.closed:
            return
        self._mark_closed()
        with contextlib.suppress(Exception):
            self.handler.finish()

    def _mark_closed(self) -> None:
        self.closed = True
        self._queue.clear()
        self._queued_keys.clear()
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None
        if not self.done.done():
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
        if stall is not None and self._flushing:
            due = min(due, self._flush_started + stall)
        loop = IOLoop.current()
        self._timer_due = due
        self._timer = loop.call_at(loop.time() + max(0.0, due - now), self._tick)

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
        if stall is not None and self._flushing and now - self._flush_started >= stall:
            if self._on_overflow is not None:
                self._on_overflow(Refusal.STREAM_STALL_TIMEOUT)
            self.abort()  # the peer has not taken a byte for too long
            return
        interval = self._keepalive()
        if not self._closing and interval is not None \
                and now - self.last_write >= interval * 0.999:
            self.send(KEEPALIVE_FRAME)
        self._arm_timer()
