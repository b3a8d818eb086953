"""The governance of a process in a cluster: the per-principal rate limit shared through
Redis, the cluster's process id in audit records, and readiness during a Redis outage.

``rate_limit_per_principal`` bounds a caller over the whole cluster: its token bucket lives
in Redis (the hash ``{ns}:rate:<caller>``), taken from by one atomic Lua script per request,
timed by Redis's own clock (``TIME``), so every process draws from the same bucket.  While
Redis is unreachable each process falls back to a bucket of its own holding its share of
the limit: ``limit // live processes`` (at least 1), the live processes being those of the
last heartbeat round; when Redis answers again the shared bucket takes over.

The readiness probe (``/readyz``) answers 503 once Redis has been unreachable for longer
than ``cluster_heartbeat_ttl``: by then the other processes have forgotten this one.

:func:`attach` is called by :meth:`Cluster.start <tornado_mcp.cluster.Cluster.start>`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

from .link import DOWN, log

if TYPE_CHECKING:
    from ..engine.engine import Engine
    from ..engine.middleware import RateLimit
    from ..options import TransportOptions
    from .link import Link


class _Peers(Protocol):
    @property
    def others(self) -> Collection[Any]: ...


class _Transport(Protocol):
    @property
    def options(self) -> TransportOptions: ...

    @property
    def engine(self) -> Engine: ...


class Cluster(Protocol):
    """What the shared rate limit uses of the :class:`~tornado_mcp.cluster.Cluster` (the
    cluster module imports this one, so it is named by what it offers)."""

    id: str
    namespace: str
    closed: bool

    @property
    def link(self) -> Link: ...

    @property
    def members(self) -> _Peers: ...

    @property
    def transport(self) -> _Transport: ...

#: Takes one token from the caller's bucket (KEYS[1]) of capacity ARGV[1] tokens refilled
#: over 60 s; answers 0 when taken, else the milliseconds until a token is back.
TAKE = """
local limit = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = limit / 60000.0
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then
  tokens = limit
  at = now
end
tokens = math.min(limit, tokens + math.max(0, now - at) * rate)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return wait
"""
#: A bucket left alone this long is full again: Redis may forget it (milliseconds).
BUCKET_TTL_MS = 61_000


class SharedRateLimit:
    """The buckets of :class:`~tornado_mcp.engine.middleware.RateLimit` kept in Redis."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.prefix = f"{cluster.namespace}:rate:"
        self._take: Any = cluster.link.redis.register_script(TAKE)
        #: Requests judged by a local share of the limit because Redis was unreachable.
        self.fallbacks = 0

    def share(self, limit: int) -> int:
        """This process's share of ``limit`` while Redis is unreachable."""
        return max(1, limit // (1 + len(self.cluster.members.others)))

    async def take(self, key: str, local: RateLimit) -> float | None:
        """Take a token for ``key``: ``None`` when allowed, else seconds until allowed."""
        limit = local.options.rate_limit_per_principal
        if limit is None:
            return None
        cluster = self.cluster
        if not cluster.closed and cluster.link.connected:
            try:
                wait_ms = int(await self._take(keys=[self.prefix + key],
                                               args=[limit, BUCKET_TTL_MS]))
            except DOWN as exc:
                cluster.link.lost(exc)
            else:
                return None if wait_ms <= 0 else wait_ms / 1000
        self.fallbacks += 1
        return local.take(key, self.share(limit))


class Outage:
    """How long this process has been unable to reach Redis, sampled a few times per
    heartbeat TTL (and on every readiness check)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.down_since: float | None = None
        ttl = cluster.transport.options.cluster_heartbeat_ttl
        self.interval = max(0.05, min(1.0, ttl / 4))
        self._timer: asyncio.TimerHandle | None = None

    def sample(self) -> None:
        if self.cluster.link.connected or self.cluster.closed:
            self.down_since = None
        elif self.down_since is None:
            self.down_since = time.monotonic()

    def _tick(self) -> None:
        self.sample()
        if not self.cluster.closed:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def start(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def not_ready(self) -> str | None:
        """The readiness check: why this process cannot serve now, or None."""
        self.sample()
        if self.down_since is None:
            return None
        down = time.monotonic() - self.down_since
        ttl = self.cluster.transport.options.cluster_heartbeat_ttl
        if down <= ttl:
            return None
        return f"Redis unreachable for {down:.1f} s (past cluster_heartbeat_ttl, {ttl:g} s)"


def attach(cluster: Cluster) -> None:
    """Join the engine of ``cluster``'s transport to the cluster: the shared rate limit,
    the process id in audit records, the readiness check."""
    engine = cluster.transport.engine
    engine.rate_limit.shared = SharedRateLimit(cluster)
    engine.governance.process_id = cluster.id
    outage = Outage(cluster)
    outage.start()
    engine.readiness_checks.append(outage.not_ready)
    log.debug("process %s: rate limit shared through Redis", cluster.id)
