"""The HTTP server's ``body_timeout``, kept by the endpoint at no cost per request.

Tornado enforces an ``HTTPServer``'s ``body_timeout`` by arming a timer for every request
body and running the body read as a task of its own to race it: about 150,000
instructions a request.  The MCP endpoint takes the bound over for its own requests: it
turns Tornado's timer off for the request (``set_body_timeout(None)``, before the body is
read), notes the request among the bodies still arriving with its deadline, and forgets it
as soon as the body is complete.  One sweep per transport, every quarter of the shortest
bound seen (at most every second), closes the connection of any body still arriving past
its deadline and lets go of what it had read, as Tornado does.  A body that trickles, or
stops, is cut off between ``body_timeout`` and ``body_timeout`` plus a quarter of it (at
most one second) after its headers arrived.  Other routes of the application keep
Tornado's own timer.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from tornado.http1connection import HTTP1Connection
from tornado.ioloop import IOLoop

if TYPE_CHECKING:
    from .exchange import Exchange

log = logging.getLogger("tornado_mcp.transport")

#: The longest pause between two sweeps, in seconds (also while no bound is in use).
MAX_SWEEP_INTERVAL = 1.0
#: The shortest (a tiny ``body_timeout`` does not make the sweep spin).
MIN_SWEEP_INTERVAL = 0.01


def sweep_interval(timeout: float | None) -> float:
    """Seconds between sweeps when the shortest bound in use is ``timeout``."""
    if timeout is None:
        return MAX_SWEEP_INTERVAL
    return max(MIN_SWEEP_INTERVAL, min(MAX_SWEEP_INTERVAL, timeout / 4))


class BodyDeadlines:
    """The bodies still arriving on one transport, and the sweep that cuts off late ones."""

    __slots__ = ("_arriving", "_handle", "_loop", "_shortest")

    def __init__(self) -> None:
        #: Handler -> the monotonic time by which its body must be complete.
        self._arriving: dict[Exchange, float] = {}
        self._loop: IOLoop | None = None
        self._handle: object | None = None
        #: The shortest bound seen, which paces the sweep.
        self._shortest: float | None = None

    def __len__(self) -> int:
        return len(self._arriving)

    def take_over(self, handler: Exchange) -> None:
        """Keep the HTTP server's ``body_timeout`` for ``handler``'s request (called
        before its body is read) instead of Tornado's per-request timer: that timer is
        turned off, and the body must be complete within the bound it would have kept.
        (Written flat: this runs for every request.)"""
        connection = handler.request.connection
        if not isinstance(connection, HTTP1Connection):
            return
        timeout: float | None = connection._body_timeout
        if timeout is None:
            return
        connection.set_body_timeout(None)  # type: ignore[arg-type]
        self._arriving[handler] = time.monotonic() + timeout
        if self._shortest is None or timeout < self._shortest:
            self._shortest = timeout
            self._reschedule()

    def complete(self, handler: Exchange) -> None:
        """``handler``'s body is complete, or no longer read (refused, disconnected)."""
        self._arriving.pop(handler, None)

    def start(self, loop: IOLoop) -> None:
        """Begin sweeping on ``loop`` (the transport calls it on its first request)."""
        if self._loop is None:
            self._loop = loop
            self._schedule()

    def stop(self) -> None:
        if self._loop is not None and self._handle is not None:
            self._loop.remove_timeout(self._handle)
        self._handle = None
        self._loop = None

    def _reschedule(self) -> None:
        if self._loop is not None and self._handle is not None:
            self._loop.remove_timeout(self._handle)
            self._schedule()

    def _schedule(self) -> None:
        assert self._loop is not None
        self._handle = self._loop.call_later(sweep_interval(self._shortest), self._sweep)

    def _sweep(self) -> None:
        self._handle = None
        try:
            self.cut_off_late(time.monotonic())
        finally:
            if self._loop is not None:
                self._schedule()

    def cut_off_late(self, now: float) -> int:
        """Close every connection whose body is still arriving past its deadline; returns
        how many were cut off."""
        if not self._arriving:
            return 0
        late = [h for h, deadline in self._arriving.items() if now >= deadline]
        for handler in late:
            self._arriving.pop(handler, None)
            log.info("Timeout reading body from %s (%s %s): connection closed",
                     handler.request.remote_ip, handler.request.method, handler.request.uri)
            cut_off(handler)
        return len(late)


def cut_off(handler: Exchange) -> None:
    """Close the connection of a body still arriving past its deadline (Tornado then never
    calls the handler's method) and keep nothing of it."""
    handler.take_body()  # and dropped
    handler.transport.detach(handler)
    connection = handler.request.connection
    if isinstance(connection, HTTP1Connection):
        connection.close()
