"""The fast path: the endpoint served without ``RequestHandler``, on Tornado's public
low-level interfaces.

A ``RequestHandler`` does work on every request that an endpoint answering JSON never
needs: it builds the template namespace, formats the ``Date`` anew, runs the request as a
task started before ``prepare`` and woken again for the body, and finishes through the
general ``finish`` and ``flush`` (output transforms, ETags, cookies).  Where the library
owns the whole application (its command-line servers, the demo, the example servers) it
serves the endpoint with :class:`FastRoute` instead: a :class:`tornado.routing.Router`
whose delegate (a ``tornado.httputil.HTTPMessageDelegate``) serves each request as a
:class:`FastExchange`, answering through ``HTTPConnection.write_headers``, ``write`` and
``finish``.  The request takes the same way through the endpoint as on the ordinary path
(:class:`~tornado_mcp.transport.flow.RequestFlow`: the same checks, bounds, answers and
statuses), with ``prepare``'s checks as the headers arrive and the method in one task
once the body is in.

What it skips, by design: the application's output transforms (``compress_response``),
``set_default_headers``, ``log_function`` and ``prepare``/``on_finish`` hooks, and any
instrumentation that wraps ``RequestHandler`` (it logs its own access line to
``tornado.access``, in Tornado's format).  An application that wants those gets them by
mounting the endpoint the ordinary way, the default; one that wants the speed opts in
with ``transport.routes(path, fast=True)``.  A ``HEAD`` or any method the endpoint does
not serve, and an endpoint that authenticates with a handler's own ``get_principal`` or an
``authenticate=`` hook (both need the ``RequestHandler`` API), take the ordinary rule
listed after the fast one.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from asyncio import Future
from collections.abc import Awaitable, Callable
from http.client import responses
from typing import TYPE_CHECKING, Any

import tornado.routing
from tornado import httputil
from tornado.escape import utf8
from tornado.iostream import StreamClosedError

from ..protocol.identity import Principal
from . import seams
from .flow import RequestFlow
from .gate import default_principal
from .serving import access_line

if TYPE_CHECKING:
    from .core import Transport

#: The HTTP methods the fast path serves; any other takes the ordinary rule.
FAST_METHODS = frozenset({"GET", "POST", "DELETE", "OPTIONS"})


class FastRoute(tornado.routing.Router):
    """Serves ``transport``'s endpoint on the fast path; see the module docstring.  List
    it before the ordinary rule for the same path, which serves what this declines."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def find_handler(self, request: httputil.HTTPServerRequest,
                     **target_params: Any) -> httputil.HTTPMessageDelegate | None:
        if request.method not in FAST_METHODS or target_params.get("path_args") \
                or target_params.get("path_kwargs"):
            return None
        return _Delegate(FastExchange(self.transport, request))


class _Delegate(httputil.HTTPMessageDelegate):
    """The connection's side of a :class:`FastExchange` (its ``finish`` is the body's end,
    not the response's)."""

    __slots__ = ("exchange",)

    def __init__(self, exchange: FastExchange) -> None:
        self.exchange = exchange

    def headers_received(self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
                         headers: httputil.HTTPHeaders) -> Awaitable[None] | None:
        return self.exchange.headers_in()

    def data_received(self, chunk: bytes) -> None:
        self.exchange.receive(chunk)

    def finish(self) -> None:
        self.exchange.body_in()

    def on_connection_close(self) -> None:
        self.exchange.connection_lost()


