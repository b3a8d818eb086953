"""Server-Sent Events on a Tornado response, with a bounded outgoing queue.

An :class:`SSEChannel` owns one open response.  :meth:`SSEChannel.send` never blocks and
never holds a lock: when nothing is being flushed the frame is written at once; while a
flush is under way frames wait in a queue of at most ``max_queue`` entries, and a consumer
that stops reading long enough to fill it is disconnected, so it cannot slow anyone else or
make the server hold more.  Idle channels get a keepalive comment every
``keepalive()`` seconds (read each time, so a live change applies at once).

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

    __slots__ = ("_closing", "_flushing", "_keepalive", "_max_queue", "_on_overflow",
                 "_queue", "_timer", "closed", "done", "handler", "last_write")

    def __init__(self, handler: Any, max_queue: Callable[[], int],
                 keepalive: Callable[[], float | None] = lambda: None,
                 on_overflow: Callable[[], None] | None = None) -> None:
        for name, value in SSE_HEADERS:
            handler.set_header(name, value)
        self.handler = handler
        self._queue: deque[bytes] = deque()
        self._flushing = False
        self._closing = False
        self._max_queue = max_queue
        self._keepalive = keepalive
        self._on_overflow = on_overflow
        self._timer: object | None = None
        self.closed = False
        self.last_write = time.monotonic()
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._arm_keepalive()

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        """Send the status line and headers now, before any event."""
        self._write(b"")

    def send(self, data: bytes) -> bool:
        """Queue or write one frame; False when the channel is closed or just overflowed."""
        if self.closed or self._closing:
            return False
        if self._flushing:
            if len(self._queue) >= self._max_queue():
                if self._on_overflow is not None:
                    self._on_overflow()
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
        self.last_write = time.monotonic()
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
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None
        if not self.done.done():
            self.done.set_result(None)

    def _arm_keepalive(self) -> None:
        interval = self._keepalive()
        if interval is None or self.closed:
            self._timer = None
            # Check again later in case the interval is turned on while we are open.
            self._timer = IOLoop.current().call_later(5.0, self._keepalive_tick)
            return
        due = self.last_write + interval
        self._timer = IOLoop.current().call_at(
            IOLoop.current().time() + max(0.0, due - time.monotonic()), self._keepalive_tick)

    def _keepalive_tick(self) -> None:
        self._timer = None
        if self.closed or self._closing:
            return
        interval = self._keepalive()
        if interval is not None and time.monotonic() - self.last_write >= interval * 0.999:
            self.send(KEEPALIVE_FRAME)
        if not self.closed:
            self._arm_keepalive()
