"""Building a :class:`~tornado_mcp.Snapshot` of a transport: one pass over its sessions
and listen streams, so the totals always agree with the rows."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..introspection import AuditTotals, SessionInfo, Snapshot, StreamInfo, TaskTotals, Totals
from ..protocol.identity import Principal

if TYPE_CHECKING:
    from ..engine.audit import AuditTrail
    from .core import Transport


def take_snapshot(t: Transport, sessions: bool, streams: bool, stream_uris: bool) -> Snapshot:
    now_wall, now_mono = time.time(), time.monotonic()
    session_rows = []
    s_bytes = s_values = in_flight = get_streams = 0
    store = t.resumption.store
    for s in t.sessions:
        retained = s.retained_bytes + store.retained_bytes(s.id)  # events kept to resume
        s_bytes += retained
        s_values += s.retained_values
        in_flight += len(s.in_flight)
        has_get = s.get_channel is not None and not s.get_channel.closed
        get_streams += has_get
        if sessions:
            session_rows.append(SessionInfo(
                id=s.id, client_name=s.client_name, client_version=s.client_version,
                protocol_version=s.protocol_version, created_at=s.created_at,
                last_active_at=now_wall - (now_mono - s.last_active),
                in_flight=len(s.in_flight), retained_bytes=retained,
                retained_values=s.retained_values, has_get_stream=has_get,
                principal=shown(s.principal)))
    stream_rows = []
    u_count = u_bytes = 0
    for st in t.listen_index:
        u_count += len(st.uris)
        u_bytes += st.uri_bytes
        if streams:
            stream_rows.append(StreamInfo(
                id=st.id, subscription_id=st.subscription_id, honored=st.honored(),
                uri_count=len(st.uris), uri_bytes=st.uri_bytes,
                queue_depth=st.channel.queue_depth, opened_at=st.opened_at,
                acknowledged=st.acknowledged,
                uris=tuple(sorted(st.uris)) if stream_uris else (),
                principal=shown(st.principal)))
    totals = Totals(sessions=len(t.sessions), get_streams=get_streams,
                    listen_streams=len(t.listen_index), retained_bytes=s_bytes + u_bytes,
                    retained_values=s_values, subscription_uris=u_count,
                    subscription_uri_bytes=u_bytes, in_flight=in_flight)
    return Snapshot(taken_at=now_wall, started_at=t.started_at, totals=totals,
                    limits=t.options.as_dict(), refusals=dict(t.refusals),
                    requests_total=t.requests_total, sessions=tuple(session_rows),
                    streams=tuple(stream_rows), tasks=TaskTotals(**t.tasks.stats()),
                    tools=t.engine.governance.tool_rows(),
                    principals=t.engine.governance.principal_rows(),
                    audit=audit_totals(t.engine.governance.trail))


def audit_totals(trail: AuditTrail) -> AuditTotals:
    return AuditTotals(records=len(trail.records), bytes=trail.bytes,
                       recorded_total=trail.total)


def shown(principal: Principal) -> dict[str, Any] | None:
    """What a snapshot shows of a principal: never its claims (they may hold secrets)."""
    if not principal.authenticated:
        return None
    return {"subject": principal.subject, "scopes": sorted(principal.scopes),
            "method": principal.method}
