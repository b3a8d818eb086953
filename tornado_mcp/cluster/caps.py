"""Cluster-wide caps, reserved in Redis before a session or listen stream is admitted.

With ``cluster_wide_limits`` on, ``max_sessions`` and ``max_listen_subscriptions`` bound
the whole cluster.  Each process keeps what it holds of each kind in a hash
(``{ns}:held:sessions``, ``{ns}:held:listen_streams``; field = process id, value = count).
Before admitting one more, a process runs one Lua script that sums the counts of the
processes whose heartbeat record exists (and deletes the fields of those whose record
expired: a dead process's share is freed within its ``cluster_heartbeat_ttl``), and, only
if the sum plus one stays within the cap, raises its own count: Redis runs scripts one
at a time, so simultaneous admissions on several processes never exceed the cap.

A process writes its own count as it is each time it reserves and every heartbeat
interval, so a release (a session ended, a stream closed) reaches Redis within a second:
until then the others refuse a little early, never late.  A process runs one reservation
script per kind at a time, and the transport admits right after a grant (in the same
IOLoop iteration), so the count it writes is always exact.  While Redis is down no
reservation can be made: each process admits against what it last heard of the others
(the cluster may overshoot by what is admitted during the outage).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from .link import DOWN, Link

KINDS = ("sessions", "listen_streams")
#: The longest an admission waits for its reservation (seconds); past it Redis is taken
#: as unreachable and the admission judged locally, as during an outage.
RESERVE_TIMEOUT = 1.0

#: KEYS: the hash of one kind; ARGV: own id, own count, cap, heartbeat key prefix.
RESERVE = """
local total = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local id = fields[i]
  if id ~= ARGV[1] then
    if redis.call('EXISTS', ARGV[4] .. id) == 1 then
      total = total + tonumber(fields[i + 1])
    else
      redis.call('HDEL', KEYS[1], id)
    end
  end
end
local mine = tonumber(ARGV[2])
if total + mine + 1 > tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[1], ARGV[1], mine)
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], mine + 1)
return 1
"""


class Caps:
    """``held(kind)`` is what this process holds of ``kind`` now; ``cap(kind)`` the
    cluster-wide bound (``None``: none)."""

    def __init__(self, link: Link, process_id: str, namespace: str,
                 held: Callable[[str], int], cap: Callable[[str], int | None]) -> None:
        self.link = link
        self.process_id = process_id
        self.namespace = namespace
        self.held = held
        self.cap = cap
        #: Reservations granted and not yet admitted (held to the end of the iteration).
        self.pending: Counter[str] = Counter()
        #: Reservations granted without Redis (it was down), by kind.
        self.unchecked: Counter[str] = Counter()
        self._locks: dict[str, asyncio.Lock] = {}

    def key(self, kind: str) -> str:
        return f"{self.namespace}:held:{kind}"

    def count(self, kind: str) -> int:
        return self.held(kind) + self.pending[kind]

    def _lock(self, kind: str) -> asyncio.Lock:
        lock = self._locks.get(kind)
        if lock is None:
            lock = self._locks[kind] = asyncio.Lock()
        return lock

    async def reserve(self, kind: str) -> bool:
        cap = self.cap(kind)
        if cap is None:
            return True
        if not self.link.connected:
            self.unchecked[kind] += 1
            return True
        # One script of this process at a time per kind: its own count is then exact
        # (the previous grant was admitted before the next one counts).
        async with self._lock(kind):
            mine = self.count(kind)
            self.pending[kind] += 1
            granted = False
            try:
                granted = bool(await asyncio.wait_for(self.link.redis.eval(
                    RESERVE, 1, self.key(kind), self.process_id, mine, cap,
                    self.link.proc_key("")), RESERVE_TIMEOUT))
            except DOWN as exc:
                self.link.lost(exc)
                self.unchecked[kind] += 1
                granted = True  # Redis went away: admit against what is known locally
            finally:
                if granted:
                    asyncio.get_running_loop().call_soon(self._done, kind)
                else:
                    self._done(kind)
        return granted

    def _done(self, kind: str) -> None:
        self.pending[kind] -= 1

    async def refresh(self) -> None:
        """Write this process's counts as they are now (releases reach Redis so)."""
        for kind in KINDS:
            if self.cap(kind) is not None:
                async with self._lock(kind):
                    await self.link.redis.hset(self.key(kind), self.process_id,
                                               self.count(kind))

    async def loop(self, interval: float) -> None:
        """:meth:`refresh` every ``interval`` seconds while Redis answers."""
        while not self.link.closing:
            await asyncio.sleep(interval)
            await self.link.wait_up()
            try:
                await self.refresh()
            except DOWN as exc:
                self.link.lost(exc)

    def forget(self, pipe: Any) -> None:
        """Add the removal of this process's counts to a leaving pipeline."""
        for kind in KINDS:
            pipe.hdel(self.key(kind), self.process_id)
