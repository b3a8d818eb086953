"""A host application that mounts the MCP endpoint the documented way, with the
instrumentation real Tornado applications run, for ``tests/hosting/test_host_app.py``.

    python tests/hosting/host_app.py AGENT [--early] [--port 0]

``AGENT`` is one of :data:`AGENTS`.  ``--early`` sets the agent up before ``tornado_mcp``
is imported (as Sentry advises for its integration); otherwise after.  The application
has a handler of its own (``/hello``), the endpoint at ``/mcp`` (``transport.routes()``),
and ``/observed``, which answers as JSON what the agent saw of every request so far,
and every log record at ERROR or above.  Once listening it prints
``MCP endpoint: http://127.0.0.1:PORT/mcp``.  Nothing leaves the machine: Sentry's
transport and OpenTelemetry's exporter keep what they are given in memory.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado import httputil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

AGENTS = ("otel", "sentry", "prometheus", "log_function", "transform", "hooks", "two_apps",
          "compress")
#: The endpoint's body limit here, so a test can cross it with little data.
LIMIT = 16 * 1024

#: What the agent saw; answered by /observed.
SEEN: dict[str, Any] = {"errors": []}


class _Errors(logging.Handler):
    """Every record at ERROR or above, of any logger."""

    def emit(self, record: logging.LogRecord) -> None:
        SEEN["errors"].append(f"{record.name}: {record.getMessage()}")


# -- the agents ---------------------------------------------------------------------------------
def setup_otel() -> None:
    from opentelemetry import trace
    from opentelemetry.instrumentation.tornado import TornadoInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    TornadoInstrumentor().instrument(tracer_provider=provider)

    def observe() -> Any:
        spans = []
        for span in exporter.get_finished_spans():
            attrs = dict(span.attributes or {})
            spans.append({"name": span.name, "route": attrs.get("http.route"),
                          "status": attrs.get("http.status_code",
                                              attrs.get("http.response.status_code")),
                          "target": attrs.get("http.target", attrs.get("url.path"))})
        return spans

    SEEN["observe"] = observe


def setup_sentry() -> None:
    import sentry_sdk
    from sentry_sdk.integrations.tornado import TornadoIntegration
    from sentry_sdk.transport import Transport

    envelopes: list[Any] = []

    class Keep(Transport):
        def capture_envelope(self, envelope: Any) -> None:
            envelopes.append(envelope)

    sentry_sdk.init(dsn="http://public@127.0.0.1:9/1", transport=Keep,
                    integrations=[TornadoIntegration()], traces_sample_rate=1.0,
                    default_integrations=True, auto_enabling_integrations=False)

    def observe() -> Any:
        transactions, events = [], []
        for envelope in envelopes:
            for item in envelope.items:
                payload = item.payload.json
                if payload is None:
                    continue
                request = payload.get("request") or {}
                row = {"name": payload.get("transaction"), "url": request.get("url"),
                       "method": request.get("method"),
                       "status": ((payload.get("contexts") or {}).get("response") or {})
                       .get("status_code")}
                if item.type == "transaction":
                    transactions.append(row)
                elif item.type == "event":
                    entry = payload.get("logentry") or {}
                    row["message"] = entry.get("formatted") or entry.get("message") \
                        or payload.get("message")
                    events.append(row)
        return {"transactions": transactions, "events": events}

    SEEN["observe"] = observe


def setup_prometheus(app: tornado.web.Application) -> None:
    from prometheus_client import CollectorRegistry
    from prometheus_tornado_instrumentator import Instrumentator

    registry = CollectorRegistry()
    Instrumentator(should_group_status_codes=False, registry=registry).instrument(app)

    def observe() -> Any:
        counts = {}
        for metric in registry.collect():
            for sample in metric.samples:
                if sample.name == "http_requests_total":
                    key = f"{sample.labels['handler']} {sample.labels['status']}"
                    counts[key] = counts.get(key, 0) + int(sample.value)
        return counts

    SEEN["observe"] = observe


# -- the application ----------------------------------------------------------------------------
def build_server() -> Any:
    from tornado_mcp import Context, Server

    server = Server("host-app-test", version="1.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def echo_sync(text: str) -> str:
        """Echo the text back, from a plain def."""
        return text

    @server.tool()
    async def fails() -> str:
        """Raise an unexpected error."""
        raise RuntimeError("the tool broke")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log before answering (the answer streams)."""
        ctx.info("working")
        return "done"

    return server


class Hello(tornado.web.RequestHandler):
    def get(self) -> None:
        self.write("hello from the host app")


class Observed(tornado.web.RequestHandler):
    def get(self) -> None:
        observe = SEEN.get("observe")
        self.write(json.dumps({"seen": observe() if observe else None,
                               "log": SEEN.get("log", []), "hooks": SEEN.get("hooks", []),
                               "errors": SEEN["errors"]}, default=str))


