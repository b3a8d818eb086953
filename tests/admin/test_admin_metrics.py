"""The Prometheus endpoint's exposition, pinned against the hand-written one it replaced.

``admin_ui.metrics`` used to write the text format itself; it now yields metric families from
a ``prometheus_client`` collector on a registry of each mount's own.  ``BEFORE`` is what the
hand-written renderer answered for the fixed state below: the names, types, help texts,
labels, order and values must stay exactly that.  Only the spelling of a number may differ
(prometheus_client writes ``4`` as ``4.0`` and ``4194304`` as ``4.194304e+06``), so values
are compared as numbers and every other line as text.
"""

from __future__ import annotations

import prometheus_client
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

import admin_ui
from admin_ui import metrics
from admin_ui.history import ProcessProbe, ProcessStats
from admin_ui.state import AdminState
from tornado_mcp import Server, Transport
from tornado_mcp.introspection import SessionInfo, Snapshot, StreamInfo, Totals
from tornado_mcp.options import Options

BEFORE = """\
# HELP tornado_mcp_sessions Legacy sessions open now.
# TYPE tornado_mcp_sessions gauge
tornado_mcp_sessions 4
# HELP tornado_mcp_option_max_sessions Current value of the max_sessions option; +Inf means no limit.
# TYPE tornado_mcp_option_max_sessions gauge
tornado_mcp_option_max_sessions 500
# HELP tornado_mcp_listen_streams subscriptions/listen streams open now.
# TYPE tornado_mcp_listen_streams gauge
tornado_mcp_listen_streams 2
# HELP tornado_mcp_option_max_listen_subscriptions Current value of the max_listen_subscriptions option; +Inf means no limit.
# TYPE tornado_mcp_option_max_listen_subscriptions gauge
tornado_mcp_option_max_listen_subscriptions 1000
# HELP tornado_mcp_largest_session_retained_bytes Retained initialize bytes of the largest session.
# TYPE tornado_mcp_largest_session_retained_bytes gauge
tornado_mcp_largest_session_retained_bytes 307
# HELP tornado_mcp_option_max_initialize_request_bytes Current value of the max_initialize_request_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_max_initialize_request_bytes gauge
tornado_mcp_option_max_initialize_request_bytes 65536
# HELP tornado_mcp_largest_session_retained_values Retained JSON values of the largest session.
# TYPE tornado_mcp_largest_session_retained_values gauge
tornado_mcp_largest_session_retained_values 9
# HELP tornado_mcp_max_initialize_params_values Fixed bound on JSON values one session may retain.
# TYPE tornado_mcp_max_initialize_params_values gauge
tornado_mcp_max_initialize_params_values 1024
# HELP tornado_mcp_largest_stream_uri_bytes Subscribed URI bytes of the largest listen stream.
# TYPE tornado_mcp_largest_stream_uri_bytes gauge
tornado_mcp_largest_stream_uri_bytes 321
# HELP tornado_mcp_option_max_resource_subscription_bytes Current value of the max_resource_subscription_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_max_resource_subscription_bytes gauge
tornado_mcp_option_max_resource_subscription_bytes 65536
# HELP tornado_mcp_largest_stream_uri_count Subscribed URIs of the largest listen stream.
# TYPE tornado_mcp_largest_stream_uri_count gauge
tornado_mcp_largest_stream_uri_count 5
# HELP tornado_mcp_max_resource_subscription_uris Fixed bound on URIs one listen stream may name.
# TYPE tornado_mcp_max_resource_subscription_uris gauge
tornado_mcp_max_resource_subscription_uris 1024
# HELP tornado_mcp_deepest_stream_queue Frames queued on the most backed-up listen stream.
# TYPE tornado_mcp_deepest_stream_queue gauge
tornado_mcp_deepest_stream_queue 9
# HELP tornado_mcp_option_max_stream_queue Current value of the max_stream_queue option; +Inf means no limit.
# TYPE tornado_mcp_option_max_stream_queue gauge
tornado_mcp_option_max_stream_queue 1000
# HELP tornado_mcp_retained_bytes Bytes retained by sessions and listen streams together.
# TYPE tornado_mcp_retained_bytes gauge
tornado_mcp_retained_bytes 1843
# HELP tornado_mcp_retained_values JSON values retained by sessions.
# TYPE tornado_mcp_retained_values gauge
tornado_mcp_retained_values 61
# HELP tornado_mcp_subscription_uris Resource URIs named by all listen streams.
# TYPE tornado_mcp_subscription_uris gauge
tornado_mcp_subscription_uris 7
# HELP tornado_mcp_subscription_uri_bytes Bytes of the resource URIs named by all listen streams.
# TYPE tornado_mcp_subscription_uri_bytes gauge
tornado_mcp_subscription_uri_bytes 420
# HELP tornado_mcp_get_streams Legacy GET (standalone SSE) streams open now.
# TYPE tornado_mcp_get_streams gauge
tornado_mcp_get_streams 1
# HELP tornado_mcp_in_flight_requests Requests being handled now.
# TYPE tornado_mcp_in_flight_requests gauge
tornado_mcp_in_flight_requests 2
# HELP tornado_mcp_option_session_idle_timeout Current value of the session_idle_timeout option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_session_idle_timeout gauge
tornado_mcp_option_session_idle_timeout +Inf
# HELP tornado_mcp_option_max_request_bytes Current value of the max_request_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_max_request_bytes gauge
tornado_mcp_option_max_request_bytes 4194304
# HELP tornado_mcp_option_body_timeout Current value of the body_timeout option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_body_timeout gauge
tornado_mcp_option_body_timeout +Inf
# HELP tornado_mcp_option_listen_keepalive_interval Current value of the listen_keepalive_interval option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_listen_keepalive_interval gauge
tornado_mcp_option_listen_keepalive_interval 15.0
# HELP tornado_mcp_option_sse_keepalive_interval Current value of the sse_keepalive_interval option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_sse_keepalive_interval gauge
tornado_mcp_option_sse_keepalive_interval 15.0
# HELP tornado_mcp_option_shutdown_grace Current value of the shutdown_grace option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_shutdown_grace gauge
tornado_mcp_option_shutdown_grace 30
# HELP tornado_mcp_option_server_to_client_request_timeout Current value of the server_to_client_request_timeout option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_server_to_client_request_timeout gauge
tornado_mcp_option_server_to_client_request_timeout 600.0
# HELP tornado_mcp_option_stream_stall_timeout Current value of the stream_stall_timeout option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_stream_stall_timeout gauge
tornado_mcp_option_stream_stall_timeout 30.0
# HELP tornado_mcp_option_cluster_outage_buffer Current value of the cluster_outage_buffer option; +Inf means no limit.
# TYPE tornado_mcp_option_cluster_outage_buffer gauge
tornado_mcp_option_cluster_outage_buffer 10000.0
# HELP tornado_mcp_option_event_store_max_bytes Current value of the event_store_max_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_event_store_max_bytes gauge
tornado_mcp_option_event_store_max_bytes 1048576
# HELP tornado_mcp_option_event_store_max_age Current value of the event_store_max_age option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_event_store_max_age gauge
tornado_mcp_option_event_store_max_age 300.0
# HELP tornado_mcp_option_sse_retry_interval Current value of the sse_retry_interval option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_sse_retry_interval gauge
tornado_mcp_option_sse_retry_interval 1.0
# HELP tornado_mcp_option_rate_limit_per_principal Current value of the rate_limit_per_principal option; +Inf means no limit.
# TYPE tornado_mcp_option_rate_limit_per_principal gauge
tornado_mcp_option_rate_limit_per_principal +Inf
# HELP tornado_mcp_option_max_concurrent_calls_per_principal Current value of the max_concurrent_calls_per_principal option; +Inf means no limit.
# TYPE tornado_mcp_option_max_concurrent_calls_per_principal gauge
tornado_mcp_option_max_concurrent_calls_per_principal +Inf
# HELP tornado_mcp_option_max_audit_entries Current value of the max_audit_entries option; +Inf means no limit.
# TYPE tornado_mcp_option_max_audit_entries gauge
tornado_mcp_option_max_audit_entries 1000
# HELP tornado_mcp_option_max_tasks Current value of the max_tasks option; +Inf means no limit.
# TYPE tornado_mcp_option_max_tasks gauge
tornado_mcp_option_max_tasks 1000
# HELP tornado_mcp_option_max_task_result_bytes Current value of the max_task_result_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_max_task_result_bytes gauge
tornado_mcp_option_max_task_result_bytes 262144
# HELP tornado_mcp_option_task_ttl Current value of the task_ttl option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_task_ttl gauge
tornado_mcp_option_task_ttl 3600
# HELP tornado_mcp_option_max_bearer_token_bytes Current value of the max_bearer_token_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_max_bearer_token_bytes gauge
tornado_mcp_option_max_bearer_token_bytes 8192
# HELP tornado_mcp_option_hide_unauthorized Current value of the hide_unauthorized option; +Inf means no limit.
# TYPE tornado_mcp_option_hide_unauthorized gauge
tornado_mcp_option_hide_unauthorized 0
# HELP tornado_mcp_option_forward_idle_timeout Current value of the forward_idle_timeout option (seconds); +Inf means no limit.
# TYPE tornado_mcp_option_forward_idle_timeout gauge
tornado_mcp_option_forward_idle_timeout 60.0
# HELP tornado_mcp_option_oauth_max_clients Current value of the oauth_max_clients option; +Inf means no limit.
# TYPE tornado_mcp_option_oauth_max_clients gauge
tornado_mcp_option_oauth_max_clients 1000
# HELP tornado_mcp_option_oauth_max_redirect_uris Current value of the oauth_max_redirect_uris option; +Inf means no limit.
# TYPE tornado_mcp_option_oauth_max_redirect_uris gauge
tornado_mcp_option_oauth_max_redirect_uris 10
# HELP tornado_mcp_option_oauth_max_client_metadata_bytes Current value of the oauth_max_client_metadata_bytes option; +Inf means no limit.
# TYPE tornado_mcp_option_oauth_max_client_metadata_bytes gauge
tornado_mcp_option_oauth_max_client_metadata_bytes 8192
# HELP tornado_mcp_option_oauth_registrations_per_minute Current value of the oauth_registrations_per_minute option; +Inf means no limit.
# TYPE tornado_mcp_option_oauth_registrations_per_minute gauge
tornado_mcp_option_oauth_registrations_per_minute 10
# HELP tornado_mcp_requests_total JSON-RPC messages handled since the transport started.
# TYPE tornado_mcp_requests_total counter
tornado_mcp_requests_total 212
# HELP tornado_mcp_refusals_total Requests refused by each bound since the transport started.
# TYPE tornado_mcp_refusals_total counter
tornado_mcp_refusals_total{bound="json_nesting"} 0
tornado_mcp_refusals_total{bound="max_request_bytes"} 5
tornado_mcp_refusals_total{bound="max_sessions"} 2
tornado_mcp_refusals_total{bound="stream_stall_timeout"} 1
# HELP tornado_mcp_tool_call_duration_seconds Seconds tools/call took, per tool (calls that ran; refused ones are not timed).
# TYPE tornado_mcp_tool_call_duration_seconds histogram
# HELP tornado_mcp_tool_calls_total tools/call answered, per tool and outcome (ok, error, refused, timeout, cancelled).
# TYPE tornado_mcp_tool_calls_total counter
# HELP tornado_mcp_start_time_seconds When the transport started, in seconds since the epoch.
# TYPE tornado_mcp_start_time_seconds gauge
tornado_mcp_start_time_seconds 1767222000.125
# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 41234432
# HELP process_cpu_seconds_total User and system CPU time in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.34
# HELP process_open_fds Open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 14
# HELP process_threads OS threads in the process.
# TYPE process_threads gauge
process_threads 3
# HELP process_start_time_seconds Process start time in seconds since the epoch.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1767222000.25
"""  # noqa: E501


