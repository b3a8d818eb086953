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
    retained_bytes: int  # UTF-8 bytes of the initialize params the session keeps
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
    sessions: int
    get_streams: int
    listen_streams: int
    retained_bytes: int  # sessions' retained bytes plus listen streams' URI bytes
    retained_values: int  # sessions' retained values
    subscription_uris: int
    subscription_uri_bytes: int
    in_flight: int


@dataclass(frozen=True)
class Snapshot:
    taken_at: float
    started_at: float
    totals: Totals
    limits: dict[str, Any]  # every option with its current value
    refusals: dict[str, int]  # REFUSAL_KINDS -> count since start
    requests_total: int  # JSON-RPC messages handled since start
    sessions: tuple[SessionInfo, ...] = field(default=())
    streams: tuple[StreamInfo, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
