"""The connection to Redis, and whether Redis answers right now.

One :class:`Link` per process: the :class:`~tornado_mcp.cluster.Cluster`, the
:class:`~tornado_mcp.cluster.task_store.RedisTaskStore` and the
:class:`~tornado_mcp.cluster.event_store.RedisEventStore` of a process all talk to Redis
through it (one redis-py client and its connection pool), and share its view of whether
Redis answers.  It also names the process in the cluster (:attr:`Link.process_id`, the
prefix of its sessions and the key of its heartbeat record ``{ns}:proc:{id}``).

A command that fails because Redis is unreachable calls :meth:`Link.lost` and then waits
in :meth:`Link.wait_up` (or fails fast, for a client's request); one supervisor task pings
Redis with exponential backoff (jittered, capped) until it answers, runs the
re-synchronisation hooks, and releases the waiting tasks.  Nothing raises out of the
cluster while Redis is down: each process keeps serving its own clients.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
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

Hook = Callable[[], Awaitable[None]]


class Link:
    """One redis-py asyncio client, its up/down state and the reconnect loop.

    ``namespace`` prefixes every key; ``process_id`` (12 hex digits, random unless given)
    names this process.  Whoever :meth:`connect` s the link runs :meth:`supervise`: the
    cluster when there is one, else the store that made the link for itself.
    """

    def __init__(self, url: str, *, namespace: str = "tornado-mcp",
                 process_id: str | None = None) -> None:
        self.url = url
        self.namespace = namespace
        self.process_id = process_id or secrets.token_hex(6)
        #: Every connection is named ``{namespace}:{process_id}`` (``CLIENT LIST`` shows
        #: which process holds it).
        self.redis: Any = aioredis.from_url(url, socket_connect_timeout=2.0,
                                            socket_timeout=5.0,
                                            client_name=f"{namespace}:{self.process_id}")
        self.connected = False
        self.reconnects = 0
        #: When Redis last answered again after an outage (``time.monotonic()``), 0.0
        #: before the first outage.
        self.reconnected_at = 0.0
        self._hooks: list[Hook] = []
        self._up = asyncio.Event()
        self._down = asyncio.Event()

    def key(self, *parts: str) -> str:
        """``{namespace}:{part}:{part}...``"""
        return ":".join((self.namespace, *parts))

    def proc_key(self, process_id: str) -> str:
        """The heartbeat record of a process: it exists while the process is alive."""
        return self.key("proc", process_id)

    def on_up(self, hook: Hook) -> None:
        """Run ``hook`` each time Redis answers again (before waiting tasks resume)."""
        self._hooks.append(hook)

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
            # The pool's connections all went with Redis: drop them now, so the first
            # commands after reconnection do not fail on them (a second "outage").
            await self.redis.connection_pool.disconnect()
            delay = BACKOFF_FIRST
            while True:
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                try:
                    await self.redis.ping()
                    for hook in self._hooks:
                        await hook()
                    break
                except DOWN:
                    delay = min(delay * 2, BACKOFF_MAX)
            self.reconnects += 1
            self.reconnected_at = time.monotonic()
            log.warning("reconnected to Redis at %s", self.url)
            self._mark_up()

    async def aclose(self) -> None:
        await self.redis.aclose()
