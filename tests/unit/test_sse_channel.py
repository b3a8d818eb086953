"""The SSE channel's queue bound, counted exactly with a peer whose writes never complete."""

from __future__ import annotations

import asyncio

from tornado_mcp.transport.sse import SSEChannel


class StuckPeer:
    """Stands in for a RequestHandler whose flush never completes (a peer reading nothing)."""

    class request:  # mirrors RequestHandler.request
        connection = None

    def __init__(self, pending: asyncio.Future[None]) -> None:
        self.pending = pending
        self.writes: list[bytes] = []

    def set_header(self, name: str, value: str) -> None: ...

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def flush(self) -> asyncio.Future[None]:
        return self.pending

    def finish(self) -> None: ...


async def test_stream_queue_holds_exactly_max_stream_queue_frames() -> None:
    """max_stream_queue frames may wait behind a pending write; one more disconnects.
    (The behaviour over real sockets is in tests/http/test_listen.py.)"""
    pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    peer = StuckPeer(pending)
    overflows: list[str] = []
    channel = SSEChannel(peer, lambda: 3, on_overflow=overflows.append)
    assert channel.send(b"first")  # written; its flush never completes
    for i in range(3):
        assert channel.send(f"q{i}".encode()), i  # queued: at the bound
    assert channel.queue_depth == 3 and not channel.closed and overflows == []
    assert not channel.send(b"one too many")
    assert overflows == ["max_stream_queue"] and channel.closed
    assert channel.queue_depth == 0  # nothing retained once refused
    assert peer.writes == [b"event: message\ndata: first\n\n"]  # the channel frames it
    pending.cancel()


async def test_repeats_of_a_queued_change_coalesce() -> None:
    pending: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    channel = SSEChannel(StuckPeer(pending), lambda: 2)
    assert channel.send(b"first")
    for _ in range(10):
        assert channel.send(b"tools changed", key="notifications/tools/list_changed")
    assert channel.queue_depth == 1 and channel.coalesced == 9
    assert channel.send(b"other", key=("notifications/resources/updated", "test://a"))
    assert channel.queue_depth == 2 and not channel.closed
    pending.cancel()
