"""The last few minutes of a running server, kept in memory for the dashboard's plots.

A :class:`History` is a fixed-size ring of :class:`Sample` rows, one taken about every second
by a Tornado :class:`~tornado.ioloop.PeriodicCallback`.  Each sample costs one
``transport.snapshot(sessions=False, streams=False)`` (totals only, no rows) and a few
``psutil`` calls, so sampling stays cheap however many sessions the server holds.

The ring never grows: at the default 600 slots and one sample a second it covers ten
minutes, and the oldest sample falls off as a new one arrives.  Nothing here is persisted;
a restarted server starts with an empty plot.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import psutil
from tornado.ioloop import PeriodicCallback

from tornado_mcp.introspection import Snapshot

log = logging.getLogger("admin_ui.history")

#: How many samples the ring keeps (ten minutes at one a second).
DEFAULT_CAPACITY = 600
#: Milliseconds between two samples.
DEFAULT_INTERVAL_MS = 1000


@dataclass(frozen=True)
class ProcessStats:
    """What ``psutil`` says about this process right now.

    ``open_fds`` is ``None`` where the platform cannot count descriptors (Windows).
    """

    rss_bytes: int
    cpu_percent: float
    open_fds: int | None
    threads: int
    started_at: float
    uptime_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProcessProbe:
    """Reads process statistics through one long-lived :class:`psutil.Process`.

    ``psutil.Process.cpu_percent(interval=None)`` measures the CPU used *since its previous
    call on the same object*, so the probe keeps one object and remembers the last reading:
    :meth:`read` with ``measure_cpu=False`` reuses it instead of restarting the interval.
    """

    def __init__(self) -> None:
        self._process = psutil.Process(os.getpid())
        self._started_at = float(self._process.create_time())
        self._cpu = float(self._process.cpu_percent(interval=None))  # primes the counter

    def read(self, measure_cpu: bool = True) -> ProcessStats:
        proc = self._process
        with proc.oneshot():
            if measure_cpu:
                self._cpu = float(proc.cpu_percent(interval=None))
            try:
                fds: int | None = int(proc.num_fds())
            except (AttributeError, psutil.Error):
                fds = None
            return ProcessStats(
                rss_bytes=int(proc.memory_info().rss),
                cpu_percent=self._cpu,
                open_fds=fds,
                threads=int(proc.num_threads()),
                started_at=self._started_at,
                uptime_seconds=max(0.0, time.time() - self._started_at),
            )

    def cpu_seconds(self) -> float:
        """User plus system CPU time consumed so far (for the Prometheus counter)."""
        times = self._process.cpu_times()
        return float(times.user + times.system)


@dataclass(frozen=True)
class Sample:
    """One point on every plot."""

    t: float  # wall-clock seconds since the epoch
    sessions: int
    streams: int
    retained_bytes: int
    rss_bytes: int
    cpu_percent: float
    request_rate: float  # JSON-RPC messages per second since the previous sample

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class History:
    """A ring of :class:`Sample` rows plus the sampler that fills it.

    ``take`` is the function that returns a totals-only snapshot; passing it in (rather than
    the transport) keeps this class easy to test with made-up numbers.
    """

    def __init__(
        self,
        take: Callable[[], Snapshot],
        probe: ProcessProbe,
        capacity: int = DEFAULT_CAPACITY,
        interval_ms: int = DEFAULT_INTERVAL_MS,
    ) -> None:
        self._take = take
        self._probe = probe
        self._samples: deque[Sample] = deque(maxlen=capacity)
        self._interval_ms = interval_ms
        self._callback: PeriodicCallback | None = None
        self._last_requests: tuple[float, int] | None = None

    @property
    def running(self) -> bool:
        return self._callback is not None and self._callback.is_running()

    def start(self) -> None:
        """Start sampling on the running IOLoop; calling it again does nothing."""
        if self.running:
            return
        self.sample()
        self._callback = PeriodicCallback(self._sample_safely, self._interval_ms)
        self._callback.start()

    def start_if_loop_running(self) -> None:
        """Start now when called inside a running event loop; otherwise leave it for later.

        ``admin_ui.routes`` may run before the loop does (building the Application at import
        time is common).  The handlers call :meth:`start` on their first request, so the
        plots begin then at the latest.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.start()

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def _sample_safely(self) -> None:
        try:
            self.sample()
        except Exception:  # a failed sample must not stop the sampler
            log.exception("taking a dashboard sample failed")

    def sample(self) -> Sample:
        """Take one sample now and append it to the ring."""
        snap = self._take()
        stats = self._probe.read(measure_cpu=True)
        now = snap.taken_at
        rate = 0.0
        if self._last_requests is not None:
            t0, n0 = self._last_requests
            if now > t0:
                rate = max(0, snap.requests_total - n0) / (now - t0)
        self._last_requests = (now, snap.requests_total)
        s = Sample(
            t=now,
            sessions=snap.totals.sessions,
            streams=snap.totals.listen_streams,
            retained_bytes=snap.totals.retained_bytes,
            rss_bytes=stats.rss_bytes,
            cpu_percent=stats.cpu_percent,
            request_rate=round(rate, 3),
        )
        self._samples.append(s)
        return s

    def since(self, t: float | None = None) -> list[Sample]:
        """Samples taken strictly after ``t`` (all of them when ``t`` is ``None``)."""
        if t is None:
            return list(self._samples)
        return [s for s in self._samples if s.t > t]

    def request_rate(self, window: int = 5) -> float:
        """Mean request rate over the last ``window`` samples (0 before there are any)."""
        recent = list(self._samples)[-window:]
        if not recent:
            return 0.0
        return round(sum(s.request_rate for s in recent) / len(recent), 3)
