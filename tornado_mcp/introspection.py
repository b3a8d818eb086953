"""Read-only snapshots of what a transport holds, for dashboards, metrics and tests.

:meth:`tornado_mcp.Transport.snapshot` returns a :class:`Snapshot`: plain frozen data, taken
in one step on the IOLoop, so its totals always agree with its rows.  Nothing in here holds a
reference to live state; keeping a snapshot around keeps no session alive.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .protocol import Refusal

#: Keys of :attr:`Snapshot.refusals`, one per bound, counted since the transport started.
REFUSAL_KINDS: tuple[str, ...] = tuple(kind.value for kind in Refusal)


@dataclass(frozen=True)
class SessionInfo:
    """One legacy session."""

    id: str
    client_name: str | None
    client_version: str | None
    protocol_version: str
    created_at: float  # wall-clock seconds since the epoch
    last_active_at: float  # wall-clock seconds since the epoch
    in_flight: int  # requests being handled right now
    retained_bytes: int  # bytes of initialize params and resumable-stream events it keeps
    retained_values: int  # JSON values (objects, arrays, keys, scalars) it keeps
    has_get_stream: bool
    #: Who opened it: subject, scopes, method (never claims or tokens); None if anonymous.
    principal: dict[str, Any] | None = None


@dataclass(frozen=True)
class StreamInfo:
    """One open ``subscriptions/listen`` stream."""

    id: str  # minted by the transport, unique; use it to close the stream
    subscription_id: Any  # the listen request's JSON-RPC id
    honored: dict[str, Any]  # the acknowledged filter, without the URIs
    uri_count: int
    uri_bytes: int
    queue_depth: int  # frames waiting to be written
    opened_at: float  # wall-clock seconds since the epoch
    acknowledged: bool
    uris: tuple[str, ...] = ()  # filled only when asked for (detail view)
    #: Who opened it: subject, scopes, method (never claims or tokens); None if anonymous.
    principal: dict[str, Any] | None = None


@dataclass(frozen=True)
class Totals:
    """Counts over the whole transport: sessions, streams, what they retain, subscribed
    URIs and requests in flight."""

    sessions: int
    get_streams: int
    listen_streams: int
    retained_bytes: int  # sessions' retained bytes plus listen streams' URI bytes
    retained_values: int  # sessions' retained values
    subscription_uris: int
    subscription_uri_bytes: int
    in_flight: int


@dataclass(frozen=True)
class TaskTotals:
    """What the transport's task store keeps (this process's tasks)."""

    store: str  # "memory" or "redis"
    kept: int  # records kept: running, waiting for input, or finished within their TTL
    running: int  # work running in this process
    by_status: dict[str, int]  # status -> records kept
    result_bytes: int  # JSON bytes of the kept results and errors
    created_total: int  # tasks created since start


@dataclass(frozen=True)
class Snapshot:
    """What :meth:`tornado_mcp.Transport.snapshot` returns: totals, current limits, refusal
    counts, requests handled, one row per session and per listen stream (unless turned
    off), and the task store's totals."""

    taken_at: float
    started_at: float
    totals: Totals
    limits: dict[str, Any]  # every option with its current value
    refusals: dict[str, int]  # REFUSAL_KINDS -> count since start
    requests_total: int  # JSON-RPC messages handled since start
    sessions: tuple[SessionInfo, ...] = field(default=())
    streams: tuple[StreamInfo, ...] = field(default=())
    tasks: TaskTotals | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProcessInfo:
    """One live process of a cluster, as its last heartbeat described it."""

    id: str  # minted at start; the prefix of every session id the process creates
    host: str
    pid: int
    url: str | None  # where other processes may forward a session's requests (None: nowhere)
    started_at: float  # wall-clock seconds since the epoch
    heartbeat_at: float  # wall-clock seconds since the epoch
    connected: bool  # False: this process cannot reach Redis right now (only ever for self)
    sessions: int
    get_streams: int
    listen_streams: int
    retained_bytes: int
    retained_values: int
    refusals: dict[str, int]


@dataclass(frozen=True)
class ClusterSnapshot:
    """What one process knows of its cluster: every live process and the totals over them.

    Taken from memory (the last heartbeat round), never from Redis, so it is cheap and
    available while Redis is down; ``connected`` says whether it is current.
    """

    taken_at: float
    self_id: str
    connected: bool  # this process reaches Redis now
    processes: tuple[ProcessInfo, ...]
    totals: dict[str, int]  # sessions, get_streams, listen_streams, retained_*, refusals
    relay: dict[str, int]  # published, received, duplicates, buffered, dropped, reconnects

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