class FixedProbe(ProcessProbe):
    """The process as a made-up, unchanging one."""

    def __init__(self, open_fds: int | None = 14) -> None:
        super().__init__()
        self.open_fds = open_fds

    def read(self, measure_cpu: bool = True) -> ProcessStats:
        return ProcessStats(rss_bytes=41_234_432, cpu_percent=0.7, open_fds=self.open_fds,
                            threads=3, started_at=1767222000.25, uptime_seconds=3600.5)

    def cpu_seconds(self) -> float:
        return 12.34


def fixed_snapshot() -> Snapshot:
    limits = Options(max_sessions=500, session_idle_timeout=None,
                              max_request_bytes=4_194_304).as_dict()
    sessions = tuple(
        SessionInfo(f"s{i}", "c", "1", "2025-11-25", 1.0, 2.0, i, 100 * i + 7, 3 * i, False)
        for i in range(4)
    )
    streams = (StreamInfo("t1", 1, {}, 5, 321, 9, 1.0, True),
               StreamInfo("t2", 2, {}, 2, 99, 0, 1.0, True))
    return Snapshot(
        taken_at=1767225600.5, started_at=1767222000.125,
        totals=Totals(sessions=4, get_streams=1, listen_streams=2, retained_bytes=1843,
                      retained_values=61, subscription_uris=7, subscription_uri_bytes=420,
                      in_flight=2),
        limits=limits,
        refusals={"max_sessions": 2, "json_nesting": 0, "max_request_bytes": 5,
                  "stream_stall_timeout": 1},
        requests_total=212, sessions=sessions, streams=streams,
    )


