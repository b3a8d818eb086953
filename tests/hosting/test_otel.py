"""OpenTelemetry spans from the middleware, read back from the SDK's in-memory exporter:
one SERVER span per request, the MCP attributes, the W3C trace context continued from
``_meta`` or from the headers, and errors marked.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_http import example_server, modern_meta, result_of, rpc, running

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode

from tornado_mcp.engine.otel import OpenTelemetry

TRACE_ID = 0x4BF92F3577B34DA6A3CE929D0E0E4736
PARENT_ID = 0x00F067AA0BA902B7
TRACEPARENT = f"00-{TRACE_ID:032x}-{PARENT_ID:016x}-01"
OTHER_TRACEPARENT = f"00-{1:032x}-{2:016x}-01"
ECHO = {"name": "echo", "arguments": {"text": "hi"}}


@pytest.fixture
def spans() -> Iterator[tuple[OpenTelemetry, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield OpenTelemetry(tracer_provider=provider, record_principal=True), exporter
    provider.shutdown()


async def test_modern_call_continues_the_trace_in_meta(
        spans: tuple[OpenTelemetry, InMemorySpanExporter]) -> None:
    mw, exporter = spans
    async with running(example_server(), middleware=[mw]) as srv:
        r = await srv.modern("tools/call", ECHO, request_id=7,
                             meta=modern_meta(traceparent=TRACEPARENT, tracestate="k=v"),
                             headers={"traceparent": OTHER_TRACEPARENT})
        assert result_of(r)["content"][0]["text"] == "hi"
    (span,) = exporter.get_finished_spans()
    assert span.name == "tools/call echo"
    assert span.kind is SpanKind.SERVER
    assert span.context.trace_id == TRACE_ID  # _meta wins over the header
    assert span.parent is not None and span.parent.span_id == PARENT_ID
    assert span.parent.is_remote
    assert dict(span.attributes or {}) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "echo",
        "mcp.protocol.version": "2026-07-28", "jsonrpc.request.id": "7",
        "client.address": "127.0.0.1"}
    assert span.status.status_code is StatusCode.UNSET


async def test_legacy_call_continues_the_trace_in_the_headers(
        spans: tuple[OpenTelemetry, InMemorySpanExporter]) -> None:
    mw, exporter = spans
    async with running(example_server(), middleware=[mw]) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", ECHO, 3), session=sid,
                           headers={"traceparent": TRACEPARENT})
        assert result_of(r)["content"][0]["text"] == "hi"
    initialize, call = exporter.get_finished_spans()
    assert initialize.name == "initialize" and initialize.parent is None
    assert call.context.trace_id == TRACE_ID and call.parent is not None
    assert call.parent.span_id == PARENT_ID
    assert call.attributes is not None
    assert call.attributes["mcp.session.id"] == sid
    assert call.attributes["mcp.protocol.version"] == "2025-11-25"


async def test_errors_mark_the_span(spans: tuple[OpenTelemetry, InMemorySpanExporter]) -> None:
    mw, exporter = spans
    async with running(example_server(), middleware=[mw]) as srv:
        r = await srv.modern("tools/call", {"name": "no_such_tool", "arguments": {}},
                             headers={"traceparent": "00-garbage"})
        assert r.status in (200, 400)
    (span,) = exporter.get_finished_spans()
    assert span.parent is None  # a malformed traceparent starts a new trace
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["error.type"] == "-32602"
    assert span.attributes["rpc.jsonrpc.error_code"] == -32602
