"""The connection to Redis, and whether Redis answers right now.

Every task of a :class:`~tornado_mcp.cluster.Cluster` talks to Redis through one
:class:`Link`.  A command that fails because Redis is unreachable calls :meth:`Link.lost`
and then waits in :meth:`Link.wait_up`; one supervisor task pings Redis with exponential
backoff (jittered, capped) until it answers, runs the cluster's re-synchronisation hook,
and releases the waiting tasks.  Nothing raises out of the cluster while Redis is down:
each process keeps serving its own clients.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger("tornado_mcp.cluster")

#: What an unreachable (or restarting) Redis raises.
DOWN: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
#: Reconnection backoff: the first retry, the cap, in seconds.
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 2.0


class Link:
    """One redis-py asyncio client, its up/down state and the reconnect loop."""

    def __init__(self, url: str, on_up: Callable[[], Awaitable[None]]) -> None:
        self.url = url
        self.redis: Any = aioredis.from_url(url, socket_connect_timeout=2.0,
                                            socket_timeout=5.0)
        self.connected = False
        self.reconnects = 0
        self._on_up = on_up
        self._up = asyncio.Event()
        self._down = asyncio.Event()

    async def connect(self) -> None:
        """The first connection: raises when Redis cannot be reached at start."""
        await self.redis.ping()
        self._mark_up()

    def lost(self, exc: BaseException) -> None:
        """A command failed because Redis is unreachable: stop until it answers again."""
        if self.connected:
            log.warning("lost Redis at %s (%s); serving local clients only", self.url, exc)
        self.connected = False
        self._up.clear()
        self._down.set()

    async def wait_up(self) -> None:
        await self._up.wait()

    def _mark_up(self) -> None:
        self.connected = True
        self._down.clear()
        self._up.set()

    async def supervise(self) -> None:
        """Reconnect with backoff whenever a task reported Redis lost."""
        while True:
            await self._down.wait()
            delay = BACKOFF_FIRST
            while True:
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                try:
                    await self.redis.ping()
                    await self._on_up()
                    break
                except DOWN:
                    delay = min(delay * 2, BACKOFF_MAX)
            self.reconnects += 1
            log.warning("reconnected to Redis at %s", self.url)
            self._mark_up()

    async def aclose(self) -> None:
        await self.redis.aclose()