def scrape(probe: ProcessProbe | None = None) -> str:
    registry = metrics.registry(fixed_snapshot, probe or FixedProbe())
    return generate_latest(registry).decode("utf-8")


def assert_same_exposition(before: str, after: str) -> None:
    old, new = before.splitlines(), after.splitlines()
    assert len(new) == len(old)
    for was, now in zip(old, new, strict=True):
        if was.startswith("#"):
            assert now == was
        else:
            (was_key, was_value), (now_key, now_value) = was.rsplit(" ", 1), now.rsplit(" ", 1)
            assert now_key == was_key
            assert float(now_value) == float(was_value), (was, now)


def test_exposition_matches_the_hand_written_one() -> None:
    assert_same_exposition(BEFORE, scrape())


def test_prometheus_reads_the_same_families_as_before() -> None:
    def parsed(text: str) -> list[tuple[str, str, str, list[tuple[str, dict[str, str], float]]]]:
        return [(f.name, f.type, f.documentation, [(s.name, s.labels, s.value) for s in f.samples])
                for f in text_string_to_metric_families(text)]

    assert parsed(scrape()) == parsed(BEFORE)


def test_counters_keep_their_total_names() -> None:
    text = scrape()
    for name in ("tornado_mcp_requests_total", "tornado_mcp_refusals_total",
                 "process_cpu_seconds_total"):
        assert f"# TYPE {name} counter" in text.splitlines()
    assert "_total_total" not in text and "_created" not in text


