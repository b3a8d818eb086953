"""The cluster's shared feed: notifications and limit changes on one Redis Stream.

Every entry carries its publisher's id (``o``) and a per-publisher sequence number
(``s``).  Publishing appends to a bounded local outbox first; one writer task drains it
into Redis in order (``XADD ... MAXLEN ~ cluster_stream_length``), so while Redis is down a
process keeps what it publishes (up to ``cluster_outage_buffer`` entries; past that new
entries are dropped and counted as the ``cluster_outage_buffer`` refusal) and sends it, in
order, once Redis answers again.  One reader task follows the stream from the last id it
has seen (``XREAD BLOCK``), so after an outage it catches up on what the others published
meanwhile.  The sequence numbers make delivery exactly once and in order per publisher: a
batch resent because Redis went away mid-write is recognised and skipped.

When the primary has replicas (Sentinel, or a managed equivalent), a batch leaves the
outbox only once one replica has it too (``WAIT 1`` in the same pipeline, at most
:data:`WAIT_MS`): a failover before that makes the writer resend the batch to the promoted
replica, where readers skip what they had already seen.  A batch no replica acknowledged
in time is counted (:attr:`Feed.unreplicated`): only those can be lost in a failover, and
every reader counts what it lost as a gap in the publisher's sequence numbers
(:attr:`Feed.trimmed`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from itertools import islice
from typing import Any

from ..options import Options
from ..protocol import Refusal, jsonio
from .link import DOWN, Link

log = logging.getLogger("tornado_mcp.cluster")

#: Entries written to Redis in one pipeline, and read in one ``XREAD``.
BATCH = 256
#: Publishers whose last sequence number is remembered (oldest forgotten first).
MAX_PUBLISHERS = 4096
#: ``XREAD BLOCK`` timeout in milliseconds (the socket timeout must be longer).
READ_BLOCK_MS = 1000
#: How long a batch waits for a replica to acknowledge it (``WAIT``), in milliseconds, and
#: after a batch no replica acknowledged, how long the writer goes without waiting.
WAIT_MS = 100
WAIT_AGAIN_S = 5.0

Fields = dict[str, Any]


def _id_tuple(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class Feed:
    """Outbox, writer and reader of the shared stream for one process.

    What it reads is handed on through callbacks: ``deliver(method, params)`` a
    notification, ``on_counts(origin, at, sessions, streams)`` an admission announcement,
    ``on_left(origin)`` a process leaving, ``on_drain(origin)`` one beginning to drain,
    ``on_limits(changes, fields)`` a limit change;
    ``on_refusal`` counts an entry the outage buffer refused, ``on_write(pipe, fields)``
    adds what an entry of this process must also write (a limit change's versioned set).
    """

    def __init__(self, link: Link, process_id: str, namespace: str,
                 options: Options, *,
                 deliver: Callable[[str, dict[str, Any] | None], Any],
                 on_refusal: Callable[[Refusal], None]) -> None:
        self.link = link
        self.process_id = process_id
        self.options = options
        self.deliver = deliver
        self.on_refusal = on_refusal
        self.key = f"{namespace}:feed"
        self.outbox: deque[Fields] = deque()
        self.seq = 0
        self.last_id = "0-0"
        self.seen: OrderedDict[str, int] = OrderedDict()
        self.published = 0  # entries written to Redis
        self.received = 0  # entries from other processes, handed on
        self.duplicates = 0  # entries seen twice (a resent batch) and skipped
        self.dropped = 0  # entries refused by the outage buffer
        self.trimmed = 0  # entries of others missing when read: trimmed, or lost in a failover
        #: Replicas the primary had when last asked: batches wait for one of them.
        self.replicas = 0
        self.unreplicated = 0  # entries written that no replica acknowledged in time
        self._wait_again_at = 0.0
        self._trim_burst = False
        self._ready = asyncio.Event()
        self.on_limits: Callable[[dict[str, Any], Fields], None] | None = None
        self.on_counts: Callable[[str, float, int, int], None] | None = None
        self.on_left: Callable[[str], None] | None = None
        self.on_drain: Callable[[str], None] | None = None
        self.on_write: Callable[[Any, Fields], None] | None = None

    # -- publishing (on the IOLoop) -----------------------------------------------------------
    def push(self, fields: Fields) -> bool:
        """Queue one entry for Redis; False (counted) when the outage buffer is full."""
        if len(self.outbox) >= self.options.cluster_outage_buffer:
            self.dropped += 1
            self.on_refusal(Refusal.CLUSTER_OUTAGE_BUFFER)
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("cluster outage buffer full; %d entries dropped", self.dropped)
            return False
        self.seq += 1
        fields["o"] = self.process_id
        fields["s"] = self.seq
        self.outbox.append(fields)
        self._ready.set()
        return True

    async def write_loop(self) -> None:
        link = self.link
        length = self.options.cluster_stream_length
        while not link.closing:
            await self._ready.wait()
            await link.wait_up()
            batch = list(islice(self.outbox, BATCH))
            if not batch:
                self._ready.clear()
                continue
            pipe = link.redis.pipeline(transaction=False)
            for fields in batch:
                if self.on_write is not None:
                    self.on_write(pipe, fields)
                pipe.xadd(self.key, fields, maxlen=length, approximate=True)
            wait = self.replicas > 0 and time.monotonic() >= self._wait_again_at
            if wait:
                pipe.execute_command("WAIT", 1, WAIT_MS)
            try:
                results = await pipe.execute()
            except DOWN as exc:
                link.lost(exc)  # the batch stays queued; resent entries are deduplicated
                continue
            if wait and not results[-1]:  # no replica has it yet: a failover may lose it
                self.unreplicated += len(batch)
                self._wait_again_at = time.monotonic() + WAIT_AGAIN_S
            for _ in batch:
                self.outbox.popleft()
            self.published += len(batch)

    # -- reading ------------------------------------------------------------------------------
    async def resync(self) -> None:
        """Where to read from after (re)connecting: our last id, unless the stream was
        lost with Redis (missing, or ending before it: a restart, or a failover to a
        replica that lacked the newest entries) and must be read from its start."""
        self.replicas = await self.link.replicas()
        top = await self.link.redis.xrevrange(self.key, count=1)
        if not top:
            self.last_id = "0-0"
            return
        newest = top[0][0].decode()
        if _id_tuple(newest) < _id_tuple(self.last_id):
            self.last_id = "0-0"

    async def start_at_end(self) -> None:
        """At start: skip what was published before this process existed."""
        self.replicas = await self.link.replicas()
        top = await self.link.redis.xrevrange(self.key, count=1)
        self.last_id = top[0][0].decode() if top else "0-0"

    async def read_loop(self) -> None:
        link = self.link
        # Not ``while True``: redis-py may swallow the cancellation of the XREAD below
        # and return its reply (see the link module), so the loop checks it was closed.
        while not link.closing:
            await link.wait_up()
            try:
                reply = await link.redis.xread({self.key: self.last_id}, count=BATCH,
                                               block=READ_BLOCK_MS)
            except DOWN as exc:
                link.lost(exc)
                continue
            before = self.trimmed
            for _stream, entries in reply or ():
                for entry_id, fields in entries:
                    self.last_id = entry_id.decode()
                    self._handle(fields)
            self._note_trimmed(self.trimmed - before)

    def _note_trimmed(self, lost: int) -> None:
        """One log line per burst of entries lost to trimming (a batch without any
        ends the burst)."""
        if not lost:
            self._trim_burst = False
        elif not self._trim_burst:
            self._trim_burst = True
            log.warning("%d cluster feed entries were trimmed before this process read "
                        "them (cluster_stream_length is shorter than the outage); "
                        "%d in all", lost, self.trimmed)

    def _handle(self, raw: dict[bytes, bytes]) -> None:
        try:
            origin = raw[b"o"].decode()
            seq = int(raw[b"s"])
            kind = raw.get(b"k", b"n")
        except (KeyError, ValueError, UnicodeDecodeError):
            return
        if origin == self.process_id:
            return  # delivered locally when it was published
        last = self.seen.get(origin)
        if last is not None and last >= seq:
            self.duplicates += 1
            return
        if last is not None and seq > last + 1:
            self.trimmed += seq - last - 1  # sequence numbers are never skipped when sent
        self.seen[origin] = seq
        self.seen.move_to_end(origin)
        while len(self.seen) > MAX_PUBLISHERS:
            self.seen.popitem(last=False)
        try:
            if kind == b"n":
                method = raw[b"m"].decode()
                params = jsonio.loads(raw[b"p"]) if b"p" in raw else None
                self.received += 1
                self.deliver(method, params)
            elif kind == b"c" and self.on_counts is not None:  # it admitted something
                self.on_counts(origin, float(raw[b"t"]), int(raw[b"ss"]), int(raw[b"ls"]))
            elif kind == b"x" and self.on_left is not None:  # the publisher left
                self.on_left(origin)
            elif kind == b"d" and self.on_drain is not None:  # the publisher drains
                self.on_drain(origin)
            elif kind == b"g" and self.on_left is not None:  # a process replaced at its URL
                self.on_left(raw[b"g"].decode())
            elif kind == b"l" and self.on_limits is not None:
                fields = {k.decode(): v.decode() for k, v in raw.items()}
                self.on_limits(jsonio.loads(raw[b"c"]), fields)
        except (KeyError, ValueError, TypeError, UnicodeDecodeError):
            log.warning("skipped a malformed cluster feed entry from %s", origin)


def notification_fields(method: str, params: dict[str, Any] | None) -> Fields:
    fields: Fields = {"k": "n", "m": method}
    if params is not None:
        fields["p"] = jsonio.dumps(params)
    return fields

