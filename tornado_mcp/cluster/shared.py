"""Configuration the whole cluster shares: live limits and the requestState key.

Limits live in the hash ``{ns}:limits`` (one JSON value per live option), each with its
*version* in ``{ns}:limits:version``: the microsecond wall-clock time of the change and
the id of the process that made it (``"<µs> <process>"``).  A change made on any process
(its dashboard, the admin API or code calling ``options.update``) gets a version newer
than every one that process has seen, is written there and announced on the feed; every
process applies a change only if it is newer than what it holds, and Redis keeps only the
newest (a Lua script compares versions): **the last writer wins, everywhere**.  A process
cut off from Redis keeps its changes queued; when it reconnects it writes them if they
are newer than what Redis holds and takes what is newer than its own, so a partition
never leaves the processes split.  A change is recorded in each audit log as
``"<who> on <host> pid <pid>"``.  A process that starts reads the hash, so a change
survives restarts; the first process seeds it with its own values (version 0).

``tool_bounds`` is shared tool by tool: each tool's entry is a field of its own
(``tool_bounds:<tool>``, ``null`` once removed) with its own version, so edits of two
different tools, made at the same instant on two processes or on both sides of a
partition, both survive; only two edits of the same tool race, and the newer wins.

The 2026-07-28 ``requestState`` key is generated once by the first process
(``SET {ns}:request-state-key NX``) and read by every other, so a multi-round-trip retry
can reach any process.  After a Redis restart without persistence, each process writes
back what it holds (``NX`` again), so the cluster keeps one key and one set of limits.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

from ..options import LIVE_OPTIONS, OptionError, Options
from ..protocol import jsonio
from ..server.request_state import RequestStateCodec
from ..server.server import Server
from .link import Link

log = logging.getLogger("tornado_mcp.cluster")

Version = tuple[int, str]
#: The version of a value nobody changed (a process's configured start values).
ZERO: Version = (0, "")
#: The option shared one tool at a time, and the prefix of its per-tool fields.
TOOL_BOUNDS = "tool_bounds"
TOOL_FIELD = TOOL_BOUNDS + ":"

#: KEYS: limits, versions; ARGV: groups of (name, JSON value, µs, process id).  Each value
#: is stored only if its version is newer than the stored one.
SET_IF_NEWER = """
for i = 1, #ARGV, 4 do
  local name, t, o = ARGV[i], tonumber(ARGV[i + 2]), ARGV[i + 3]
  local cur = redis.call('HGET', KEYS[2], name)
  local newer = true
  if cur then
    local ct, co = string.match(cur, '^(%d+) (.*)$')
    ct = tonumber(ct) or 0
    newer = t > ct or (t == ct and o > co)
  elseif redis.call('HEXISTS', KEYS[1], name) == 1 then
    newer = t > 0
  end
  if newer then
    redis.call('HSET', KEYS[1], name, ARGV[i + 1])
    redis.call('HSET', KEYS[2], name, ARGV[i + 2] .. ' ' .. o)
  end
