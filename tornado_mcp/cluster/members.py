"""Who is in the cluster: each process's heartbeat, with a TTL, and the list of live ones.

Every ``min(1 s, cluster_heartbeat_ttl / 4)`` a process writes its own record
(``SET {ns}:proc:{id} <json> PX ttl``: host, pid, forwarding URL, sessions, streams,
retained state, refusals), adds its id to ``{ns}:procs`` and reads every other member's
record back in one pipeline.  A process that dies stops refreshing its record, which
Redis expires within the TTL; the next reader removes its id from the set.  The list is
kept in memory, so :meth:`Cluster.snapshot` never waits for Redis.

With ``cluster_wide_limits`` a process also announces its session and listen-stream
counts on the feed each time it admits one (:meth:`Cluster.admitted`); the others take,
per process, whichever is newer by that process's clock: its last heartbeat record or its
last announcement (:meth:`Members.current`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any

from ..introspection import ProcessInfo
from ..protocol import jsonio
from .link import DOWN

#: Unknown process ids remembered at most (the table starts over when full).
UNKNOWN_IDS_KEPT = 1024

if TYPE_CHECKING:
    from .core import Cluster


class Members:
    """This process's heartbeat and its view of the others."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.set_key = f"{cluster.namespace}:procs"
        self.others: dict[str, ProcessInfo] = {}
        #: The last counts each other process announced: (its clock, sessions, streams).
        self.counts: dict[str, tuple[float, int, int]] = {}
        ttl = cluster.transport.options.cluster_heartbeat_ttl
        self.ttl_ms = max(1, int(ttl * 1000))
        self.interval = min(1.0, ttl / 4)
        #: Process ids Redis did not know, until when (asked again after a heartbeat round).
        self._unknown: dict[str, float] = {}

    def key(self, process_id: str) -> str:
        return f"{self.cluster.namespace}:proc:{process_id}"

    def own(self) -> ProcessInfo:
        c = self.cluster
        snap = c.transport.snapshot(sessions=False, streams=False)
        t = snap.totals
        return ProcessInfo(id=c.id, host=c.host, pid=c.pid, url=c.advertise_url,
                           started_at=c.started_at, heartbeat_at=time.time(),
                           connected=c.link.connected, sessions=t.sessions,
                           get_streams=t.get_streams, listen_streams=t.listen_streams,
                           retained_bytes=t.retained_bytes, retained_values=t.retained_values,
                           refusals={k: v for k, v in snap.refusals.items() if v})

    async def beat(self) -> None:
        redis = self.cluster.link.redis
        record = jsonio.dumps(_as_record(self.own()))
        pipe = redis.pipeline(transaction=False)
        pipe.set(self.key(self.cluster.id), record, px=self.ttl_ms)
        pipe.sadd(self.set_key, self.cluster.id)
        pipe.smembers(self.set_key)
        *_, members = await pipe.execute()
        ids = sorted(m.decode() for m in members if m.decode() != self.cluster.id)
        records = await redis.mget([self.key(i) for i in ids]) if ids else []
        others: dict[str, ProcessInfo] = {}
        gone = []
        for process_id, raw in zip(ids, records, strict=True):
            info = _from_record(raw)
            if info is None:
                gone.append(process_id)
            else:
                others[process_id] = info
        if gone:
            await redis.srem(self.set_key, *gone)
        self.others = others
        for process_id in [i for i in self.counts if i not in others]:
            del self.counts[process_id]

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

    async def lookup(self, process_id: str) -> ProcessInfo | None:
        """A live process by id: from the last heartbeat round, else asked of Redis."""
        info = self.others.get(process_id)
        if info is not None or not self.cluster.link.connected:
            return info
        now = time.monotonic()
        if self._unknown.get(process_id, 0.0) > now:
            return None  # asked a moment ago: no such process
        try:
            raw = await asyncio.wait_for(self.cluster.link.redis.get(self.key(process_id)), 1.0)
        except DOWN:
            return None
        found = _from_record(raw)
        if found is None:  # remembered until the next heartbeat round, in a bounded table
            if len(self._unknown) >= UNKNOWN_IDS_KEPT:
                self._unknown.clear()
            self._unknown[process_id] = now + self.interval
        return found

    async def loop(self) -> None:
        link = self.cluster.link
        while True:
            await link.wait_up()
            try:
                await self.beat()
            except DOWN as exc:
                link.lost(exc)
                continue
            await asyncio.sleep(self.interval)

    async def leave(self) -> None:
        redis = self.cluster.link.redis
        pipe = redis.pipeline(transaction=False)
        pipe.delete(self.key(self.cluster.id))
        pipe.srem(self.set_key, self.cluster.id)
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
