"""DPoP proofs refused as replays across the cluster: a proof one process accepted is a
replay on every other.

The replay state of a caller is one sorted set in Redis (``{ns}:dpop:<caller digest>``),
the digest of each proof scored by the time its window ends, changed by one atomic Lua
script per DPoP request: drop what is out of its window, refuse a digest already there,
refuse when the caller's share (``DPoP(replay_cache_per_caller=)``) is full, else add it.
The set expires with its newest proof.  Timed by Redis's own clock, so every process
agrees.  While Redis is unreachable each process checks proofs against its own cache only
(``tornado_mcp_cluster_fallbacks_total{kind="dpop_replay"}`` counts them), as the rate
limit falls back to a local share: a proof could then be replayed once on another process within
its window (``iat_window + 2 * leeway``, 70 s by default).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from ..auth.dpop import DPoPError
from ..protocol import Refusal
from .link import DOWN

if TYPE_CHECKING:
    from ..auth.dpop import DPoP
    from .link import Link

#: KEYS[1] the caller's set; ARGV: the digest (hex), the window (ms), the caller's share.
#: Answers 0 when recorded, 1 for a replay, 2 when the share is full.
RECORD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 2
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 0
"""


class RedisReplays:
    """A :class:`~tornado_mcp.auth.dpop.SharedReplays` in the cluster's Redis."""

    def __init__(self, link: Link, namespace: str) -> None:
        self.link = link
        self.prefix = f"{namespace}:dpop:"
        self._record: Any = link.redis.register_script(RECORD)

    async def record(self, caller: str, digest: bytes, ttl: float,
                     per_caller: int) -> DPoPError | None:
        if not self.link.connected:
            raise ConnectionError("Redis is unreachable")
        key = self.prefix + hashlib.sha256(caller.encode("utf-8", "surrogatepass")).hexdigest()
        try:
            answer = int(await self._record(keys=[key],
                                            args=[digest.hex(), max(1, int(ttl * 1000)),
                                                  per_caller]))
        except DOWN as exc:
            self.link.lost(exc)
            raise ConnectionError("Redis is unreachable") from None
        if answer == 1:
            return DPoPError("DPoP proof was already used (jti replayed)")
        if answer == 2:
            return DPoPError("too many recent DPoP proofs: retry shortly",
                             kind=Refusal.DPOP_REPLAY_CACHE_SIZE)
        return None


def attach(dpop: DPoP | None, link: Link, namespace: str) -> DPoP | None:
    """Share ``dpop``'s replay state through ``link`` (nothing without DPoP); returns it."""
    if dpop is not None:
        dpop.shared = RedisReplays(link, namespace)
    return dpop
