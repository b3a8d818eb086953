"""Who is in the cluster: each process's heartbeat, with a TTL, and the list of live ones.

Every ``min(1 s, cluster_heartbeat_ttl / 4)`` a process writes its own record
(``SET {ns}:proc:{id} <json> PX ttl``: host, pid, forwarding URL, sessions, streams,
retained state, refusals, whether it drains), adds its id to ``{ns}:procs`` and reads
every other member's record back in one pipeline.  A process that dies stops refreshing
its record, which Redis expires within the TTL; the next reader removes it from its list
and its id from the set, so a dead process is off every list within the TTL plus one
heartbeat interval (6 s with the defaults).  The list is kept in memory, so
:meth:`Cluster.snapshot` never waits for Redis.  This record is the one liveness signal
of a process: the task store asks it too (is a task's runner alive?).

A missing record is trusted only while this process has been reading steadily: for a TTL
after its own heartbeats stalled, and after its link reconnected for a TTL or the longest
reconnection backoff of the others plus two heartbeats, whichever is longer.  Until then
records may be missing because Redis restarted empty (or a failover lost them) and their
processes have not beaten again yet, so every process it listed stays listed: an outage
does not shrink the view.

With ``cluster_wide_limits`` a process also announces its session and listen-stream
counts on the feed each time it admits one (:meth:`Cluster.admitted`); the others take,
per process, whichever is newer by that process's clock: its last heartbeat record or its
last announcement (:meth:`Members.current`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from ..introspection import ProcessInfo
from ..protocol import jsonio
from .link import BACKOFF_MAX, DOWN, Link

#: Unknown process ids remembered at most (the table starts over when full).
UNKNOWN_IDS_KEPT = 1024
#: The longest a single Redis read on a client's behalf may wait (seconds).
LOOKUP_TIMEOUT = 1.0
#: How long a process whose heartbeat expired without it leaving is remembered (where it
#: was reached), in seconds: cut off from Redis, it may still serve its sessions.
VANISHED_KEPT_S = 300.0


class Unsure(Exception):
    """Redis was asked whether a process lives and could not say: the read failed, or
    took longer than :data:`LOOKUP_TIMEOUT` (a busy machine).  Not "no such process"."""


class Members:
    """This process's heartbeat and its view of the others.

    ``describe`` returns this process's record as of now; ``ttl`` is
    ``cluster_heartbeat_ttl`` in seconds; ``url`` where this process is reached."""

    def __init__(self, link: Link, process_id: str, namespace: str, ttl: float,
                 describe: Callable[[], ProcessInfo], url: str | None = None) -> None:
        self.link = link
        #: Where this process is reached (its advertised URL), if anywhere.
        self.url = url
        self.process_id = process_id
        self.namespace = namespace
        self.describe = describe
        self.set_key = f"{namespace}:procs"
        self.others: dict[str, ProcessInfo] = {}
        #: The last counts each other process announced: (its clock, sessions, streams).
        self.counts: dict[str, tuple[float, int, int]] = {}
        self.ttl = ttl
        self.ttl_ms = max(1, int(ttl * 1000))
        self.interval = min(1.0, ttl / 4)
        #: Processes that vanished without leaving (record expired): since when, and
        #: what they last said of themselves (where they were reached).
        self.vanished: dict[str, tuple[float, ProcessInfo]] = {}
        #: Processes known to be gone for good (left, or replaced at their URL).
        self.gone: set[str] = set()
        #: Other processes that announced they drain (their sessions are handed over).
        self.draining: set[str] = set()
        #: Add to the leaving pipeline what else this process keeps in Redis.
        self.on_leave: Callable[[Any], None] | None = None
        #: Called with the id of a dead process this one replaced at its URL.
        self.on_replaced: Callable[[str], None] | None = None
        #: Process ids Redis did not know, until when (asked again after a heartbeat round).
        self._unknown: dict[str, float] = {}
        #: Since when this process has read steadily (monotonic seconds; from the start,
        #: as it lists nobody yet), and when its last heartbeat round ended.
        self._steady_since = float("-inf")
        self._last_round: float | None = None

    def key(self, process_id: str) -> str:
        return f"{self.namespace}:proc:{process_id}"

    def own(self) -> ProcessInfo:
        return self.describe()

    def steady(self, now: float) -> bool:
        """Whether a missing record now means an expired one: this process has read
        steadily for a TTL (no stalled heartbeat round), and Redis answered again long
        enough ago for every other process to have reconnected (its backoff is at most
        :data:`~tornado_mcp.cluster.link.BACKOFF_MAX`) and beaten since."""
        after_outage = max(self.ttl, BACKOFF_MAX + 2 * self.interval)
        return now - self._steady_since >= self.ttl \
            and now - self.link.reconnected_at >= after_outage

    async def beat(self) -> None:
        redis = self.link.redis
        me = self.own()
        record = jsonio.dumps(_as_record(me))
        pipe = redis.pipeline(transaction=False)
        pipe.set(self.key(self.process_id), record, px=self.ttl_ms)
        pipe.sadd(self.set_key, self.process_id)
        pipe.smembers(self.set_key)
        *_, members = await pipe.execute()
        ids = sorted(m.decode() for m in members if m.decode() != self.process_id)
        records = await redis.mget([self.key(i) for i in ids]) if ids else []
        now = time.monotonic()
        if self._last_round is not None and now - self._last_round > 2 * self.interval + 1.0:
            self._steady_since = now  # a gap: what is missing may be Redis's loss
        self._last_round = now
        steady = self.steady(now)
        others: dict[str, ProcessInfo] = {}
        missing = []
        for process_id, raw in zip(ids, records, strict=True):
            info = _from_record(raw)
            if info is None:
                missing.append(process_id)
            elif self.url is not None and info.url == self.url:
                # Only one process listens at a URL: one that had ours before is dead.
                self.gone.add(process_id)
                missing.append(process_id)
                if self.on_replaced is not None:
                    self.on_replaced(process_id)
            else:
                others[process_id] = info
                self.gone.discard(process_id)  # it beats: whatever was believed, it lives
                self.vanished.pop(process_id, None)
                if info.draining:
                    self.draining.add(process_id)
        for process_id, info in self.others.items():
            if process_id in others or process_id in self.gone:
                continue
            if not steady:
                others[process_id] = info  # Redis may have lost it: it beats again soon
            else:
                self.vanished[process_id] = (now, info)
        forget = [i for i in missing if i not in others]
        if forget:
            pipe = redis.pipeline(transaction=False)
            pipe.srem(self.set_key, *forget)
            for process_id in forget:
                if process_id in self.gone:
                    pipe.delete(self.key(process_id))
            await pipe.execute()
        self.others = others
        for process_id in [i for i in self.counts if i not in others]:
            del self.counts[process_id]
        self.draining &= others.keys()
        # Forgotten: long vanished, or its URL taken by another live process (it is dead).
        taken = {info.url: i for i, info in others.items()}
        taken[self.url] = self.process_id
        horizon = now - VANISHED_KEPT_S
        for process_id, (at, info) in list(self.vanished.items()):
            if info.url is not None and taken.get(info.url, process_id) != process_id:
                self.forget(process_id)
            elif at < horizon:
                del self.vanished[process_id]
        while len(self.vanished) > UNKNOWN_IDS_KEPT:
            del self.vanished[next(iter(self.vanished))]

    def left(self, process_id: str) -> None:
        """Another process announced it left the cluster: it is gone for good."""
        self.forget(process_id)

    def drains(self, process_id: str) -> None:
        """Another process announced it began to drain."""
        if process_id in self.others:
            self.draining.add(process_id)

    def announced(self, process_id: str, at: float, sessions: int, streams: int) -> None:
        """Counts another process announced when it admitted something."""
        known = self.counts.get(process_id)
        if known is None or known[0] < at:
            self.counts[process_id] = (at, sessions, streams)

    def current(self) -> list[ProcessInfo]:
        """The other live processes, each with the newest counts heard from it."""
        out = []
        for process_id, info in self.others.items():
            heard = self.counts.get(process_id)
            if heard is not None and heard[0] > info.heartbeat_at:
                info = dataclasses.replace(info, sessions=heard[1], listen_streams=heard[2])
            if process_id in self.draining and not info.draining:
                info = dataclasses.replace(info, draining=True)
            out.append(info)
        return out

    def uncertain(self, process_id: str) -> bool:
        """Whether ``process_id``, not listed as live, may still be alive: Redis is down,
        or records may be missing (this process has not read steadily for a TTL since
        an outage)."""
        if process_id in self.gone:
            return False
        return not self.link.connected or not self.steady(time.monotonic())

    def last_known(self, process_id: str) -> ProcessInfo | None:
        """What a process that vanished without leaving last said of itself (it may be
        cut off from Redis and still serve), for a little while after it vanished."""
        vanished = self.vanished.get(process_id)
        return vanished[1] if vanished is not None else None

    def forget(self, process_id: str) -> None:
        """``process_id`` is gone for good: it left, or is known dead (nothing listens
        where it was reached, or another process took its URL)."""
        self.vanished.pop(process_id, None)
        self.others.pop(process_id, None)
        self.draining.discard(process_id)
        if len(self.gone) >= UNKNOWN_IDS_KEPT:
            self.gone.clear()
        self.gone.add(process_id)

    async def _read(self, process_id: str) -> ProcessInfo | bool | None:
        """A process's record as Redis has it now: ``False`` when Redis cannot say (down,
        or slower than :data:`LOOKUP_TIMEOUT`); a draining one is noted."""
        try:
            raw = await asyncio.wait_for(self.link.redis.get(self.key(process_id)),
                                         LOOKUP_TIMEOUT)
        except DOWN:
            return False
        info = _from_record(raw)
        if info is not None and info.draining:
            self.draining.add(process_id)
        return info

    async def confirm(self, process_id: str) -> str:
        """Ask Redis now about a process that could not be reached: ``"alive"`` (its
        record exists: restarting, frozen), ``"draining"``, ``"dead"`` (no record while
        this process reads steadily), or ``"unknown"`` (Redis cannot tell now)."""
        info = await self._read(process_id) if self.link.connected else False
        if info is False:
            return "unknown"
        if isinstance(info, ProcessInfo):
            return "draining" if info.draining else "alive"
        return "dead" if self.steady(time.monotonic()) else "unknown"

    async def lookup(self, process_id: str) -> ProcessInfo | None:
        """A live process by id: from the last heartbeat round, else asked of Redis.
        ``None`` when Redis has no record of it, when it is known gone or was not found a
        heartbeat interval ago, or when the link is down (see :meth:`uncertain`).  Raises
        :class:`Unsure` when Redis was asked and could not say in time: a live process it
        would have named must not be taken for a gone one (its sessions would get a 404)."""
        info = self.others.get(process_id)
        if info is not None or not self.link.connected or process_id in self.gone:
            return info
        now = time.monotonic()
        if self._unknown.get(process_id, 0.0) > now:
            return None  # asked a moment ago: no such process
        found = await self._read(process_id)
        if found is False:
            raise Unsure(process_id)
        if not isinstance(found, ProcessInfo):
            if found is None:  # remembered until the next heartbeat round, in a bounded table
                if len(self._unknown) >= UNKNOWN_IDS_KEPT:
                    self._unknown.clear()
                self._unknown[process_id] = now + self.interval
            return None
        if found.url is not None and found.url == self.url and process_id != self.process_id:
            self.gone.add(process_id)  # it had our URL: it is dead
            return None
        return found

    async def loop(self) -> None:
        link = self.link
        while not link.closing:
            await link.wait_up()
            try:
                await self.beat()
            except DOWN as exc:
                link.lost(exc)
                continue
            await asyncio.sleep(self.interval)

    async def leave(self) -> None:
        redis = self.link.redis
        pipe = redis.pipeline(transaction=False)
        pipe.delete(self.key(self.process_id))
        pipe.srem(self.set_key, self.process_id)
        if self.on_leave is not None:
            self.on_leave(pipe)
        await pipe.execute()


def _as_record(info: ProcessInfo) -> dict[str, Any]:
    record = dict(info.__dict__)
    record.pop("connected")
    return record


def _from_record(raw: bytes | None) -> ProcessInfo | None:
    if raw is None:
        return None
    try:
        return ProcessInfo(connected=True, **jsonio.loads(raw))
    except (TypeError, ValueError):
        return None
