"""The governance of a process in a cluster: the per-principal rate limit shared through
Redis, the cluster's process id in audit records, and readiness during a Redis outage.

``rate_limit_per_principal`` bounds a caller over the whole cluster: its token bucket lives
in Redis (the hash ``{ns}:rate:<caller>``), taken from by one atomic Lua script per request,
timed by Redis's own clock (``TIME``), so every process draws from the same bucket.  Each
answer also says how many tokens the bucket has left, which the process remembers per
caller (:class:`SharedRateLimit`), so that Redis trouble never hands a caller a fresh
allowance:

* while Redis is unreachable (or does not answer a take within :data:`TAKE_TIMEOUT`: a
  frozen Redis stalls no call past it) each process judges a caller by a bucket of its own
  holding its share of what the caller had left when last seen (``tokens // live
  processes``; a caller never seen here starts with a full share), refilled at its share
  of the rate, so the processes together grant what the shared bucket would have;
* when Redis answers again the shared bucket takes over; if Redis lost it (a restart
  without persistence, a failover), the first take recreates it with what this process
  believes the caller has left (its own share's tokens: never more than the cluster's).

The readiness probe (``/readyz``) answers 503 once Redis has been unreachable for longer
than ``cluster_heartbeat_ttl``: by then the other processes have forgotten this one.

:func:`attach` is called by :meth:`Cluster.start <tornado_mcp.cluster.Cluster.start>`.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..engine.middleware import MAX_RATE_BUCKETS
from .link import DOWN, log

if TYPE_CHECKING:
    from ..engine.middleware import RateLimit
    from .core import Cluster


#: Takes one token from the caller's bucket (KEYS[1]) of capacity ARGV[1] tokens refilled
#: over 60 s; a missing bucket starts with ARGV[3] tokens (a negative number: full).
#: Answers {0 when taken, else the milliseconds until a token is back; the tokens left}.
TAKE = """
local limit = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = limit / 60000.0
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then
  tokens = tonumber(ARGV[3])
  if tokens < 0 then tokens = limit end
  tokens = math.min(limit, tokens)
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
return {wait, tostring(tokens)}
"""
#: A bucket left alone this long is full again: Redis may forget it (milliseconds).
BUCKET_TTL_MS = 61_000
#: The longest a request waits for Redis's answer before this process judges it alone
#: (seconds), and how long it then judges alone before asking Redis again.
TAKE_TIMEOUT = 0.25
ALONE_S = 1.0


class SharedRateLimit:
    """The buckets of :class:`~tornado_mcp.engine.middleware.RateLimit` kept in Redis, and
    what this process knows of them when Redis cannot answer (see the module docstring).
    ``clock`` is where times are read (monotonic seconds)."""

    def __init__(self, cluster: Cluster, clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.clock = clock
        self.prefix = f"{cluster.namespace}:rate:"
        self._take: Any = cluster.link.redis.register_script(TAKE)
        #: Requests judged by a local share of the limit because Redis was unreachable
        #: (``tornado_mcp_cluster_fallbacks_total{kind="rate_limit"}``).
        self.fallbacks = 0
        #: Per caller: the shared bucket's tokens when Redis last answered, and when.
        self._seen: OrderedDict[str, tuple[float, float]] = OrderedDict()
        #: Per caller: this process's share while Redis cannot answer (tokens, at).
        self._alone: OrderedDict[str, list[float]] = OrderedDict()
        self._alone_until = 0.0

    def processes(self) -> int:
        return 1 + len(self.cluster.members.others)

    def share(self, limit: int) -> int:
        """This process's share of ``limit`` while Redis is unreachable."""
        return max(1, limit // self.processes())

    def _estimate(self, key: str, limit: int, now: float) -> float:
        """What this process believes ``key`` has left in the shared bucket: its own
        share's tokens if it judged the caller alone, else what Redis last said,
        refilled since; -1 when it knows nothing (a full bucket)."""
        alone = self._alone.get(key)
        if alone is not None:
            share = max(1.0, limit / self.processes())
            return min(share, alone[0] + (now - alone[1]) * share / 60.0)
        seen = self._seen.get(key)
        if seen is None:
            return -1.0
        return min(float(limit), seen[0] + (now - seen[1]) * limit / 60.0)

    async def take(self, key: str, local: RateLimit) -> float | None:
        """Take a token for ``key``: ``None`` when allowed, else seconds until allowed."""
        limit = local.options.rate_limit_per_principal
        if limit is None:
            return None
        cluster = self.cluster
        now = self.clock()
        if not cluster.closed and cluster.link.connected and now >= self._alone_until:
            try:
                wait_ms, left = await asyncio.wait_for(self._take(
                    keys=[self.prefix + key],
                    args=[limit, BUCKET_TTL_MS, repr(self._estimate(key, limit, now))]),
                    TAKE_TIMEOUT)
            except TimeoutError:
                self._alone_until = self.clock() + ALONE_S  # frozen, or very slow
            except DOWN as exc:
                cluster.link.lost(exc)
            else:
                self._remember(self._seen, key, (float(left), self.clock()))
                self._alone.pop(key, None)
                return None if int(wait_ms) <= 0 else int(wait_ms) / 1000
        self.fallbacks += 1
        return self._take_alone(key, limit, self.clock())

    def _take_alone(self, key: str, limit: int, now: float) -> float | None:
        share = max(1.0, limit / self.processes())
        rate = share / 60.0
        bucket = self._alone.get(key)
        if bucket is None:
            start = self._estimate(key, limit, now)
            tokens = share if start < 0 else min(share, start / self.processes())
            bucket = [tokens, now]
            self._remember(self._alone, key, bucket)
        else:
            bucket[0] = min(share, bucket[0] + (now - bucket[1]) * rate)
            bucket[1] = now
        if bucket[0] >= 1.0:
            bucket[0] -= 1.0
            return None
        return (1.0 - bucket[0]) / rate

    @staticmethod
    def _remember(table: OrderedDict[str, Any], key: str, value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > MAX_RATE_BUCKETS:
            table.popitem(last=False)


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


def attach(cluster: Cluster) -> SharedRateLimit:
    """Join the engine of ``cluster``'s transport to the cluster: the shared rate limit
    (returned), the process id in audit records, the readiness check."""
    engine = cluster.transport.engine
    shared = engine.rate_limit.shared = SharedRateLimit(cluster)
    engine.governance.process_id = cluster.id
    outage = Outage(cluster)
    outage.start()
    engine.readiness_checks.append(outage.not_ready)
    log.debug("process %s: rate limit shared through Redis", cluster.id)
    return shared
