"""Where a resumable legacy stream's events wait for a client that may reconnect.

A 2025-11-25 client whose SSE stream broke (or was closed by the server to make it poll)
reconnects with ``GET`` and ``Last-Event-ID``; the transport then replays the events of
that one stream the client has not seen.  An :class:`EventStore` keeps those events:

* :meth:`~EventStore.append` is called on the IOLoop for every event of a resumable
  stream, in order, and must not block (a remote store queues the write);
* :meth:`~EventStore.replay` returns the events of ``stream`` after sequence number
  ``after``, or ``None`` when it cannot: the stream is not one of this session's, or some
  of the events it would need are gone (too old, or dropped for room).  Replaying with a
  gap would lose a message silently; refusing lets the client know;
* :meth:`~EventStore.forget` drops everything of a session when it ends.

Everything is bounded per session by the transport's live options
``event_store_max_bytes`` (the oldest events are dropped to make room, counted as the
``event_store_max_bytes`` refusal) and ``event_store_max_age`` (older events are dropped),
and what a session keeps is counted in its ``retained_bytes`` in the snapshot.

:class:`MemoryEventStore` is the default: a stream's events live in the memory of the
process that owns its session (in a cluster, a resuming ``GET`` is forwarded there), and
are lost if that process restarts.
:class:`~tornado_mcp.cluster.event_store.RedisEventStore` keeps the frames in Redis instead
(the bookkeeping of the bounds stays with the owning process, in :class:`LedgerStore`).
Another store implements :class:`EventStore`, or extends :class:`LedgerStore`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from ..protocol import Refusal

#: Bounds as the store reads them, each time: the transport's live options.
BytesBound = Callable[[], int]
AgeBound = Callable[[], float]


class EventStore(Protocol):
    """The events of resumable streams, per session; see the module docstring.  A
    Protocol for its implementations: :class:`MemoryEventStore`, the cluster's
    :class:`~tornado_mcp.cluster.event_store.RedisEventStore` (a layer above), and any an
    application brings."""

    def bind(self, max_bytes: BytesBound, max_age: AgeBound,
             on_refusal: Callable[[Refusal], None]) -> None:
        """Read the bounds from these callables (the transport calls this once)."""

    def append(self, session_id: str, stream: str, seq: int, frame: bytes) -> None:
        """Keep event ``seq`` of ``stream`` (an SSE frame, id line included)."""

    async def replay(self, session_id: str, stream: str,
                     after: int) -> list[tuple[int, bytes]] | None:
        """``(seq, frame)`` of the events of ``stream`` after ``after``, oldest first;
        ``None`` when the stream is unknown or some of those events are gone."""

    def forget(self, session_id: str) -> None:
        """Drop every event of the session (it ended)."""

    def retained_bytes(self, session_id: str) -> int:
        """Bytes of events the session keeps now."""

    def prune(self) -> None:
        """Drop events past their age (called periodically)."""

    async def close(self) -> None:
        """Release what the store holds open."""


class _Ledger:
    """One session's events in arrival order: what the bounds are enforced on."""

    __slots__ = ("bytes", "order", "streams")

    def __init__(self) -> None:
        self.bytes = 0
        #: (stream, seq, size, stored_at) of every event kept, oldest first.
        self.order: deque[tuple[str, int, int, float]] = deque()
        #: stream -> [sequence numbers kept oldest first, the first one ever stored,
        #: the last one not kept (too big alone) or -1, the last one stored].
        self.streams: dict[str, list[Any]] = {}

    def admit(self, stream: str, seq: int, size: int, now: float,
              max_bytes: int) -> tuple[bool, list[tuple[str, int]]]:
        """Record an event, dropping the oldest ones past ``max_bytes``: whether it was
        kept (an event alone over the bound is not), and the events dropped for room."""
        entry = self.streams.get(stream)
        if entry is None:
            entry = [deque(), seq, -1, seq]
            self.streams[stream] = entry
        entry[3] = seq
        if size > max_bytes:
            entry[2] = seq  # never kept: a replay from before it will be refused
            return False, []
        entry[0].append(seq)
        self.order.append((stream, seq, size, now))
        self.bytes += size
        dropped = []
        while self.bytes > max_bytes:
            dropped.append(self.evict())
        return True, dropped

    def evict(self) -> tuple[str, int]:
        stream, seq, size, _ = self.order.popleft()
        self.bytes -= size
        entry = self.streams[stream]
        entry[0].popleft()
        if not entry[0] and entry[2] < 0:
            del self.streams[stream]  # nothing left of it: it can no longer be resumed
        return stream, seq

    def expired(self, now: float, max_age: float) -> list[tuple[str, int]]:
        out = []
        while self.order and now - self.order[0][3] > max_age:
            out.append(self.evict())
        return out

    def complete_after(self, stream: str, after: int) -> bool:
        """Every event of ``stream`` after ``after`` is still kept (no gap)."""
        entry = self.streams.get(stream)
        if entry is None:
            return False
        seqs: deque[int] = entry[0]
        first: int = entry[1]
        gap: int = entry[2]
        last: int = entry[3]
        if not first - 1 <= after <= last or after < gap:
            return False  # an id it never gave out, or a message it could not keep
        # Events are dropped oldest first: none is missing after ``after`` if the oldest
        # kept one follows it directly, or nothing was given out after it.
        return after == last or (bool(seqs) and seqs[0] <= after + 1)


