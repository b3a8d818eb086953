"""How the library's own servers (the command line, the demo, the example servers, the test
client) serve an application: what an application that embeds the endpoint may copy.

* :func:`http_server` wraps the application in :class:`Answering` before handing it to
  ``HTTPServer``: a request Tornado itself refuses to parse (a query string with more
  fields than Tornado 6.5's limit, several ``Host`` headers) gets a JSON-RPC 400 on a
  connection kept open, instead of a bare ``400 Bad Request`` and a closed connection that
  loses whatever the client had already sent on it.
* :func:`log_request` is an application's ``log_function`` that writes Tornado's access
  line and adds what the endpoint knows of an MCP request: its JSON-RPC id and why it was
  refused (``200 POST /mcp (127.0.0.1) id=7 0.41ms``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import tornado.httpserver
import tornado.web
from tornado import httputil
from tornado.log import access_log

from ..protocol import INVALID_REQUEST, jsonio
from ..protocol.jsonrpc import error_body
from .router import LOG_TEXT


def http_server(app: tornado.web.Application, **kwargs: Any) -> tornado.httpserver.HTTPServer:
    """``HTTPServer(app, **kwargs)``, with the application :class:`Answering`."""
    return tornado.httpserver.HTTPServer(Answering(app), **kwargs)


def log_request(handler: tornado.web.RequestHandler) -> None:
    """Tornado's access line for ``handler``'s request, with the endpoint's details (an
    ``Application(log_function=...)``)."""
    access_line(handler.get_status(), handler.request,
                getattr(handler, "access_details", None))


def access_line(status: int, request: httputil.HTTPServerRequest,
                details: Callable[[], str] | None = None) -> None:
    """Write the access line of ``request`` answered ``status``, as Tornado's
    ``Application.log_request`` does (at INFO, WARNING for 4xx, ERROR for 5xx), with
    ``details()`` after its summary (computed only when the line is written)."""
    level = logging.INFO if status < 400 else logging.WARNING if status < 500 \
        else logging.ERROR
    if access_log.isEnabledFor(level):
        access_log.log(level, "%d %s %s (%s)%s %.2fms", status, request.method, request.uri,
                       request.remote_ip, details() if details is not None else "",
                       1000.0 * request.request_time())


class Answering(httputil.HTTPServerConnectionDelegate):
    """``app``, answering a request Tornado cannot parse with a JSON-RPC 400 (see the
    module docstring)."""

    def __init__(self, app: tornado.web.Application) -> None:
        self.app = app

    def start_request(self, server_conn: object,
                      request_conn: httputil.HTTPConnection) -> httputil.HTTPMessageDelegate:
        return _Guard(self.app.start_request(server_conn, request_conn), request_conn)

    def on_close(self, server_conn: object) -> None:
        self.app.on_close(server_conn)


class _Guard(httputil.HTTPMessageDelegate):
    """One request: the application's, unless its headers cannot be parsed."""

    __slots__ = ("connection", "inner", "refusal", "start_line")

    def __init__(self, inner: httputil.HTTPMessageDelegate,
                 connection: httputil.HTTPConnection) -> None:
        self.inner = inner
        self.connection = connection
        self.refusal: str | None = None
        self.start_line: httputil.RequestStartLine | None = None

    def headers_received(self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
                         headers: httputil.HTTPHeaders) -> Any:
        try:
            return self.inner.headers_received(start_line, headers)
        except httputil.HTTPInputError as exc:
            # Answered once the body is read, so the connection stays usable.
            assert isinstance(start_line, httputil.RequestStartLine)
            self.start_line = start_line
            self.refusal = f"Bad Request: {exc}"[:LOG_TEXT]
            return None

    def data_received(self, chunk: bytes) -> Any:
        if self.refusal is None:
            return self.inner.data_received(chunk)
        return None

    def finish(self) -> None:
        if self.refusal is None:
            self.inner.finish()
            return
        body = jsonio.dumps(error_body(None, INVALID_REQUEST, self.refusal))
        headers = httputil.HTTPHeaders({"Content-Type": "application/json",
                                        "Content-Length": str(len(body))})
        self.connection.write_headers(httputil.ResponseStartLine("HTTP/1.1", 400,
                                                                 "Bad Request"),
                                      headers, body)
        self.connection.finish()
        start = self.start_line
        access_log.warning("400 %s %s [%s]", start.method if start else "-",
                           (start.path if start else "-")[:LOG_TEXT], self.refusal)

    def on_connection_close(self) -> None:
        if self.refusal is None:
            self.inner.on_connection_close()
