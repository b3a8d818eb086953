"""The dashboard's machine-readable side: the JSON API the page runs on, and ``metrics``.

Every handler here is thin: it reads a snapshot and shapes it into JSON, or calls one
transport method and records who did it.  Authentication, read-only mode, XSRF and JSON
errors are the base handler's (:mod:`admin_ui.base`); ``docs/admin.md`` documents each
endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from prometheus_client import generate_latest

from tornado_mcp.introspection import REFUSAL_KINDS, SessionInfo, StreamInfo
from tornado_mcp.options import (
    MAX_INITIALIZE_PARAMS_VALUES,
    MAX_RESOURCE_SUBSCRIPTION_URIS,
    OPTION_SPECS,
    OptionError,
)

from . import metrics
from .base import AdminHandler, ApiError, log
from .schemas import (
    FieldErrors,
    SessionQuerySchema,
    StreamQuerySchema,
    load_limit_changes,
    load_query,
)


class OverviewHandler(AdminHandler):
    """``GET api/overview``: totals against their caps, refusals, rates and the process."""

    def get(self) -> None:
        admin = self.admin
        snap = admin.transport.snapshot(sessions=False, streams=False)
        limits = snap.limits
        t = snap.totals
        process = admin.probe.read(measure_cpu=False)
        self.write_json({
            "taken_at": snap.taken_at,
            "started_at": snap.started_at,
            "read_only": admin.read_only,
            "sessions": {"count": t.sessions, "limit": limits.get("max_sessions")},
            "streams": {"count": t.listen_streams,
                        "limit": limits.get("max_listen_subscriptions")},
            "get_streams": t.get_streams,
            "in_flight": t.in_flight,
            "tasks": _tasks(snap),
            "retained": {
                "bytes": t.retained_bytes,
                "values": t.retained_values,
                "subscription_uris": t.subscription_uris,
                "subscription_uri_bytes": t.subscription_uri_bytes,
            },
            "requests": {"total": snap.requests_total,
                         "per_second": admin.history.request_rate()},
            "refusals": {k: snap.refusals.get(k, 0) for k in REFUSAL_KINDS}
            | {k: v for k, v in snap.refusals.items() if k not in REFUSAL_KINDS},
            "process": process.as_dict(),
            "bounds": _bounds(limits),
            "limits": admin.transport.options.live_values(),
            "changes": [e.as_dict() for e in reversed(admin.events)][:20],
            "cluster": _cluster_summary(admin.transport),
        })


def _cluster_view(transport: Any) -> Any:
    """The library's public cluster view (``transport.cluster.snapshot()``), or None."""
    cluster = getattr(transport, "cluster", None)
    return None if cluster is None else cluster.snapshot()


def _cluster_summary(transport: Any) -> dict[str, Any] | None:
    view = _cluster_view(transport)
    if view is None:
        return None
    return {"connected": view.connected, "self_id": view.self_id, "totals": view.totals,
            "relay": view.relay, "fallbacks": view.fallbacks}


class ClusterHandler(AdminHandler):
    """``GET api/cluster``: every live process of the cluster (one process: itself only)."""

    def get(self) -> None:
        view = _cluster_view(self.admin.transport)
        if view is None:
            self.write_json({"clustered": False, "connected": None, "processes": [],
                             "totals": {}, "relay": {}})
            return
        self.write_json({"clustered": True, **view.as_dict()})


class HistoryHandler(AdminHandler):
    """``GET api/history?since=T``: plot samples newer than ``T`` (all of them without it)."""

    def get(self) -> None:
        raw = self.get_query_argument("since", None)
        since: float | None = None
        if raw:
            try:
                since = float(raw)
            except ValueError:
                raise ApiError(400, "Bad query.", {"since": "Must be a number."}) from None
        samples = self.admin.history.since(since)
        self.write_json({"now": time.time(), "interval": 1.0,
                         "samples": [s.as_dict() for s in samples]})


