"""One read of the store at a time, shared by every request that needs it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class Shared:
    """Runs ``fn`` for its callers, one run at a time: a caller arriving while a run is
    under way waits for that run instead of starting another (a hundred requests meeting
    an unknown key make one read of the ring, not a hundred)."""

    def __init__(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._fn = fn
        self._running: asyncio.Future[None] | None = None

    async def __call__(self) -> None:
        if self._running is None:
            self._running = asyncio.ensure_future(self._fn())
        running = self._running
        try:
            await asyncio.shield(running)
        finally:
            if self._running is running and running.done():
                self._running = None
