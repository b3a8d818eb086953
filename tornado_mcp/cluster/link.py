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

The URL is a plain ``redis://`` (``rediss://``, ``unix://``) one, or names a primary kept by
Redis Sentinel (redis-py's :class:`~redis.asyncio.sentinel.Sentinel`)::

    redis+sentinel://[[user]:password@]host:port[,host:port...]/service[/db][?sentinel_password=...]

With Sentinel every new connection asks the sentinels where the primary is, so after a
failover the link's reconnection finds the promoted replica (:func:`client_for`).

Every loop working through the link checks :attr:`Link.closing` on each turn: redis-py may
return normally from a command whose task was cancelled (measured with redis-py 8.2.0:
about one ``XREAD`` in seven cancelled while its reply arrived; see
``tests/cluster/test_cluster_exit.py``), so a loop that relied on the cancellation alone
could run on after its process began to exit.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel
from redis.exceptions import RedisError

log = logging.getLogger("tornado_mcp.cluster")

#: What an unreachable (or restarting) Redis raises.
DOWN: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
#: Reconnection backoff: the first retry, the cap, in seconds.
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 2.0
#: Seconds to connect, and to wait for any reply (a blocking read asks for less).
CONNECT_TIMEOUT = 2.0
SOCKET_TIMEOUT = 5.0
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")

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
        self.redis: Any = client_for(url, f"{namespace}:{self.process_id}")
        #: The URL as logs and the dashboard show it: without its password.
        self.shown_url = redacted(url)
        self.connected = False
        #: Set when the process leaves: every loop on the link ends at its next turn.
        self.closing = False
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
            log.warning("lost Redis at %s (%s); serving local clients only", self.shown_url,
                        exc)
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
        while not self.closing:
            await self._down.wait()
            # The pool's connections all went with Redis: drop them now, so the first
            # commands after reconnection do not fail on them (a second "outage").
            await self.redis.connection_pool.disconnect()
            delay = BACKOFF_FIRST
            counted = False
            while not self.closing:
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                try:
                    await self.redis.ping()
                    # Known before the hooks run: what they read may be missing (Redis
                    # restarted empty, or a failover promoted a replica behind it).
                    self.reconnected_at = time.monotonic()
                    if not counted:
                        counted = True
                        self.reconnects += 1
                    for hook in self._hooks:
                        await hook()
                    break
                except DOWN:
                    delay = min(delay * 2, BACKOFF_MAX)
            if self.closing:
                return
            log.warning("reconnected to Redis at %s", self.shown_url)
            self._mark_up()

    async def replicas(self) -> int:
        """How many replicas the primary reports connected (``ROLE``); 0 when it is not
        known (a server that does not answer ``ROLE``)."""
        try:
            role = await self.redis.execute_command("ROLE")
        except RedisError:
            return 0
        if isinstance(role, (list, tuple)) and len(role) >= 3 and role[0] in (b"master",
                                                                                "master"):
            return len(role[2] or ())
        return 0

    async def aclose(self) -> None:
        self.closing = True
        await self.redis.aclose()


async def settle(awaitable: Awaitable[Any], timeout: float) -> bool:
    """Await ``awaitable`` for at most ``timeout`` seconds; False (and it is cancelled,
    never awaited again) when it took longer.  Unlike :func:`asyncio.wait_for`, which
    waits for a cancelled operation to end, this returns at the bound even when the
    operation ignores its cancellation."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        task.add_done_callback(_retrieve)
        return False
    _retrieve(task)
    return True


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("during shutdown: %r", task.exception())


def client_for(url: str, client_name: str) -> Any:
    """The redis-py asyncio client for ``url``: a plain one, or one whose connections go
    to the primary Sentinel names (``redis+sentinel://``, see the module docstring)."""
    parts = urlsplit(url)
    if parts.scheme not in SENTINEL_SCHEMES:
        return aioredis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT,
                                 socket_timeout=SOCKET_TIMEOUT, client_name=client_name)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    sentinels = [_host_port(h) for h in hosts.split(",") if h]
    path = [p for p in parts.path.split("/") if p]
    if not sentinels or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError("a Sentinel URL is redis+sentinel://[[user]:password@]host:port"
                         "[,host:port...]/service[/db]")
    query = parse_qs(parts.query)
    sentinel_password = query.get("sentinel_password", [None])[0]
    manager = Sentinel(sentinels, sentinel_kwargs={
        "socket_connect_timeout": CONNECT_TIMEOUT, "socket_timeout": SOCKET_TIMEOUT,
        "password": sentinel_password}, socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=SOCKET_TIMEOUT)
    return manager.master_for(
        unquote(path[0]), db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None, password=unquote(password) or None,
        ssl=parts.scheme.startswith("rediss"), client_name=client_name,
        socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=SOCKET_TIMEOUT)


def _host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"a Sentinel address is host:port, not {text!r}")
    return host.strip("[]"), int(port)


def redacted(url: str) -> str:
    """``url`` without the password of its user part (or of its query)."""
    parts = urlsplit(url)
    userinfo, at, hosts = parts.netloc.rpartition("@")
    secret = "sentinel_password=" in parts.query
    if not (at and ":" in userinfo) and not secret:
        return url
    if at and ":" in userinfo:
        userinfo = userinfo.partition(":")[0] + ":***"
    query = "&".join(("sentinel_password=***" if q.startswith("sentinel_password=") else q)
                     for q in parts.query.split("&")) if parts.query else ""
    netloc = f"{userinfo}@{hosts}" if at else hosts
    return parts._replace(netloc=netloc, query=query).geturl()