def _tasks(snap: Any) -> dict[str, Any]:
    """The task store's state against its bounds."""
    tasks = snap.tasks
    limits = snap.limits
    return {"store": tasks.store if tasks else None, "count": tasks.kept if tasks else 0,
            "limit": limits.get("max_tasks"), "running": tasks.running if tasks else 0,
            "by_status": dict(tasks.by_status) if tasks else {},
            "result_bytes": tasks.result_bytes if tasks else 0,
            "result_limit": limits.get("max_task_result_bytes")}


def _bounds(limits: dict[str, Any]) -> dict[str, Any]:
    """What each row's numbers are shown against on the page."""
    return {
        "session_retained_bytes": limits.get("max_initialize_request_bytes"),
        "session_retained_values": MAX_INITIALIZE_PARAMS_VALUES,
        "session_idle_timeout": limits.get("session_idle_timeout"),
        "stream_uri_count": MAX_RESOURCE_SUBSCRIPTION_URIS,
        "stream_uri_bytes": limits.get("max_resource_subscription_bytes"),
        "stream_queue": limits.get("max_stream_queue"),
    }


def _page(
    rows: Sequence[Any],
    query: dict[str, Any],
    matches: Callable[[Any, str], bool],
    sort_key: Callable[[Any], Any],
) -> tuple[int, list[Any]]:
    """Filter, sort and slice ``rows``; return how many matched and the requested page."""
    needle = query["q"].strip().lower()
    picked = [r for r in rows if matches(r, needle)] if needle else list(rows)
    picked.sort(key=sort_key, reverse=query["order"] == "desc")
    start = query["offset"]
    return len(picked), picked[start:start + query["limit"]]


def _session_matches(s: SessionInfo, needle: str) -> bool:
    hay = " ".join(x for x in (s.id, s.client_name, s.client_version, s.protocol_version) if x)
    return needle in hay.lower()


def _session_sort(column: str) -> Callable[[SessionInfo], Any]:
    if column == "client_name":
        return lambda s: ((s.client_name or "").lower(), s.client_version or "", s.id)
    return lambda s: (getattr(s, column), s.id)


def _stream_matches(s: StreamInfo, needle: str) -> bool:
    hay = " ".join((s.id, str(s.subscription_id), " ".join(s.honored)))
    return needle in hay.lower()


def _stream_json(s: StreamInfo, with_uris: bool = False) -> dict[str, Any]:
    d = asdict(s)
    if not with_uris:
        d.pop("uris", None)
    return d


def _query_or_400(schema: Any, handler: AdminHandler) -> dict[str, Any]:
    try:
        return load_query(schema, handler.request.query_arguments)
    except FieldErrors as exc:
        raise ApiError(400, "Bad query.", exc.errors) from None


class SessionsHandler(AdminHandler):
    """``GET api/sessions?sort=&order=&q=&offset=&limit=``: one page of sessions."""

    def get(self) -> None:
        query = _query_or_400(SessionQuerySchema(), self)
        snap = self.admin.transport.snapshot(sessions=True, streams=False)
        matched, rows = _page(snap.sessions, query, _session_matches,
                              _session_sort(query["sort"]))
        self.write_json({
            "total": snap.totals.sessions,
            "matched": matched,
            **query,
            "bounds": _bounds(snap.limits),
            "items": [asdict(s) for s in rows],
        })


class SessionHandler(AdminHandler):
    """``GET api/sessions/<id>`` shows one session; ``DELETE`` ends it."""

    def get(self, session_id: str) -> None:
        snap = self.admin.transport.snapshot(sessions=True, streams=False)
        for s in snap.sessions:
            if s.id == session_id:
                self.write_json({**asdict(s), "bounds": _bounds(snap.limits)})
                return
        raise ApiError(404, "No such session (it may have ended).")

    def delete(self, session_id: str) -> None:
        if not self.admin.transport.end_session(session_id):
            raise ApiError(404, "No such session (it may have ended).")
        actor = self.actor()
        log.info("admin: %s ended session %s", actor, session_id)
        self.admin.record(actor, "end_session", {"id": session_id})
        self.write_json({"id": session_id, "ended": True})


