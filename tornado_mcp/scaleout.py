"""Share notifications between processes and hosts through Redis pub/sub.

One process needs nothing of this.  When several processes serve the same MCP server
(behind a load balancer, on one host or many), a listen stream held by one process must
still hear about a change made in another; :class:`RedisBus` carries every server-wide
notification (list changes, ``resources/updated``) to every process::

    bus = RedisBus(server, "redis://10.0.0.5:6379/0")
    await bus.start()
    ...
    await bus.close()

Each process publishes what originates locally and delivers what the others publish to
its own transports; a message never comes back to the process that sent it.  Legacy
sessions stay in the process that created them, so a load balancer must route by
``Mcp-Session-Id`` (sticky sessions); 2026-07-28 requests are stateless and can go
anywhere.  Requires ``pip install 'tornado-mcp[redis]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
from typing import Any

from . import jsonio
from .server import Server

log = logging.getLogger("tornado_mcp.scaleout")

DEFAULT_CHANNEL = "tornado-mcp:notifications"
#: Messages published but not yet handed to Redis; beyond this, new ones are dropped
#: (and logged) rather than letting a stalled Redis grow memory without bound.
MAX_PENDING = 10_000


class RedisBus:
    """A relay between this process's :class:`Server` and every other process's."""

    def __init__(self, server: Server, url: str = "redis://127.0.0.1:6379/0",
                 channel: str = DEFAULT_CHANNEL) -> None:
        self.server = server
        self.url = url
        self.channel = channel
        self.origin = secrets.token_hex(8)
        self.sent = 0
        self.received = 0
        self.dropped = 0
        self._redis: Any = None
        self._pubsub: Any = None
        self._reader: asyncio.Task[None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    async def start(self) -> None:
        """Connect, subscribe, and start relaying. Raises if Redis cannot be reached."""
        import redis.asyncio as aioredis

        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._queue = asyncio.Queue(MAX_PENDING)
        self._redis = aioredis.from_url(self.url)
        self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(self.channel)
        self._reader = asyncio.create_task(self._read())
        self._writer = asyncio.create_task(self._write())
        self.server.add_relay(self)
        log.info("relaying notifications through %s (channel %s)", self.url, self.channel)

    async def close(self) -> None:
        self.server.remove_relay(self)
        for task in (self._reader, self._writer):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.aclose()

    # NotificationSink: called by the Server for every locally originated notification.
    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        data = jsonio.dumps({"o": self.origin, "m": method, "p": params})
        if self._loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._enqueue(data)
        else:
            self._loop.call_soon_threadsafe(self._enqueue, data)

    def _enqueue(self, data: bytes) -> None:
        assert self._queue is not None
        try:
            self._queue.put_nowait(data)
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("Redis relay is backed up; dropped a notification")

    async def _write(self) -> None:
        assert self._queue is not None
        while True:
            data = await self._queue.get()
            try:
                await self._redis.publish(self.channel, data)
                self.sent += 1
            except Exception:
                self.dropped += 1
                log.exception("could not publish a notification to Redis")

    async def _read(self) -> None:
        while True:
            try:
                async for message in self._pubsub.listen():
                    self._deliver(message.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Redis subscription failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                with contextlib.suppress(Exception):
                    await self._pubsub.subscribe(self.channel)

    def _deliver(self, data: Any) -> None:
        try:
            message = jsonio.loads(data if isinstance(data, bytes) else str(data).encode())
        except (ValueError, TypeError):
            return
        if not isinstance(message, dict) or message.get("o") == self.origin:
            return
        method, params = message.get("m"), message.get("p")
        if isinstance(method, str) and (params is None or isinstance(params, dict)):
            self.received += 1
            self.server.deliver_local(method, params)