end
return 1
"""


def parse_version(raw: bytes | str | None) -> Version:
    if raw is None:
        return ZERO
    text = raw.decode() if isinstance(raw, bytes) else raw
    t, _, origin = text.partition(" ")
    try:
        return int(t), origin
    except ValueError:
        return ZERO


class SharedConfig:
    """``push`` queues a feed entry (from any thread); ``host`` and ``pid`` name this
    process in the audit entries of its changes."""

    def __init__(self, link: Link, process_id: str, namespace: str,
                 options: Options, server: Server,
                 push: Callable[[dict[str, Any]], None], host: str, pid: int) -> None:
        self.link = link
        self.process_id = process_id
        self.options = options
        self.server = server
        self.push = push
        self.host, self.pid = host, pid
        self.limits_key = f"{namespace}:limits"
        self.versions_key = f"{namespace}:limits:version"
        self.state_key_key = f"{namespace}:request-state-key"
        self.state_key: bytes = secrets.token_bytes(32)
        #: The version of each live option's current value in this process.
        self.versions: dict[str, Version] = {}
        self.closed = False
        self._clock = 0  # the newest version time seen, in µs
        self._applying = False

    def version(self, name: str) -> Version:
        return self.versions.get(name, ZERO)

    def _stamp(self) -> int:
        """A version time newer than every one seen here (wall clock, µs)."""
        self._clock = max(int(time.time() * 1_000_000), self._clock + 1)
        return self._clock

    def _seen(self, version: Version) -> None:
        self._clock = max(self._clock, version[0])

    def write(self, pipe: Any, values: dict[str, Any], version: Version) -> None:
        """Add to ``pipe`` the versioned write of ``values`` (kept only where newer)."""
        args: list[Any] = []
        for name, value in values.items():
            args += [name, jsonio.dumps(value), str(version[0]), version[1]]
        if args:
            pipe.eval(SET_IF_NEWER, 2, self.limits_key, self.versions_key, *args)

    def _fields(self) -> dict[str, Any]:
        """What this process holds, as the fields it shares: each live option, but
        ``tool_bounds`` one field per tool (``None`` for a tool whose entry it removed)."""
        values = self.options.live_values()
        bounds = values.pop(TOOL_BOUNDS, {}) or {}
        fields: dict[str, Any] = dict(values)
        for name in self.versions:
            if name.startswith(TOOL_FIELD):
                fields[name] = None  # removed here, unless still listed below
        for tool, entry in bounds.items():
            fields[TOOL_FIELD + tool] = entry
        return fields

    async def publish_own(self) -> None:
        """At start and on every reconnection: write what this process holds where it is
        newer than Redis's (and the requestState key if Redis has none), then take what
        Redis holds that is newer than ours."""
        redis = self.link.redis
        pipe = redis.pipeline(transaction=False)
        pipe.set(self.state_key_key, self.state_key.hex(), nx=True)
        args: list[Any] = []
        for name, value in self._fields().items():
            t, origin = self.version(name)
            args += [name, jsonio.dumps(value), str(t), origin]
        if args:
            pipe.eval(SET_IF_NEWER, 2, self.limits_key, self.versions_key, *args)
        pipe.get(self.state_key_key)
        pipe.hgetall(self.limits_key)
        pipe.hgetall(self.versions_key)
        *_, key_hex, limits, versions = await pipe.execute()
        self._install_key(bytes.fromhex(key_hex.decode()))
        current = self._fields()
        stored_versions = {k.decode(): parse_version(v) for k, v in versions.items()}
        changes: dict[str, Any] = {}
        for raw_name, raw_value in limits.items():
            name = raw_name.decode()
            if name not in current and not name.startswith(TOOL_FIELD):
                continue
            value = jsonio.loads(raw_value)
            theirs = stored_versions.get(name, ZERO)
            self._seen(theirs)
            mine = current.get(name)
            if theirs > self.version(name) or (theirs == self.version(name) and mine != value):
                self.versions[name] = theirs
                if mine != value:
                    changes[name] = value
        if changes:
            self.apply(changes, "cluster configuration")

    def _install_key(self, key: bytes) -> None:
        if key == self.state_key and self.server.request_state.key == key:
            return
        self.state_key = key
        ttl = self.server.request_state.ttl
        self.server.request_state = RequestStateCodec(key=key, ttl=ttl)

    def apply(self, changes: dict[str, Any], actor: str) -> None:
        """Apply shared ``changes`` here (``tool_bounds:<tool>`` fields merged into this
        process's ``tool_bounds``)."""
        tools = {k[len(TOOL_FIELD):]: v for k, v in changes.items() if k.startswith(TOOL_FIELD)}
        changes = {k: v for k, v in changes.items() if not k.startswith(TOOL_FIELD)}
        if tools:
            bounds = dict(self.options.tool_bounds)
            for tool, entry in tools.items():
                if entry is None:
                    bounds.pop(tool, None)
                else:
                    bounds[tool] = entry
            changes[TOOL_BOUNDS] = bounds
        self._applying = True
        try:
            self.options.update(changes, actor=actor)
        except OptionError as exc:
            log.warning("ignored cluster limits %s from %s: %s", changes, actor, exc)
        finally:
            self._applying = False

    def on_remote(self, changes: dict[str, Any], fields: dict[str, str]) -> None:
        """A limit change another process made, from the feed: applied where newer."""
        version = parse_version(fields.get("v") or f"0 {fields.get('o', '')}")
        self._seen(version)
        live = {}
        for name, value in changes.items():
            shared = name.startswith(TOOL_FIELD) or (name in LIVE_OPTIONS
                                                      and name != TOOL_BOUNDS)
            if shared and version > self.version(name):
                self.versions[name] = version
                live[name] = value
        if live:
            self.apply(live, f"{fields.get('a', '?')} on {fields.get('h', '?')} "
                             f"pid {fields.get('pid', '?')}")

    def on_local(self, diff: dict[str, tuple[Any, Any]], actor: str) -> None:
        """An options listener: share a change made in this process."""
        if self._applying or self.closed:
            return
        changes = {k: new for k, (_old, new) in diff.items()
                   if k in LIVE_OPTIONS and k != TOOL_BOUNDS}
        if TOOL_BOUNDS in diff:  # only the tools whose entry changed
            old, new = (v or {} for v in diff[TOOL_BOUNDS])
            for tool in old.keys() | new.keys():
                if old.get(tool) != new.get(tool):
                    changes[TOOL_FIELD + tool] = new.get(tool)
        if changes:
            version = (self._stamp(), self.process_id)
            for name in changes:
                self.versions[name] = version
            self.push({"k": "l", "c": jsonio.dumps(changes), "a": actor, "h": self.host,
                       "pid": self.pid, "v": f"{version[0]} {version[1]}"})