class StreamsHandler(AdminHandler):
    """``GET api/streams?sort=&order=&q=&offset=&limit=``: open listen streams (no URIs)."""

    def get(self) -> None:
        query = _query_or_400(StreamQuerySchema(), self)
        snap = self.admin.transport.snapshot(sessions=False, streams=True)
        column = query["sort"]
        matched, rows = _page(snap.streams, query, _stream_matches,
                              lambda s: (getattr(s, column), s.id))
        self.write_json({
            "total": snap.totals.listen_streams,
            "matched": matched,
            **query,
            "bounds": _bounds(snap.limits),
            "items": [_stream_json(s) for s in rows],
        })


class StreamHandler(AdminHandler):
    """``GET api/streams/<id>`` shows one stream with its URIs; ``DELETE`` closes it."""

    def get(self, stream_id: str) -> None:
        snap = self.admin.transport.snapshot(sessions=False, streams=True, stream_uris=True)
        for s in snap.streams:
            if s.id == stream_id:
                self.write_json({**_stream_json(s, with_uris=True),
                                 "bounds": _bounds(snap.limits)})
                return
        raise ApiError(404, "No such stream (it may have closed).")

    async def delete(self, stream_id: str) -> None:
        try:
            closed = await self.admin.transport.close_stream(stream_id)
        except TimeoutError:
            # The final result is queued and the stream is gone from the transport; only a
            # slow client is still reading.  That is closed as far as the operator goes.
            closed = True
        if not closed:
            raise ApiError(404, "No such stream (it may have closed).")
        actor = self.actor()
        log.info("admin: %s closed listen stream %s", actor, stream_id)
        self.admin.record(actor, "close_stream", {"id": stream_id})
        self.write_json({"id": stream_id, "closed": True})


class LimitsHandler(AdminHandler):
    """``GET api/limits`` lists every live limit; ``PATCH`` changes some of them."""

    def _answer(self, changed: dict[str, Any] | None = None) -> None:
        options = self.admin.transport.options
        body: dict[str, Any] = {
            "limits": options.live_values(),
            "fixed": {s.name: getattr(options, s.name) for s in OPTION_SPECS if not s.live},
            "specs": [{"name": s.name, "kind": s.kind, "default": s.default,
                       "nullable": s.nullable, "help": s.help}
                      for s in OPTION_SPECS if s.live],
            "read_only": self.admin.read_only,
        }
        if changed is not None:
            body["changed"] = changed
        self.write_json(body)

    def get(self) -> None:
        self._answer()

    def patch(self) -> None:
        try:
            changes = load_limit_changes(self.read_json())
            actor = self.actor()
            diff = self.admin.transport.options.update(changes, actor=actor)
        except (FieldErrors, OptionError) as exc:
            raise ApiError(400, "Some limits were refused; nothing changed.", exc.errors) from None
        if diff:
            log.info("admin: %s changed limits: %s", actor, ", ".join(
                f"{k} {old!r} -> {new!r}" for k, (old, new) in diff.items()))
        self._answer({k: {"old": old, "new": new} for k, (old, new) in diff.items()})


class MetricsHandler(AdminHandler):
    """``GET metrics``: Prometheus text exposition format (bearer token or login cookie)."""

    def get(self) -> None:
        body = generate_latest(self.admin.metrics)  # runs this mount's collector
        self.set_header("Content-Type", metrics.CONTENT_TYPE)
        self.finish(body)


class ApiNotFoundHandler(AdminHandler):
    """Anything else under ``api/``: a JSON 404 (after the login check, like the rest)."""

    async def prepare(self) -> None:
        pending = super().prepare()
        if pending is not None:  # the host's login
            await pending
        raise ApiError(404, "No such API endpoint; docs/admin.md lists them.")