def test_open_fds_are_left_out_where_they_cannot_be_counted() -> None:
    text = scrape(FixedProbe(open_fds=None))
    assert "process_open_fds" not in text
    without = [line for line in BEFORE.splitlines() if "process_open_fds" not in line]
    assert_same_exposition("\n".join(without) + "\n", text)


def test_content_type_is_the_text_format_it_writes() -> None:
    assert metrics.CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def admin_state(transport: Transport) -> AdminState:
    rule = next(r for r in admin_ui.routes(transport, "/admin", token="t" * 20)
                if r.target_kwargs and "admin" in r.target_kwargs)
    state = rule.target_kwargs["admin"]
    assert isinstance(state, AdminState)
    return state


def test_each_mount_scrapes_its_own_transport_on_its_own_registry() -> None:
    one = admin_state(Transport(Server("one"), max_sessions=11))
    two = admin_state(Transport(Server("two"), max_sessions=22))
    assert one.metrics is not two.metrics
    assert prometheus_client.REGISTRY not in (one.metrics, two.metrics)
    assert "tornado_mcp_option_max_sessions 11.0" in generate_latest(one.metrics).decode()
    assert "tornado_mcp_option_max_sessions 22.0" in generate_latest(two.metrics).decode()
    # Nothing lands on prometheus_client's global registry.
    assert "tornado_mcp" not in generate_latest(prometheus_client.REGISTRY).decode()
