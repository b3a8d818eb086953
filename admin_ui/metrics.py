"""The Prometheus endpoint: the same numbers as the dashboard, through ``prometheus_client``.

Every bound is exported as a gauge right after the usage it bounds, so a graph or an alert
can divide one by the other::

    tornado_mcp_sessions 42.0
    tornado_mcp_option_max_sessions 10000.0

A limit that is switched off (``None``) is exported as ``+Inf``.  Refusals, one series per
bound, and handled requests are counters (``..._total``).  There are no per-session labels:
the endpoint's size does not grow with the number of clients.  Aggregates such as the
largest session's retained bytes stand in for them.

Process metrics use the names the official Prometheus clients use (``process_*``), so the
usual dashboards pick them up.

The numbers are read at scrape time by a custom collector (:class:`TransportCollector`: one
``transport.snapshot()`` and a few ``psutil`` calls per scrape), registered on a
:class:`~prometheus_client.CollectorRegistry` of each mount's own (:func:`registry`), never on
the library's global one: two dashboards in one process export two transports, and nothing
else registered globally leaks into them.  ``api.MetricsHandler`` serves
``generate_latest(registry)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from tornado_mcp.introspection import LATENCY_BUCKETS, ClusterSnapshot, Snapshot
from tornado_mcp.options import (
    MAX_INITIALIZE_PARAMS_VALUES,
    MAX_RESOURCE_SUBSCRIPTION_URIS,
    OPTION_SPECS,
)

from .history import ProcessProbe, ProcessStats

#: The ``Content-Type`` of what ``generate_latest`` writes: the text exposition format 0.0.4.
#: (``CONTENT_TYPE_LATEST`` names format 1.0.0 since prometheus_client 0.23; the bytes
#: ``generate_latest`` writes with its default escaping are the 0.0.4 format, which is also
#: what prometheus_client itself answers a scraper that asks for nothing newer.)
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
PREFIX = "tornado_mcp"


def _value(value: object) -> float:
    """A sample's value; ``None`` (a limit switched off) is ``+Inf``."""
    if value is None:
        return math.inf
    if isinstance(value, int | float):
        return float(value)
    raise TypeError(f"not a metric value: {value!r}")


class _Families:
    """Metric families in the order they are exposed."""

    def __init__(self) -> None:
        self.out: list[Metric] = []

    def gauge(self, name: str, help_text: str, value: object) -> None:
        self.out.append(GaugeMetricFamily(name, help_text, value=_value(value)))

    def counter(self, name: str, help_text: str, value: object) -> None:
        # ``name`` ends in ``_total``: prometheus_client keeps the family name without it and
        # exposes the family and its sample as ``name`` again.
        self.out.append(CounterMetricFamily(name, help_text, value=_value(value)))

    def usage(self, name: str, help_text: str, value: object) -> None:
        self.gauge(f"{PREFIX}_{name}", help_text, value)

    def option(self, snap: Snapshot, option: str) -> None:
        spec = next(s for s in OPTION_SPECS if s.name == option)
        unit = " (seconds)" if spec.kind == "seconds" else ""
        self.usage(f"option_{option}", f"Current value of the {option} option{unit}; "
                   f"+Inf means no limit.", snap.limits.get(option))


def families(snap: Snapshot, process: ProcessStats, cpu_seconds: float) -> list[Metric]:
    """Every metric family of one scrape, from a full snapshot (with session and stream rows)."""
    f = _Families()
    t = snap.totals
    largest_retained_bytes = max((s.retained_bytes for s in snap.sessions), default=0)
    largest_retained_values = max((s.retained_values for s in snap.sessions), default=0)
    largest_uri_count = max((s.uri_count for s in snap.streams), default=0)
    largest_uri_bytes = max((s.uri_bytes for s in snap.streams), default=0)
    deepest_queue = max((s.queue_depth for s in snap.streams), default=0)

    f.usage("sessions", "Legacy sessions open now.", t.sessions)
    f.option(snap, "max_sessions")
    f.usage("listen_streams", "subscriptions/listen streams open now.", t.listen_streams)
    f.option(snap, "max_listen_subscriptions")
    f.usage("largest_session_retained_bytes",
            "Retained initialize bytes of the largest session.", largest_retained_bytes)
    f.option(snap, "max_initialize_request_bytes")
    f.usage("largest_session_retained_values",
            "Retained JSON values of the largest session.", largest_retained_values)
    f.usage("max_initialize_params_values",
            "Fixed bound on JSON values one session may retain.", MAX_INITIALIZE_PARAMS_VALUES)
    f.usage("largest_stream_uri_bytes",
            "Subscribed URI bytes of the largest listen stream.", largest_uri_bytes)
    f.option(snap, "max_resource_subscription_bytes")
    f.usage("largest_stream_uri_count",
            "Subscribed URIs of the largest listen stream.", largest_uri_count)
    f.usage("max_resource_subscription_uris",
            "Fixed bound on URIs one listen stream may name.", MAX_RESOURCE_SUBSCRIPTION_URIS)
    f.usage("deepest_stream_queue", "Frames queued on the most backed-up listen stream.",
            deepest_queue)
    f.option(snap, "max_stream_queue")
    f.usage("retained_bytes", "Bytes retained by sessions and listen streams together.",
            t.retained_bytes)
    f.usage("retained_values", "JSON values retained by sessions.", t.retained_values)
    f.usage("subscription_uris", "Resource URIs named by all listen streams.",
            t.subscription_uris)
    f.usage("subscription_uri_bytes", "Bytes of the resource URIs named by all listen streams.",
            t.subscription_uri_bytes)
    f.usage("get_streams", "Legacy GET (standalone SSE) streams open now.", t.get_streams)
    f.usage("in_flight_requests", "Requests being handled now.", t.in_flight)
    if snap.tasks is not None:
        f.usage("tasks_kept", "Tasks kept: running, waiting for input, or finished.",
                snap.tasks.kept)
        f.usage("tasks_running", "Tasks whose work runs in this process now.",
                snap.tasks.running)
        f.usage("task_result_bytes", "JSON bytes of the task results kept.",
                snap.tasks.result_bytes)

    shown = {"max_sessions", "max_listen_subscriptions", "max_initialize_request_bytes",
             "max_resource_subscription_bytes", "max_stream_queue"}
    for spec in OPTION_SPECS:
        if spec.live and spec.name not in shown and spec.kind != "tool_bounds":
            f.option(snap, spec.name)

    f.counter(f"{PREFIX}_requests_total",
              "JSON-RPC messages handled since the transport started.", snap.requests_total)
    refusals = CounterMetricFamily(
        f"{PREFIX}_refusals_total",
        "Requests refused by each bound since the transport started.",
        labels=["bound"],
    )
    for bound, count in sorted(snap.refusals.items()):
        refusals.add_metric([bound], _value(count))
    f.out.append(refusals)
    f.out.extend(tool_families(snap))
    f.gauge(f"{PREFIX}_start_time_seconds",
            "When the transport started, in seconds since the epoch.", snap.started_at)

    f.gauge("process_resident_memory_bytes", "Resident memory size in bytes.",
            process.rss_bytes)
    f.counter("process_cpu_seconds_total", "User and system CPU time in seconds.", cpu_seconds)
    if process.open_fds is not None:
        f.gauge("process_open_fds", "Open file descriptors.", process.open_fds)
    f.gauge("process_threads", "OS threads in the process.", process.threads)
    f.gauge("process_start_time_seconds", "Process start time in seconds since the epoch.",
            process.started_at)
    return f.out


