"""OpenTelemetry spans for MCP requests: a middleware (the ``otel`` extra).

::

    from tornado_mcp.engine.otel import OpenTelemetry
    transport = Transport(server, middleware=[OpenTelemetry()])

Each request the transport dispatches becomes a ``SERVER`` span named after the method and
its target (``tools/call echo``), with the attributes of OpenTelemetry's MCP semantic
conventions: ``mcp.method.name``, ``mcp.protocol.version``, ``mcp.session.id``,
``jsonrpc.request.id``, ``gen_ai.tool.name`` (for ``tools/call``),
``mcp.resource.uri``, ``gen_ai.prompt.name``, and on an error ``error.type`` and
``rpc.jsonrpc.error_code`` with the span's status set to error.  The caller's subject is
recorded as ``enduser.id`` only when ``record_principal=True``.

The span continues the caller's trace (W3C trace context): from ``traceparent`` and
``tracestate`` in the request's ``params._meta`` when present, else from the HTTP headers
of the same names.  The tracer comes from ``tracer_provider`` (default: the global one).
The span's trace id goes into the call's audit record (``trace_id``).

Beside the spans, the metrics of the same conventions, from ``meter_provider`` (default:
the global one): ``mcp.server.operation.duration`` (a histogram in seconds per request,
with ``mcp.method.name``, ``gen_ai.tool.name`` or ``gen_ai.prompt.name``,
``mcp.protocol.version`` and, on an error, ``error.type``) and
``mcp.server.session.duration`` (seconds from a legacy session's ``initialize`` to its
end, with ``mcp.protocol.version``).  No attribute names a caller, a session or a
resource URI, so the series stay few.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ..protocol import (
    NAME_BEARING,
    PROMPTS_GET,
    RESOURCES_READ,
    TOOLS_CALL,
    TRACEPARENT,
    TRACESTATE,
)
from ..protocol.errors import MCPError
from .audit import TRACE_ID

if TYPE_CHECKING:
    from ..server.context import Context
    from ..server.session import Session
    from .middleware import CallNext

#: Trace-context values longer than this are ignored (a valid traceparent is 55 chars).
MAX_TRACE_HEADER = 512

_PROPAGATOR = TraceContextTextMapPropagator()
_TARGET_ATTRIBUTE = {TOOLS_CALL: "gen_ai.tool.name", PROMPTS_GET: "gen_ai.prompt.name",
                     RESOURCES_READ: "mcp.resource.uri"}
#: The bucket boundaries the MCP semantic conventions advise for both histograms (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
                    120.0, 300.0)


def _histogram(meter: metrics.Meter, name: str, description: str) -> metrics.Histogram:
    try:
        return meter.create_histogram(name, unit="s", description=description,
                                      explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
    except TypeError:  # pragma: no cover - opentelemetry-api before 1.23
        return meter.create_histogram(name, unit="s", description=description)


def trace_carrier(ctx: Context) -> dict[str, str]:
    """The W3C trace context of the request: from ``_meta``, else from its headers."""
    meta = ctx.params.get("_meta")
    source: Mapping[str, Any] = meta if isinstance(meta, dict) and TRACEPARENT in meta \
        else ctx.headers
    carrier: dict[str, str] = {}
    for name in (TRACEPARENT, TRACESTATE):
        value = source.get(name)
        if isinstance(value, str) and len(value) <= MAX_TRACE_HEADER:
            carrier[name] = value
    return carrier


class OpenTelemetry:
    """A middleware opening one span per request; see the module docstring."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None,
                 record_principal: bool = False,
                 meter_provider: metrics.MeterProvider | None = None) -> None:
        self.tracer = trace.get_tracer("tornado_mcp", tracer_provider=tracer_provider)
        self.record_principal = record_principal
        meter = metrics.get_meter("tornado_mcp", meter_provider=meter_provider)
        self.operation_duration = _histogram(meter, "mcp.server.operation.duration",
                                             "Duration of MCP requests on the server")
        self.session_duration = _histogram(meter, "mcp.server.session.duration",
                                           "Duration of MCP sessions on the server")

    def session_ended(self, session: Session) -> None:
        """A legacy session ended (the engine calls this): record its duration."""
        self.session_duration.record(max(0.0, time.time() - session.created_at),
                                     {"mcp.protocol.version": session.protocol_version})

    async def __call__(self, ctx: Context, call_next: CallNext) -> dict[str, Any]:
        method = ctx.method
        attributes: dict[str, Any] = {"mcp.method.name": method}
        target_param = NAME_BEARING.get(method)
        target = ctx.params.get(target_param) if target_param else None
        name = method
        if isinstance(target, str):
            name = f"{method} {target}"
            attributes[_TARGET_ATTRIBUTE[method]] = target
        if ctx.protocol_version is not None:
            attributes["mcp.protocol.version"] = ctx.protocol_version
        if ctx.session is not None:
            attributes["mcp.session.id"] = ctx.session.id
        if ctx.request_id is not None:
            attributes["jsonrpc.request.id"] = str(ctx.request_id)
        if self.record_principal and ctx.principal.subject is not None:
            attributes["enduser.id"] = ctx.principal.subject
        if ctx.remote_ip:
            attributes["client.address"] = ctx.remote_ip
        parent = _PROPAGATOR.extract(trace_carrier(ctx))
        measured = {k: v for k, v in attributes.items()
                    if k in ("mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name",
                             "mcp.protocol.version")}
        started = time.perf_counter()
        with self.tracer.start_as_current_span(name, context=parent, kind=trace.SpanKind.SERVER,
                                               attributes=attributes,
                                               record_exception=False,
                                               set_status_on_exception=False) as span:
            trace_id = span.get_span_context().trace_id
            if trace_id:
                TRACE_ID.set(f"{trace_id:032x}")  # for the call's audit record
            try:
                result = await call_next()
                if result.get("isError") is True:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(trace.StatusCode.ERROR)
                    measured["error.type"] = "tool_error"
            except MCPError as exc:
                span.set_attribute("error.type", str(exc.code))
                span.set_attribute("rpc.jsonrpc.error_code", exc.code)
                span.set_status(trace.StatusCode.ERROR, exc.message)
                measured["error.type"] = str(exc.code)
                raise
            except Exception as exc:
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(trace.StatusCode.ERROR)
                measured["error.type"] = type(exc).__qualname__
                raise
            finally:
                self.operation_duration.record(time.perf_counter() - started, measured)
            return result
