"""``body_timeout``: a request body must arrive whole within it, kept by the endpoint at
no cost per request.

Tornado keeps an ``HTTPServer``'s ``body_timeout`` by arming a timer for every request
body and running the body read as a task of its own to race it: about 150,000
instructions a request.  The endpoint keeps its own bound instead, the live option
``body_timeout``: each POST is noted among the bodies still arriving with its deadline,
and forgotten as soon as its body is complete.  One sweep per transport, every quarter of
the shortest bound seen (at most every second), closes the connection of any body still
arriving past its deadline and lets go of what it had read.  A body that trickles, or
stops, is cut off between ``body_timeout`` and ``body_timeout`` plus a quarter of it (at
most one second) after its headers arrived, logged as Tornado logs its own.

The servers this library starts keep the bound this way (``--body-timeout``, 60 s); an
application that mounts the endpoint sets the option, or its ``HTTPServer``'s own
``body_timeout`` (then Tornado's timer runs, for every route, at its cost), or both.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from tornado.ioloop import IOLoop

from . import seams

if TYPE_CHECKING:
    from .flow import RequestFlow

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
        #: A request -> the monotonic time by which its body must be complete.
        self._arriving: dict[RequestFlow, float] = {}
        self._loop: IOLoop | None = None
        self._handle: object | None = None
        #: The shortest bound seen, which paces the sweep.
        self._shortest: float | None = None

    def __len__(self) -> int:
        return len(self._arriving)

    def arriving(self, exchange: RequestFlow, timeout: float | None) -> None:
        """``exchange``'s body is about to be read: it must be complete within
        ``timeout`` seconds (``None``: no bound).  (Written flat: this runs for every
        request.)"""
        if timeout is None:
            return
        self._arriving[exchange] = time.monotonic() + timeout
        if self._shortest is None or timeout < self._shortest:
            self._shortest = timeout
            self._reschedule()

    def complete(self, exchange: RequestFlow) -> None:
        """``exchange``'s body is complete, or no longer read (refused, disconnected)."""
        self._arriving.pop(exchange, None)

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
        late = [x for x, deadline in self._arriving.items() if now >= deadline]
        for exchange in late:
            self._arriving.pop(exchange, None)
            request = exchange.request
            log.info("Timeout reading body from %s (%s %s): connection closed",
                     request.remote_ip, request.method, request.uri)
            cut_off(exchange)
        return len(late)


def cut_off(exchange: RequestFlow) -> None:
    """Close the connection of a body still arriving past its deadline (no method will
    run for it) and keep nothing of it."""
    exchange.take_body()  # and dropped
    exchange.deadline_met()
    exchange.transport.detach(exchange)
    seams.close(exchange.request.connection)
