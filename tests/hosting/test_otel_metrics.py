"""The MCP semantic-convention metrics beside the spans, read back with the SDK's in-memory
metric reader: ``mcp.server.operation.duration`` per request (method, tool, protocol
version, error type) and ``mcp.server.session.duration`` per ended legacy session; and the
span's trace id in the call's audit record."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp_http import example_server, result_of, rpc, running

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from tornado_mcp.engine.otel import OpenTelemetry

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
TRACEPARENT = f"00-{TRACE_ID:032x}-{0x00F067AA0BA902B7:016x}-01"


@pytest.fixture
def instrumented() -> Iterator[tuple[OpenTelemetry, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    tracer = TracerProvider()
    yield OpenTelemetry(tracer_provider=tracer, meter_provider=meters), reader
    meters.shutdown()
    tracer.shutdown()


def points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], int]]:
    data = reader.get_metrics_data()
    found = []
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    assert metric.unit == "s"
                    found += [(dict(p.attributes or {}), p.count) for p in metric.data.data_points]
    return found


async def test_each_request_is_measured_with_the_convention_attributes(
        instrumented: tuple[OpenTelemetry, InMemoryMetricReader]) -> None:
    mw, reader = instrumented
    async with running(example_server(), middleware=[mw]) as srv:
        await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "a"}})
        await srv.modern("tools/call", {"name": "echo", "arguments": {"text": "b"}},
                         request_id=2)
        await srv.modern("tools/call", {"name": "nope", "arguments": {}}, request_id=3)
        await srv.modern("tools/list", request_id=4)
    got = {tuple(sorted(a.items())): n for a, n in points(reader, "mcp.server.operation.duration")}
    assert got == {
        (("gen_ai.tool.name", "echo"), ("mcp.method.name", "tools/call"),
         ("mcp.protocol.version", "2026-07-28")): 2,
        (("error.type", "-32602"), ("gen_ai.tool.name", "nope"),
         ("mcp.method.name", "tools/call"), ("mcp.protocol.version", "2026-07-28")): 1,
        (("mcp.method.name", "tools/list"), ("mcp.protocol.version", "2026-07-28")): 1,
    }


async def test_an_ended_session_is_measured(
        instrumented: tuple[OpenTelemetry, InMemoryMetricReader]) -> None:
    mw, reader = instrumented
    async with running(example_server(), middleware=[mw]) as srv:
        sid = await srv.initialize()
        assert points(reader, "mcp.server.session.duration") == []
        assert (await srv.delete(sid)).status == 200
        assert points(reader, "mcp.server.session.duration") == [
            ({"mcp.protocol.version": "2025-11-25"}, 1)]


async def test_the_audit_record_carries_the_span_trace_id(
        instrumented: tuple[OpenTelemetry, InMemoryMetricReader]) -> None:
    mw, _ = instrumented
    async with running(example_server(), middleware=[mw]) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {"text": "t"}}, 5),
                           session=sid, headers={"traceparent": TRACEPARENT})
        assert result_of(r)["content"][0]["text"] == "t"
        (record,) = srv.transport.audit()
        assert record.trace_id == f"{TRACE_ID:032x}"
