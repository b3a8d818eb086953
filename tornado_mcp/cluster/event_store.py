"""An event store that keeps the frames of resumable streams in Redis.

::

    transport = Transport(server, resumable_streams=True,
                          event_store=RedisEventStore("redis://10.0.0.5:6379/0"))

The demo and ``examples/conformance_server.py`` use it when run with ``--redis-url``.

What lives where:

* the *frames* are in Redis, one hash per session and stream
  (``<prefix>:<session id>:<stream key>``, field = sequence number), so a process holding
  many long streams does not hold their events in its memory;
* the *bookkeeping of the bounds* (which events are kept, their sizes and ages) is the
  :class:`~tornado_mcp.transport.event_store.LedgerStore` of this process: a session lives in one
  process (in a cluster a resuming ``GET`` is forwarded to its owner), so that process
  alone decides what its sessions keep, and enforces ``event_store_max_bytes`` and
  ``event_store_max_age`` exactly as the memory store does (an event dropped by either
  bound is deleted from Redis too).

Writes never block the IOLoop: :meth:`~RedisEventStore.append` queues the write, and one
writer sends what is queued, in order, as a pipeline.  A :meth:`~RedisEventStore.replay`
queues its read behind every pending write and awaits it, so it reads exactly the events
the ledger says are kept.  An event Redis does not return (Redis restarted, or its key
expired) makes the replay refuse, as a dropped one does: never a replay with a gap.

Each key expires ``event_store_max_age`` after its last write, so a process that dies
leaves nothing behind for longer than the age bound; when a session ends its keys are
deleted.

In a cluster, build it on the cluster's :class:`~tornado_mcp.cluster.link.Link`
(``RedisEventStore(link=link)``): it then shares the process's one Redis client and its
view of outages: while Redis is down nothing is sent (the events written meanwhile are
lost, so a replay that needs them is refused) and the outage is logged once, by the
link.  Given a ``url`` instead, the store opens a connection of its own on first use.
Requires the ``redis`` extra (redis-py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..transport.event_store import LedgerStore
from .link import DOWN, Link, redacted

log = logging.getLogger("tornado_mcp.transport.event_store")

DEFAULT_PREFIX = "tornado-mcp:events"

# Queued operations, sent in order: ("hset", key, seq, frame, ttl_ms), ("hdel", key, seqs),
# ("del", keys), ("read", key, seqs, future).
_Op = tuple[Any, ...]


class RedisEventStore(LedgerStore):
    """An :class:`~tornado_mcp.transport.event_store.EventStore` whose frames live in Redis; see the
    module docstring.  ``clock`` is where event ages are read from (monotonic seconds)."""

    def __init__(self, url: str = "redis://127.0.0.1:6379/0", prefix: str | None = None,
                 clock: Callable[[], float] = time.monotonic, *,
                 link: Link | None = None) -> None:
        super().__init__(clock)
        self._owns_link = link is None
        self.link = link
        self.url = url if link is None else link.url
        self.prefix = prefix or (DEFAULT_PREFIX if link is None else link.key("events"))
        self._failing = False  # a link of its own failed: logged once until it works
        self._ops: list[_Op] = []
        self._writer: asyncio.Task[None] | None = None

    def key(self, session_id: str, stream: str) -> str:
        """The Redis key holding one stream's frames."""
        return f"{self.prefix}:{session_id}:{stream}"

    # -- the interface ----------------------------------------------------------------------
    def append(self, session_id: str, stream: str, seq: int, frame: bytes) -> None:
        if self._admit(session_id, stream, seq, len(frame)):
            ttl_ms = max(1, math.ceil(self._max_age() * 1000))
            self._queue(("hset", self.key(session_id, stream), seq, frame, ttl_ms))

    def _dropped(self, session_id: str, events: list[tuple[str, int]]) -> None:
        by_stream: dict[str, list[int]] = {}
        for stream, seq in events:
            by_stream.setdefault(stream, []).append(seq)
        for stream, seqs in by_stream.items():
            self._queue(("hdel", self.key(session_id, stream), seqs))

    async def replay(self, session_id: str, stream: str,
                     after: int) -> list[tuple[int, bytes]] | None:
        if not self._complete(session_id, stream, after):
            return None
        seqs = [s for s in self._ledgers[session_id].streams[stream][0] if s > after]
        if not seqs:
            return []
        found: asyncio.Future[list[bytes | None]] = asyncio.get_running_loop().create_future()
        self._queue(("read", self.key(session_id, stream), seqs, found))
        try:
            frames = await found  # after every write queued before it
        except DOWN:
            return None  # Redis cannot be reached: refused, as a gap would be
        if any(f is None for f in frames):
            return None  # Redis lost some of them: a replay would have a gap
        return [(s, f) for s, f in zip(seqs, frames, strict=True) if f is not None]

    def forget(self, session_id: str) -> None:
        ledger = self._ledgers.get(session_id)
        if ledger is not None and ledger.streams:
            self._queue(("del", [self.key(session_id, s) for s in ledger.streams]))
        super().forget(session_id)

    def release(self, session_id: str) -> None:
        """The session moved to another process (which took its :meth:`export_ledger`):
        drop the bookkeeping here and leave its frames in Redis for that process."""
        LedgerStore.forget(self, session_id)

    async def close(self) -> None:
        """Send what is queued, then disconnect."""
        writer = self._writer
        if writer is not None:
            with contextlib.suppress(Exception):
                await writer
        if self._owns_link and self.link is not None:
            with contextlib.suppress(Exception):
                await self.link.aclose()
            self.link = None
        self._ledgers.clear()

    async def flush(self) -> None:
        """Wait until every write queued so far has been sent (or has failed)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    # -- the writer -------------------------------------------------------------------------
    def _queue(self, op: _Op) -> None:
        self._ops.append(op)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while self._ops:
            ops, self._ops = self._ops, []
            reads: list[tuple[int, asyncio.Future[list[bytes | None]]]] = []
            if self.link is None:
                self.link = Link(self.url)
                self.link.connected = True  # its own: tried each time, never supervised
            link = self.link
            if not link.connected:  # the cluster's link, Redis down: nothing can be sent
                _fail_reads(ops, ConnectionError("Redis cannot be reached"))
                continue
            try:
                pipe = link.redis.pipeline(transaction=False)
                for op in ops:
                    kind = op[0]
                    if kind == "hset":
                        pipe.hset(op[1], str(op[2]), op[3])
                        pipe.pexpire(op[1], op[4])
                    elif kind == "hdel":
                        pipe.hdel(op[1], *(str(s) for s in op[2]))
                    elif kind == "del":
                        pipe.delete(*op[1])
                    else:
                        reads.append((len(pipe), op[3]))
                        pipe.hmget(op[1], [str(s) for s in op[2]])
                results = await pipe.execute(raise_on_error=False)
            except DOWN as exc:  # Redis unreachable: the events are lost, not the loop
                if not self._owns_link:
                    link.lost(exc)
                elif not self._failing:
                    self._failing = True
                    log.warning("event store lost Redis at %s (%s)", redacted(self.url), exc)
                _fail_reads(ops, exc)
                continue
            self._failing = False
            for index, fut in reads:
                if fut.done():
                    continue
                result = results[index]
                if isinstance(result, Exception):
                    fut.set_exception(result)
                else:
                    fut.set_result(list(result))


def _fail_reads(ops: list[_Op], exc: BaseException) -> None:
    for op in ops:
        if op[0] == "read" and not op[3].done():
            op[3].set_exception(exc)