def tool_families(snap: Snapshot) -> list[Metric]:
    """Per tool (one label: the tool's name, a set the server fixes; never the caller): a
    latency histogram of the calls that ran, and calls by outcome."""
    duration = HistogramMetricFamily(
        f"{PREFIX}_tool_call_duration_seconds",
        "Seconds tools/call took, per tool (calls that ran; refused ones are not timed).",
        labels=["tool"])
    calls = CounterMetricFamily(f"{PREFIX}_tool_calls", "tools/call answered, per tool and "
                                "outcome (ok, error, refused, timeout, cancelled).",
                                labels=["tool", "outcome"])
    for row in snap.tools:
        if row.kind != "tool":
            continue
        running = 0
        buckets: list[tuple[str, float]] = []
        for bound, count in zip((*LATENCY_BUCKETS, math.inf), row.buckets, strict=True):
            running += count
            buckets.append(("+Inf" if bound == math.inf else repr(bound), float(running)))
        duration.add_metric([row.name], buckets, row.duration_sum)
        for outcome, count in row.outcomes.items():
            calls.add_metric([row.name, outcome], float(count))
    return [duration, calls]


class TransportCollector(Collector):
    """A custom collector: reads a snapshot and the process on every scrape, keeps nothing.

    ``take`` returns a full snapshot (``transport.snapshot(sessions=True, streams=True)``);
    passing it in rather than the transport keeps the collector easy to feed made-up numbers.
    """

    def __init__(self, take: Callable[[], Snapshot], probe: ProcessProbe,
                 cluster: Callable[[], ClusterSnapshot | None] | None = None) -> None:
        self._take = take
        self._probe = probe
        self.cluster = cluster

    def collect(self) -> list[Metric]:
        snap = self._take()
        probe = self._probe
        out = families(snap, probe.read(measure_cpu=False), probe.cpu_seconds())
        if self.cluster is not None:
            view = self.cluster()
            if view is not None:
                out.extend(cluster_families(view))
        return out


def cluster_families(view: ClusterSnapshot) -> list[Metric]:
    """The cluster as this process sees it: whether Redis answers, the live processes,
    totals over them, and the relay's own counts."""
    f = _Families()
    f.usage("cluster_connected", "1 while this process reaches the cluster's Redis, else 0.",
            int(view.connected))
    for name, value in sorted(view.totals.items()):
        f.usage(f"cluster_{name}", f"Cluster total of {name} (live processes).", value)
    f.usage("cluster_outbox", "Feed entries waiting for Redis (grows during an outage).",
            view.relay["buffered"])
    for name in ("published", "received", "duplicates", "dropped", "trimmed", "unreplicated",
                 "reconnects", "sessions_handed_over", "sessions_adopted"):
        f.counter(f"{PREFIX}_cluster_{name}_total", f"Cluster feed: {name}.",
                  view.relay[name])
    fallbacks = CounterMetricFamily(
        f"{PREFIX}_cluster_fallbacks_total",
        "Requests this process judged without Redis because it could not answer, by kind "
        "(rate_limit: a local share of the caller's bucket; dpop_replay: its own replay "
        "cache).", labels=["kind"])
    for kind, count in sorted(view.fallbacks.items()):
        fallbacks.add_metric([kind], float(count))
    f.out.append(fallbacks)
    return f.out


def registry(take: Callable[[], Snapshot], probe: ProcessProbe,
             cluster: Callable[[], ClusterSnapshot | None] | None = None) -> CollectorRegistry:
    """A new registry holding one :class:`TransportCollector` (one per dashboard mount)."""
    reg = CollectorRegistry(auto_describe=False)  # no scrape at registration
    reg.register(TransportCollector(take, probe, cluster))
    return reg
