"""The Prometheus endpoint: the same numbers as the dashboard, in text exposition format.

Every bound is exported as a gauge right after the usage it bounds, so a graph or an alert
can divide one by the other::

    tornado_mcp_sessions 42
    tornado_mcp_option_max_sessions 10000

A limit that is switched off (``None``) is exported as ``+Inf``.  Refusals, one series per
bound, and handled requests are counters (``..._total``).  There are no per-session labels:
the endpoint's size does not grow with the number of clients.  Aggregates such as the
largest session's retained bytes stand in for them.

Process metrics use the names the official Prometheus clients use (``process_*``), so the
usual dashboards pick them up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from tornado_mcp.introspection import Snapshot
from tornado_mcp.options import (
    MAX_INITIALIZE_PARAMS_VALUES,
    MAX_RESOURCE_SUBSCRIPTION_URIS,
    OPTION_SPECS,
)

from .history import ProcessStats

#: The ``Content-Type`` of the text exposition format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "tornado_mcp"


def _num(value: object) -> str:
    if value is None:
        return "+Inf"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if math.isnan(value):
            return "NaN"
        return repr(value)
    raise TypeError(f"not a metric value: {value!r}")


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def metric(
        self,
        name: str,
        kind: str,
        help_text: str,
        samples: Iterable[tuple[dict[str, str], object]],
    ) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")
        for labels, value in samples:
            label_text = ""
            if labels:
                inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
                label_text = "{" + inner + "}"
            self.lines.append(f"{name}{label_text} {_num(value)}")

    def gauge(self, name: str, help_text: str, value: object) -> None:
        self.metric(f"{PREFIX}_{name}", "gauge", help_text, [({}, value)])

    def option(self, snap: Snapshot, option: str) -> None:
        spec = next(s for s in OPTION_SPECS if s.name == option)
        unit = " (seconds)" if spec.kind == "seconds" else ""
        self.gauge(f"option_{option}", f"Current value of the {option} option{unit}; "
                   f"+Inf means no limit.", snap.limits.get(option))


def render(snap: Snapshot, process: ProcessStats, cpu_seconds: float) -> str:
    """Render one scrape from a full snapshot (with session and stream rows)."""
    w = _Writer()
    t = snap.totals
    largest_retained_bytes = max((s.retained_bytes for s in snap.sessions), default=0)
    largest_retained_values = max((s.retained_values for s in snap.sessions), default=0)
    largest_uri_count = max((s.uri_count for s in snap.streams), default=0)
    largest_uri_bytes = max((s.uri_bytes for s in snap.streams), default=0)
    deepest_queue = max((s.queue_depth for s in snap.streams), default=0)

    w.gauge("sessions", "Legacy sessions open now.", t.sessions)
    w.option(snap, "max_sessions")
    w.gauge("listen_streams", "subscriptions/listen streams open now.", t.listen_streams)
    w.option(snap, "max_listen_subscriptions")
    w.gauge("largest_session_retained_bytes",
            "Retained initialize bytes of the largest session.", largest_retained_bytes)
    w.option(snap, "max_initialize_request_bytes")
    w.gauge("largest_session_retained_values",
            "Retained JSON values of the largest session.", largest_retained_values)
    w.gauge("max_initialize_params_values",
            "Fixed bound on JSON values one session may retain.", MAX_INITIALIZE_PARAMS_VALUES)
    w.gauge("largest_stream_uri_bytes",
            "Subscribed URI bytes of the largest listen stream.", largest_uri_bytes)
    w.option(snap, "max_resource_subscription_bytes")
    w.gauge("largest_stream_uri_count",
            "Subscribed URIs of the largest listen stream.", largest_uri_count)
    w.gauge("max_resource_subscription_uris",
            "Fixed bound on URIs one listen stream may name.", MAX_RESOURCE_SUBSCRIPTION_URIS)
    w.gauge("deepest_stream_queue", "Frames queued on the most backed-up listen stream.",
            deepest_queue)
    w.option(snap, "max_stream_queue")
    w.gauge("retained_bytes", "Bytes retained by sessions and listen streams together.",
            t.retained_bytes)
    w.gauge("retained_values", "JSON values retained by sessions.", t.retained_values)
    w.gauge("subscription_uris", "Resource URIs named by all listen streams.",
            t.subscription_uris)
    w.gauge("subscription_uri_bytes", "Bytes of the resource URIs named by all listen streams.",
            t.subscription_uri_bytes)
    w.gauge("get_streams", "Legacy GET (standalone SSE) streams open now.", t.get_streams)
    w.gauge("in_flight_requests", "Requests being handled now.", t.in_flight)

    shown = {"max_sessions", "max_listen_subscriptions", "max_initialize_request_bytes",
             "max_resource_subscription_bytes", "max_stream_queue"}
    for spec in OPTION_SPECS:
        if spec.live and spec.name not in shown:
            w.option(snap, spec.name)

    w.metric(f"{PREFIX}_requests_total", "counter",
             "JSON-RPC messages handled since the transport started.",
             [({}, snap.requests_total)])
    w.metric(f"{PREFIX}_refusals_total", "counter",
             "Requests refused by each bound since the transport started.",
             [({"bound": k}, v) for k, v in sorted(snap.refusals.items())])
    w.metric(f"{PREFIX}_start_time_seconds", "gauge",
             "When the transport started, in seconds since the epoch.",
             [({}, float(snap.started_at))])

    w.metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             [({}, process.rss_bytes)])
    w.metric("process_cpu_seconds_total", "counter", "User and system CPU time in seconds.",
             [({}, cpu_seconds)])
    if process.open_fds is not None:
        w.metric("process_open_fds", "gauge", "Open file descriptors.",
                 [({}, process.open_fds)])
    w.metric("process_threads", "gauge", "OS threads in the process.", [({}, process.threads)])
    w.metric("process_start_time_seconds", "gauge",
             "Process start time in seconds since the epoch.", [({}, process.started_at)])
    return "\n".join(w.lines) + "\n"