class Transformed(tornado.web.OutputTransform):
    """An application's output transform: marks every response it sees."""

    def transform_first_chunk(self, status_code: int, headers: httputil.HTTPHeaders,
                              chunk: bytes, finishing: bool) -> tuple[int, httputil.HTTPHeaders,
                                                                      bytes]:
        headers["X-Transformed"] = "1"
        SEEN.setdefault("log", []).append(f"transform {status_code}")
        return status_code, headers, chunk


def log_to(name: str) -> Any:
    def log_function(handler: tornado.web.RequestHandler) -> None:
        SEEN.setdefault("log", []).append(
            f"{name} {handler.get_status()} {handler._request_summary()}")
    return log_function


def hooked_handler() -> type:
    from tornado_mcp import MCPHandler

    class Hooked(MCPHandler):
        """A subclass overriding Tornado's hooks, recording their order."""

        def set_default_headers(self) -> None:
            self.set_header("X-Frame-Options", "DENY")

        def prepare(self) -> Any:
            SEEN.setdefault("hooks", []).append(f"prepare {self.request.method}")
            return super().prepare()

        def get_current_user(self) -> Any:
            SEEN.setdefault("hooks", []).append("get_current_user")
            return "alice"

        def get_principal(self) -> Any:  # the application's login decides who calls
            from tornado_mcp import Principal
            return Principal.of(self.current_user)

        def on_finish(self) -> None:
            SEEN.setdefault("hooks", []).append(f"on_finish {self.get_status()}")
            super().on_finish()

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            SEEN.setdefault("hooks", []).append(f"write_error {status_code}")
            super().write_error(status_code, **kwargs)

    return Hooked


class ByHeader(httputil.HTTPServerConnectionDelegate):
    """Two applications behind one server, chosen by the ``X-App`` header."""

    def __init__(self, a: tornado.web.Application, b: tornado.web.Application) -> None:
        self.a, self.b = a, b

    def start_request(self, server_conn: object,
                      request_conn: httputil.HTTPConnection) -> httputil.HTTPMessageDelegate:
        return _Choose(self, server_conn, request_conn)


class _Choose(httputil.HTTPMessageDelegate):
    def __init__(self, apps: ByHeader, server_conn: object,
                 request_conn: httputil.HTTPConnection) -> None:
        self.apps, self.server_conn, self.request_conn = apps, server_conn, request_conn
        self.inner: httputil.HTTPMessageDelegate | None = None

    def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders) -> Any:
        app = self.apps.b if headers.get("X-App") == "b" else self.apps.a
        self.inner = app.start_request(self.server_conn, self.request_conn)
        return self.inner.headers_received(start_line, headers)

    def data_received(self, chunk: bytes) -> Any:
        assert self.inner is not None
        return self.inner.data_received(chunk)

    def finish(self) -> None:
        assert self.inner is not None
        self.inner.finish()

    def on_connection_close(self) -> None:
        if self.inner is not None:
            self.inner.on_connection_close()


async def main(agent: str, early: bool, port: int) -> None:
    logging.basicConfig(level=logging.INFO)
    logging.getLogger().addHandler(_Errors(level=logging.ERROR))
    if early and agent == "sentry":
        setup_sentry()
    if agent == "otel":
        setup_otel()
    from tornado_mcp import Transport  # the library, after an agent that asks to be first

    if agent == "sentry" and not early:
        setup_sentry()
    transport = Transport(build_server(), max_request_bytes=LIMIT)
    settings: dict[str, Any] = {}
    handler = hooked_handler() if agent == "hooks" else None
    rules = transport.routes("/mcp", handler) if handler else transport.routes("/mcp")
    routes = [(r"/hello", Hello), (r"/observed", Observed), *rules]
    if agent == "log_function":
        settings["log_function"] = log_to("app")
    if agent == "compress":
        settings["compress_response"] = True
    app = tornado.web.Application(routes, **settings)
    if agent == "transform":
        app.add_transform(Transformed)
    if agent == "prometheus":
        setup_prometheus(app)
    delegate: Any = app
    if agent == "two_apps":  # one routes() list, two applications, one server
        a = tornado.web.Application(routes, log_function=log_to("a"))
        b = tornado.web.Application(routes, log_function=log_to("b"))
        delegate = ByHeader(a, b)
    http = tornado.httpserver.HTTPServer(delegate, decompress_request=True)
    sockets = tornado.netutil.bind_sockets(port, address="127.0.0.1")
    http.add_sockets(sockets)
    print(f"MCP endpoint: http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    http.stop()
    await transport.close()


def gzipped(data: bytes) -> bytes:  # used by the tests to inflate a body past the limit
    return gzip.compress(data)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("agent", choices=AGENTS)
    parser.add_argument("--early", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    asyncio.run(main(args.agent, args.early, args.port))
