"""Configuration the whole cluster shares: live limits and the requestState key.

Limits live in the hash ``{ns}:limits`` (one JSON value per live option).  A change made on
any process (its dashboard, the admin API or code calling ``options.update``) is written
there and announced on the feed; every other process applies it when the entry arrives
(milliseconds later; within a second at worst, the reader's block time) and records it in
its audit log as ``"<who> on <host> pid <pid>"``.  A process that starts reads the hash, so
a change survives restarts.  The first process seeds the hash with its own values.

The 2026-07-28 ``requestState`` key is generated once by the first process
(``SET {ns}:request-state-key NX``) and read by every other, so a multi-round-trip retry
can reach any process.  After a Redis restart without persistence, each process writes
back what it holds (``NX`` again), so the cluster keeps one key and one set of limits.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from ..options import LIVE_OPTIONS, OptionError
from ..protocol import jsonio
from ..server.request_state import RequestStateCodec

if TYPE_CHECKING:
    from .core import Cluster

log = logging.getLogger("tornado_mcp.cluster")


class SharedConfig:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.limits_key = f"{cluster.namespace}:limits"
        self.state_key_key = f"{cluster.namespace}:request-state-key"
        self.state_key: bytes = secrets.token_bytes(32)
        self._applying = False

    async def publish_own(self) -> None:
        """Seed what Redis lacks with what this process holds (start and reconnection)."""
        redis = self.cluster.link.redis
        pipe = redis.pipeline(transaction=False)
        pipe.set(self.state_key_key, self.state_key.hex(), nx=True)
        for name, value in self.cluster.transport.options.live_values().items():
            pipe.hsetnx(self.limits_key, name, jsonio.dumps(value))
        pipe.get(self.state_key_key)
        pipe.hgetall(self.limits_key)
        *_, key_hex, limits = await pipe.execute()
        self._install_key(bytes.fromhex(key_hex.decode()))
        stored = {k.decode(): jsonio.loads(v) for k, v in limits.items()}
        current = self.cluster.transport.options.live_values()
        changes = {k: v for k, v in stored.items() if k in current and current[k] != v}
        if changes:
            self.apply(changes, "cluster configuration")

    def _install_key(self, key: bytes) -> None:
        if key == self.state_key and self.cluster.server.request_state.key == key:
            return
        self.state_key = key
        ttl = self.cluster.server.request_state.ttl
        self.cluster.server.request_state = RequestStateCodec(key=key, ttl=ttl)

    def apply(self, changes: dict[str, Any], actor: str) -> None:
        self._applying = True
        try:
            self.cluster.transport.options.update(changes, actor=actor)
        except OptionError as exc:
            log.warning("ignored cluster limits %s from %s: %s", changes, actor, exc)
        finally:
            self._applying = False

    def on_remote(self, changes: dict[str, Any], fields: dict[str, str]) -> None:
        """A limit change another process made, from the feed."""
        live = {k: v for k, v in changes.items() if k in LIVE_OPTIONS}
        self.apply(live, f"{fields.get('a', '?')} on {fields.get('h', '?')} "
                         f"pid {fields.get('pid', '?')}")

    def on_local(self, diff: dict[str, tuple[Any, Any]], actor: str) -> None:
        """An options listener: share a change made in this process."""
        if self._applying or self.cluster.closed:
            return
        changes = {k: new for k, (_old, new) in diff.items() if k in LIVE_OPTIONS}
        if changes:
            c = self.cluster
            c.on_loop(lambda: c.feed.push({"k": "l", "c": jsonio.dumps(changes), "a": actor,
                                           "h": c.host, "pid": c.pid}))