class FastExchange(RequestFlow):
    """One request on the fast path: the flow of :class:`RequestFlow` over a response
    written straight to the request's ``HTTPConnection``."""

    def __init__(self, transport: Transport, request: httputil.HTTPServerRequest) -> None:
        self.transport = transport
        self.request = request
        self._chunks: list[bytes] = []
        self._status = 200
        self._reason: str | None = None
        self._headers = _default_headers()
        self._buffer: list[bytes] = []
        self._head_sent = False
        self._finished = False
        #: The request's own context: ``begin`` and the method share it, as ``prepare``
        #: and the method share a task on the ordinary path.
        self._context = contextvars.copy_context()
        #: The task serving the request once its body is in (held until it ends).
        self._task: asyncio.Future[None] | None = None
        #: An asynchronous ``begin``'s wait for the body.
        self._body: asyncio.Future[None] | None = None

    # -- the connection's events ----------------------------------------------------------------
    def headers_in(self) -> Awaitable[None] | None:
        seams.on_close(self.request.connection, self.connection_lost)
        begun = self._context.run(self.begin)
        if begun is None:
            return None
        # Asynchronous (authentication): the body is read once it is done, and the method
        # runs in the same task, as on the ordinary path.
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        self._body = loop.create_future()
        self._task = loop.create_task(self._after(begun, ready), context=self._context)
        return ready

    async def _after(self, begun: Awaitable[None], ready: asyncio.Future[None]) -> None:
        try:
            await begun
        finally:
            if not ready.done():
                ready.set_result(None)
        if self.done:
            return
        assert self._body is not None
        try:
            await self._body
        except StreamClosedError:
            return  # the client left mid-body: connection_lost logged it
        await self.serve(self._work())

    def body_in(self) -> None:
        if self._body is not None:
            if not self._body.done():
                self._body.set_result(None)
            return
        if not self.done:
            self._task = asyncio.get_running_loop().create_task(self.serve(self._work()),
                                                                context=self._context)

    def connection_lost(self) -> None:
        if self.done:
            return
        body_in = self._body_in
        self.client_left()
        if not body_in:  # no method will run, and nothing is logged (as Tornado does)
            self.forget()
            if self._body is not None and not self._body.done():
                self._body.set_exception(StreamClosedError())

    def _work(self) -> Callable[[], Awaitable[None]]:
        method = self.request.method
        if method == "POST":
            return self.post_work
        if method == "GET":
            return self.get_work
        if method == "DELETE":
            return self.delete_work
        return self.options_work

    def get_principal(self) -> Principal | Awaitable[Principal | None] | None:
        return default_principal(self, self.transport)  # type: ignore[arg-type,return-value]

    # -- the response (RequestHandler's methods, over HTTPConnection) ---------------------------
    def set_status(self, status_code: int, reason: str | None = None) -> None:
        self._status = status_code
        self._reason = reason

    def get_status(self) -> int:
        return self._status

    def set_header(self, name: str, value: Any) -> None:
        self._headers[name] = value if isinstance(value, str) else str(value)

    def clear_header(self, name: str) -> None:
        if name in self._headers:
            del self._headers[name]

    def clear(self) -> None:
        self._headers = _default_headers()
        self._buffer = []
        self._status = 200
        self._reason = None

    def write(self, chunk: str | bytes | dict[str, Any]) -> None:
        if self._finished:
            raise RuntimeError("Cannot write() after finish()")
        if isinstance(chunk, dict):
            raise TypeError("the fast path writes bytes")
        self._buffer.append(utf8(chunk))

    def flush(self, include_footers: bool = False) -> Future[None]:
        chunk = b"".join(self._buffer) if len(self._buffer) != 1 else self._buffer[0]
        self._buffer = []
        connection = self.request.connection
        assert connection is not None
        if not self._head_sent:
            self._head_sent = True
            start = httputil.ResponseStartLine(
                "", self._status, self._reason or responses.get(self._status, "Unknown"))
            return connection.write_headers(start, self._headers, chunk)
        return connection.write(chunk)

    def finish(self, chunk: str | bytes | dict[str, Any] | None = None) -> Future[None]:
        if self._finished:
            raise RuntimeError("finish() called twice")
        if chunk is not None:
            self.write(chunk)
        if not self._head_sent:
            if not self._body_in:  # the connection closes after this answer
                self._headers["Connection"] = "close"
            if self._status in (204, 304):
                self.clear_header("Content-Type")
                self._buffer = []
            elif "Content-Length" not in self._headers:
                self._headers["Content-Length"] = str(sum(len(part) for part in self._buffer))
        future = self.flush()
        connection = self.request.connection
        assert connection is not None
        seams.on_close(connection, None)
        connection.finish()
        self._finished = True
        self._log()
        self.forget()
        self._task = None
        return future

    def respond(self, content_type: str, body: bytes) -> None:
        self._headers["Content-Type"] = content_type
        self.finish(body)

    @property
    def done(self) -> bool:
        return self._finished

    @property
    def started(self) -> bool:
        return self._head_sent

    def _log(self) -> None:
        """The access line, as Tornado's ``Application.log_request`` writes it, with what
        the endpoint adds (the JSON-RPC id, why a request was refused)."""
        access_line(self._status, self.request, self.access_details)


_date: tuple[int, str] = (0, "")


def _default_headers() -> httputil.HTTPHeaders:
    """What every response starts with, as ``RequestHandler.clear`` sets it (less the
    ``Server`` header, which nobody needs): the ``Date``, formatted once a second."""
    global _date
    now = int(time.time())
    if now != _date[0]:
        _date = (now, httputil.format_timestamp(now))
    headers = httputil.HTTPHeaders()
    headers["Content-Type"] = "text/html; charset=UTF-8"
    headers["Date"] = _date[1]
    return headers
