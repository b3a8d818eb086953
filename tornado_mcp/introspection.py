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
class AuditTotals:
    """What the call audit trail holds (``Transport.audit()`` reads it)."""

    records: int  # records kept now (at most max_audit_entries)
    bytes: int  # what they hold: their strings as UTF-8, kept arguments as JSON, overhead
    recorded_total: int  # records made since start, the forgotten ones included


#: Upper bounds (seconds) of the latency buckets of :attr:`ToolInfo.buckets`; the last
#: bucket (not listed) holds everything slower.
LATENCY_BUCKETS: tuple[float, ...] = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


@dataclass(frozen=True)
class ToolInfo:
    """One tool (``kind`` "tool"), resource or template ("resource") or prompt ("prompt"),
    with what its calls did since the transport started."""

    name: str
    kind: str
    calls: int  # calls answered (refused ones included)
    errors: int  # answered with an error or a tool error (timeouts included)
    refusals: int  # refused by a bound before they ran
    timeouts: int
    in_flight: int  # running now (a timed-out plain def counts until its thread returns)
    timeout: float | None  # the bound in force (an operator's override, else declared)
    max_concurrency: int | None
    p50_ms: float | None  # from the latency histogram; None before the first call
    p99_ms: float | None
    outcomes: dict[str, int]  # outcome -> calls (ok, error, refused, timeout, cancelled)
    buckets: tuple[int, ...]  # calls per LATENCY_BUCKETS bucket (not cumulative), +Inf last
    duration_sum: float  # seconds, over every call counted in ``buckets``


@dataclass(frozen=True)
class PrincipalInfo:
    """One caller (the principal's subject, or ``address:<ip>`` when anonymous)."""

    principal: str
    calls: int
    errors: int
    refusals: int
    in_flight: int
    last_seen: float  # wall-clock seconds since the epoch


@dataclass(frozen=True)
class AuditRecord:
    """One governed call (``tools/call``, ``resources/read``, ``prompts/get``, a task run),
    as the audit trail keeps it and logs it to ``tornado_mcp.audit``."""

    time: float  # wall-clock seconds since the epoch, when the call was answered
    principal: str
    method: str
    name: str
    arguments_sha256: str  # of the canonical JSON of the arguments (sorted keys, compact)
    outcome: str  # ok, error, refused, timeout, cancelled
    code: int | None  # the JSON-RPC error code, if answered with one
    duration_ms: float
    request_id: Any
    session: str | None
    trace_id: str | None  # with OpenTelemetry on
    process: str | None  # the cluster process id, in a cluster
    #: Only for a tool declared with ``audit_arguments=True``: its arguments after its
    #: ``redact`` hook, or ``{"$truncated": <bytes>}`` when their JSON is over the bound.
    arguments: Any = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    #: Every registered tool, resource, template and prompt with its call statistics.
    tools: tuple[ToolInfo, ...] = field(default=())
    #: The callers seen most recently (a bounded number), most recent first.
    principals: tuple[PrincipalInfo, ...] = field(default=())
    #: The call audit trail's size.
    audit: AuditTotals | None = None

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
    #: It is shutting down: its legacy sessions are being handed to the others.
    draining: bool = False


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
    #: Requests this process judged without Redis because it could not answer, by kind:
    #: ``rate_limit`` (a local share of the caller's bucket), ``dpop_replay`` (this
    #: process's own replay cache).
    fallbacks: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
