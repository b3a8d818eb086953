"""Who is in the cluster: each process's heartbeat, with a TTL, and the list of live ones.

Every ``min(1 s, cluster_heartbeat_ttl / 4)`` a process writes its own record
(``SET {ns}:proc:{id} <json> PX ttl``: host, pid, forwarding URL, sessions, streams,
retained state, refusals), adds its id to ``{ns}:procs`` and reads every other member's
record back in one pipeline.  A process that dies stops refreshing its record, which
Redis expires within the TTL; the next reader removes its id from the set.  The list is
kept in memory, so :meth:`Cluster.snapshot` never waits for Redis.  This record is the
one liveness signal of a process: the task store asks it too (is a task's runner alive?).

A record missing from Redis is trusted only once the reader itself last read it a TTL
ago: until then it may be missing because Redis restarted empty and its process has not
beaten again yet, so the process stays listed (a Redis restart does not shrink the view).

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
from .link import DOWN, Link

#: Unknown process ids remembered at most (the table starts over when full).
UNKNOWN_IDS_KEPT = 1024


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
        #: When this process last read each other's record (monotonic seconds).
        self.seen_at: dict[str, float] = {}
        #: Processes that vanished without leaving (record expired): since when.
        self.vanished: dict[str, float] = {}
        #: Processes known to be gone for good (left, or replaced at their URL).
        self.gone: set[str] = set()
        #: Add to the leaving pipeline what else this process keeps in Redis.
        self.on_leave: Callable[[Any], None] | None = None
        #: Called with the id of a dead process this one replaced at its URL.
        self.on_replaced: Callable[[str], None] | None = None
        #: Process ids Redis did not know, until when (asked again after a heartbeat round).
        self._unknown: dict[str, float] = {}

    def key(self, process_id: str) -> str:
        return f"{self.namespace}:proc:{process_id}"

    def own(self) -> ProcessInfo:
        return self.describe()

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
                self.seen_at[process_id] = now
        for process_id, info in self.others.items():
            if process_id in others or process_id in self.gone:
                continue
            if now - self.seen_at.get(process_id, 0.0) < self.ttl:
                others[process_id] = info  # Redis may have restarted empty: not yet gone
            else:
                self.vanished[process_id] = now
                self.seen_at.pop(process_id, None)
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
        horizon = now - 2 * self.ttl
        for process_id in [i for i, at in self.vanished.items() if at < horizon]:
            del self.vanished[process_id]

    def left(self, process_id: str) -> None:
        """Another process announced it left the cluster."""
        self.others.pop(process_id, None)
        self.seen_at.pop(process_id, None)
        self.vanished.pop(process_id, None)
        if len(self.gone) >= UNKNOWN_IDS_KEPT:
            self.gone.clear()
        self.gone.add(process_id)

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
            out.append(info)
        return out

    def uncertain(self, process_id: str) -> bool:
        """Whether ``process_id``, not listed as live, may still be alive: Redis is down
        or came back less than a TTL ago (records may be missing), or the process
        vanished without leaving less than two TTLs ago (partitioned, or frozen)."""
        if process_id in self.gone:
            return False
        link = self.link
        if not link.connected or (link.reconnects
                                  and time.monotonic() - link.reconnected_at < self.ttl):
            return True
        return process_id in self.vanished

    async def lookup(self, process_id: str) -> ProcessInfo | None:
        """A live process by id: from the last heartbeat round, else asked of Redis."""
        info = self.others.get(process_id)
        if info is not None or not self.link.connected or process_id in self.gone:
            return info
        now = time.monotonic()
        if self._unknown.get(process_id, 0.0) > now:
            return None  # asked a moment ago: no such process
        try:
            raw = await asyncio.wait_for(self.link.redis.get(self.key(process_id)), 1.0)
        except DOWN:
            return None
        found = _from_record(raw)
        if found is not None and found.url is not None and found.url == self.url \
                and process_id != self.process_id:
            self.gone.add(process_id)  # it had our URL: it is dead
            return None
        if found is None:  # remembered until the next heartbeat round, in a bounded table
            if len(self._unknown) >= UNKNOWN_IDS_KEPT:
                self._unknown.clear()
            self._unknown[process_id] = now + self.interval
        return found

    async def loop(self) -> None:
        link = self.link
        while True:
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
