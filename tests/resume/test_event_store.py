"""The in-memory event store: per-session bytes and age, each exactly at and over.

A replay that would have a gap is refused (``None``), never partial; what a session keeps
is counted, and a session's end drops all of it.
"""

from __future__ import annotations

from tornado_mcp.protocol import Refusal
from tornado_mcp.transport.event_store import MemoryEventStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def store(max_bytes: int = 1000, max_age: float = 60.0) -> tuple[MemoryEventStore, Clock,
                                                                   list[Refusal]]:
    clock = Clock()
    refusals: list[Refusal] = []
    s = MemoryEventStore(clock)
    s.bind(lambda: max_bytes, lambda: max_age, refusals.append)
    return s, clock, refusals


def ev(n: int, size: int = 10) -> bytes:
    return bytes([48 + n % 10]) * size


async def test_replays_only_the_named_stream_after_the_id() -> None:
    s, _, _ = store()
    for i in range(3):
        s.append("s1", "A", i, ev(i))
        s.append("s1", "B", i, ev(i + 5))
    assert await s.replay("s1", "A", 0) == [(1, ev(1)), (2, ev(2))]
    assert await s.replay("s1", "B", 2) == []
    assert await s.replay("s1", "A", 3) is None  # an id the stream never gave out
    assert await s.replay("s1", "C", 0) is None  # not a stream of this session
    assert await s.replay("s2", "A", 0) is None  # another session's stream
    assert s.retained_bytes("s1") == 60


async def test_bytes_bound_at_keeps_everything_and_over_drops_the_oldest() -> None:
    s, _, refusals = store(max_bytes=30)
    for i in range(3):
        s.append("s1", "A", i, ev(i))
    assert s.retained_bytes("s1") == 30 and refusals == []
    assert await s.replay("s1", "A", 0) == [(1, ev(1)), (2, ev(2))]
    s.append("s1", "A", 3, ev(3))  # one byte-bound over: event 0 goes
    assert s.retained_bytes("s1") == 30
    assert refusals == [Refusal.EVENT_STORE_MAX_BYTES]
    assert await s.replay("s1", "A", 0) == [(1, ev(1)), (2, ev(2)), (3, ev(3))]
    s.append("s1", "A", 4, ev(4))  # now event 1 goes: a replay after 0 would miss it
    assert await s.replay("s1", "A", 0) is None
    assert await s.replay("s1", "A", 1) == [(2, ev(2)), (3, ev(3)), (4, ev(4))]


async def test_an_event_alone_over_the_bound_is_not_kept_and_leaves_a_gap() -> None:
    s, _, refusals = store(max_bytes=30)
    s.append("s1", "A", 0, ev(0, 30))  # exactly at the bound: kept
    assert s.retained_bytes("s1") == 30
    s.append("s1", "A", 1, ev(1, 31))  # over it alone: not kept
    assert refusals == [Refusal.EVENT_STORE_MAX_BYTES]
    assert await s.replay("s1", "A", 0) is None  # event 1 would be missing
    assert await s.replay("s1", "A", 1) == []
    s.append("s1", "A", 2, ev(2))
    assert await s.replay("s1", "A", 1) == [(2, ev(2))]


async def test_age_bound_at_keeps_and_over_drops() -> None:
    s, clock, refusals = store(max_age=60.0)
    s.append("s1", "A", 0, ev(0))
    s.append("s1", "A", 1, ev(1))
    clock.now += 60.0  # exactly at the age
    s.prune()
    assert await s.replay("s1", "A", 0) == [(1, ev(1))]
    clock.now += 0.001  # over it
    assert await s.replay("s1", "A", 0) is None
    s.prune()
    assert s.retained_bytes("s1") == 0
    assert refusals == []  # age is the normal end of an event, not a refusal


async def test_forget_drops_everything_of_the_session() -> None:
    s, _, _ = store()
    s.append("s1", "A", 0, ev(0))
    s.append("s2", "A", 0, ev(0))
    s.forget("s1")
    assert s.retained_bytes("s1") == 0
    assert await s.replay("s1", "A", -1) is None
    assert await s.replay("s2", "A", -1) == [(0, ev(0))]


async def test_bounds_are_read_live() -> None:
    limit = [100]
    s = MemoryEventStore()
    s.bind(lambda: limit[0], lambda: 60.0, lambda kind: None)
    for i in range(5):
        s.append("s1", "A", i, ev(i))
    assert s.retained_bytes("s1") == 50
    limit[0] = 20
    s.append("s1", "A", 5, ev(5))
    assert s.retained_bytes("s1") == 20
    assert await s.replay("s1", "A", 3) == [(4, ev(4)), (5, ev(5))]