class LedgerStore:
    """The bookkeeping every store shares: bounds, ledgers, refusals.

    ``clock`` is where ages are read from (monotonic seconds)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ledgers: dict[str, _Ledger] = {}
        self._max_bytes: BytesBound = lambda: 1 << 20
        self._max_age: AgeBound = lambda: 300.0
        self._on_refusal: Callable[[Refusal], None] = lambda kind: None

    def bind(self, max_bytes: BytesBound, max_age: AgeBound,
             on_refusal: Callable[[Refusal], None]) -> None:
        self._max_bytes, self._max_age, self._on_refusal = max_bytes, max_age, on_refusal

    def retained_bytes(self, session_id: str) -> int:
        ledger = self._ledgers.get(session_id)
        return ledger.bytes if ledger is not None else 0

    def _admit(self, session_id: str, stream: str, seq: int, size: int) -> bool:
        """Account for a new event under the bounds; False when it is not kept."""
        ledger = self._ledgers.get(session_id)
        if ledger is None:
            ledger = self._ledgers[session_id] = _Ledger()
        now = self._clock()
        self._dropped(session_id, ledger.expired(now, self._max_age()))
        kept, dropped = ledger.admit(stream, seq, size, now, self._max_bytes())
        if dropped or not kept:
            self._on_refusal(Refusal.EVENT_STORE_MAX_BYTES)
            self._dropped(session_id, dropped)
        return kept

    def _dropped(self, session_id: str, events: list[tuple[str, int]]) -> None:
        """Events the bounds dropped (a remote store deletes them too)."""

    def _complete(self, session_id: str, stream: str, after: int) -> bool:
        ledger = self._ledgers.get(session_id)
        if ledger is None:
            return False
        self._dropped(session_id, ledger.expired(self._clock(), self._max_age()))
        return ledger.complete_after(stream, after)

    def forget(self, session_id: str) -> None:
        self._ledgers.pop(session_id, None)

    def export_ledger(self, session_id: str) -> dict[str, Any] | None:
        """The bookkeeping of a session's events as JSON (ages, not clock readings), for a
        store in another process that shares the frames (a cluster moving the session);
        ``None`` when it keeps none."""
        ledger = self._ledgers.get(session_id)
        if ledger is None:
            return None
        now = self._clock()
        return {"order": [[stream, seq, size, now - at] for stream, seq, size, at
                          in ledger.order],
                "streams": {stream: [list(e[0]), e[1], e[2], e[3]]
                            for stream, e in ledger.streams.items()}}

    def import_ledger(self, session_id: str, data: dict[str, Any]) -> None:
        """Take over the bookkeeping :meth:`export_ledger` gave (the frames it names must
        be where this store reads them)."""
        ledger = _Ledger()
        now = self._clock()
        for stream, seq, size, age in data["order"]:
            ledger.order.append((str(stream), int(seq), int(size), now - float(age)))
            ledger.bytes += int(size)
        for stream, (seqs, first, gap, last) in data["streams"].items():
            ledger.streams[str(stream)] = [deque(int(q) for q in seqs), int(first), int(gap),
                                           int(last)]
        self._ledgers[session_id] = ledger

    def prune(self) -> None:
        now, max_age = self._clock(), self._max_age()
        for session_id, ledger in list(self._ledgers.items()):
            self._dropped(session_id, ledger.expired(now, max_age))
            if not ledger.order:
                del self._ledgers[session_id]


class MemoryEventStore(LedgerStore):
    """The default :class:`EventStore`: frames kept in this process, bounded per session."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self._frames: dict[tuple[str, str, int], bytes] = {}

    def append(self, session_id: str, stream: str, seq: int, frame: bytes) -> None:
        if self._admit(session_id, stream, seq, len(frame)):
            self._frames[(session_id, stream, seq)] = frame

    def _dropped(self, session_id: str, events: list[tuple[str, int]]) -> None:
        for stream, seq in events:
            self._frames.pop((session_id, stream, seq), None)

    async def replay(self, session_id: str, stream: str,
                     after: int) -> list[tuple[int, bytes]] | None:
        if not self._complete(session_id, stream, after):
            return None
        seqs = self._ledgers[session_id].streams[stream][0]
        return [(s, self._frames[(session_id, stream, s)]) for s in seqs if s > after]

    def forget(self, session_id: str) -> None:
        ledger = self._ledgers.get(session_id)
        if ledger is not None:
            self._dropped(session_id, [(s, q) for s, q, _, _ in ledger.order])
        super().forget(session_id)

    async def close(self) -> None:
        self._frames.clear()
        self._ledgers.clear()
