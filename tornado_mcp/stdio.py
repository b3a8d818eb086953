"""The same :class:`~tornado_mcp.Server` over stdio, for desktop clients that launch it.

    from tornado_mcp import Server
    from tornado_mcp.stdio import run

    server = Server("notes")
    ...
    if __name__ == "__main__":
        run(server)

or, with no code: ``python -m tornado_mcp stdio package.module:server`` (the attribute is a
``Server``, or a function of no arguments that returns one; ``path/to/file.py:attr``
works too).

The MCP stdio transport: newline-delimited JSON-RPC messages, one per line, requests and
notifications on standard input, responses and the server's own messages on standard
output, nothing else on standard output.  Logging goes to standard error, and so does
anything the server's code ``print``s (standard output is the protocol's alone).

* Legacy era: ``initialize`` opens the one session of the process, with everything the
  HTTP legacy era offers a handler: progress and log notifications, sampling,
  elicitation, roots and ping requests to the client, ``notifications/cancelled``,
  list-changed and resource-updated notifications, ``logging/setLevel``.
* 2026-07-28: a request whose ``params._meta`` carries the protocol version is served
  statelessly, as over HTTP (no ``initialize``; ``server/discover``; input-required
  results instead of server-to-client requests).
* Bounds: a line longer than ``max_line_bytes`` is never held (it is skipped up to its
  newline and answered with an error); at most ``max_in_flight`` requests run at once.

No Tornado web machinery is involved: this module needs only asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import itertools
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from .protocol import (
    ALL_VERSIONS,
    CANCELLED,
    INITIALIZE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LEGACY_VERSIONS,
    META_VERSION,
    MODERN_VERSIONS,
    PARSE_ERROR,
    RESOURCES_UPDATED,
    ROOTS_LIST_CHANGED,
    UNSUPPORTED_PROTOCOL_VERSION,
    jsonio,
)
from .protocol.errors import MCPError
from .protocol.jsonrpc import Kind, classify, error_body, safe_id, valid_id
from .protocol.shapes import ENVELOPE, INITIALIZE_PARAMS, load
from .server.context import Context
from .server.outbound import client_result, request_message
from .server.server import Server
from .server.session import Session

log = logging.getLogger("tornado_mcp.stdio")

#: The longest line (one JSON-RPC message) read from standard input, by default.
MAX_LINE_BYTES = 4 * 1024 * 1024
#: Requests handled at once, by default; more are answered with an error.
MAX_IN_FLIGHT = 100
#: How long a server-to-client request waits for the client's answer, by default.
REQUEST_TIMEOUT_S = 600.0
_READ_CHUNK = 64 * 1024


class _Channel:
    """A request's way back to the client: the one output stream."""

    def __init__(self, conn: StdioConnection, ctx_session: Session | None) -> None:
        self.conn = conn
        self.session = ctx_session

    def emit(self, message: dict[str, Any]) -> bool:
        return self.conn.send(message)

    async def send_request(self, method: str, params: dict[str, Any] | None,
                           timeout: float | None) -> dict[str, Any]:
        return await self.conn.request(method, params, timeout)

    def notify_resources_updated(self, uri: str) -> None:
        self.conn.send({"jsonrpc": "2.0", "method": RESOURCES_UPDATED, "params": {"uri": uri}})
        self.conn.server.publish(RESOURCES_UPDATED, {"uri": uri})

    def close_stream(self) -> bool:
        return False  # stdio has no stream to close and resume

    @property
    def requests_unavailable(self) -> str | None:
        """Server-to-client requests always have the way back over stdio."""
        return None


class StdioConnection:
    """One client on a pair of byte streams: reads lines, dispatches, writes lines.

    ``write`` takes one encoded line (newline included).  Feed input with :meth:`feed`
    (or let :func:`serve` do it) and call :meth:`close` at end of input.
    """

    def __init__(self, server: Server, write: Callable[[bytes], None], *,
                 max_line_bytes: int = MAX_LINE_BYTES, max_in_flight: int = MAX_IN_FLIGHT,
                 request_timeout: float = REQUEST_TIMEOUT_S) -> None:
        self.server = server
        self._write = write
        self.max_line_bytes = max_line_bytes
        self.max_in_flight = max_in_flight
        self.request_timeout = request_timeout
        self.session: Session | None = None
        self.in_flight: dict[Any, Context] = {}
        #: Ids of the requests admitted and not yet answered, counted from when they are
        #: read (several read at once are admitted before any handler starts).
        self._admitted: set[Any] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._buffer = bytearray()
        self._discarding = False
        self._loop = asyncio.get_running_loop()
        server.add_sink(self)

    # -- output -----------------------------------------------------------------------------
    def send(self, message: dict[str, Any]) -> bool:
        self._write(jsonio.dumps(message) + b"\n")
        return True

    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        """Server-wide notifications (list changes, resource updates), from any thread."""
        def deliver() -> None:
            if self.session is not None:
                message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
                if params:
                    message["params"] = params
                self.send(message)
        self._loop.call_soon_threadsafe(deliver)

    def _session_notify(self, session: Session, method: str, params: dict[str, Any] | None,
                        fan_out: bool) -> bool:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._loop.call_soon_threadsafe(self.send, message)
        return True

    async def request(self, method: str, params: dict[str, Any] | None,
                      timeout: float | None) -> dict[str, Any]:
        """Send a request to the client and wait for its result (legacy era)."""
        request_id = f"s-{next(self._ids)}"
        fut: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        self._pending[request_id] = fut
        self.send(request_message(request_id, method, params))
        wait = timeout if timeout is not None else self.request_timeout
        return await client_result(fut, request_id, method, wait, self.send,
                                   lambda: self._pending.pop(request_id, None))

    # -- input ------------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Take bytes read from the input; complete lines are dispatched at once."""
        start = 0
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                rest = data[start:]
                if self._discarding:
                    return
                if len(self._buffer) + len(rest) > self.max_line_bytes:
                    self._too_long()
                    return
                self._buffer += rest
                return
            part = data[start:end]
            start = end + 1
            if self._discarding:
                self._discarding = False
                continue
            if len(self._buffer) + len(part) > self.max_line_bytes:
                self._buffer.clear()
                self.send(error_body(None, INVALID_REQUEST, self._too_long_message()))
                continue
            line = bytes(self._buffer + part) if self._buffer else part
            self._buffer.clear()
            if line.strip():
                self._line(line)

    def _too_long_message(self) -> str:
        return f"Invalid Request: message exceeds {self.max_line_bytes} bytes"

    def _too_long(self) -> None:
        """The line being read is over the bound: drop it, skip the rest of it."""
        self._buffer.clear()
        self._discarding = True
        self.send(error_body(None, INVALID_REQUEST, self._too_long_message()))

    def _line(self, line: bytes) -> None:
        try:
            message = jsonio.loads(line)
        except (jsonio.JSONDecodeError, jsonio.JSONNestingError):
            self.send(error_body(None, PARSE_ERROR, "Parse error: Invalid JSON"))
            return
        if not isinstance(message, dict):
            self.send(error_body(None, INVALID_REQUEST,
                             "Invalid Request: a line must hold one JSON-RPC message"))
            return
        kind = classify(message)
        if kind is Kind.REQUEST:
            self._request(message)
        elif kind is Kind.NOTIFICATION:
            self._notification(message["method"], message.get("params"))
        elif kind is Kind.RESPONSE:
            fut = self._pending.pop(str(message.get("id")), None)
            if fut is not None and not fut.done():
                fut.set_result(message)
        else:
            self.send(error_body(None, INVALID_REQUEST, "Invalid Request"))

    def _notification(self, method: str, params: Any) -> None:
        if method == CANCELLED and isinstance(params, dict):
            ctx = self.in_flight.get(params.get("requestId"))
            if ctx is not None:
                ctx.cancel()
        elif method == ROOTS_LIST_CHANGED and self.session is not None:
            self.server.roots_list_changed(self.session)

    def _request(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        params = message.get("params")
        if message.get("jsonrpc") != "2.0" or not valid_id(request_id) or \
                (params is not None and not isinstance(params, dict)):
            self.send(error_body(safe_id(request_id), INVALID_REQUEST, "Invalid Request"))
            return
        if request_id in self._admitted:
            self.send(error_body(request_id, INVALID_REQUEST,
                             "Invalid Request: request id is already in flight"))
            return
        if len(self._admitted) >= self.max_in_flight:
            self.send(error_body(request_id, INVALID_REQUEST, "Invalid Request: more than "
                             f"{self.max_in_flight} requests in flight"))
            return
        self._admitted.add(request_id)
        self._spawn(self._run(message["method"], params or {}, request_id),
                    lambda: self._admitted.discard(request_id))

    def _spawn(self, work: Awaitable[Any], done: Callable[[], None] | None = None) -> None:
        async def run() -> None:
            await work
        task = self._loop.create_task(run())
        if done is not None:
            task.add_done_callback(lambda _: done())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, method: str, params: dict[str, Any], request_id: Any) -> None:
        meta = params.get("_meta")
        envelope = None
        if isinstance(meta, dict) and META_VERSION in meta:
            if meta[META_VERSION] not in MODERN_VERSIONS:
                self.send(error_body(request_id, UNSUPPORTED_PROTOCOL_VERSION,
                                 "Unsupported protocol version"))
                return
            try:
                envelope = load(ENVELOPE, meta, "missing or invalid `_meta` envelope")
            except MCPError as exc:
                self.send(error_body(request_id, INVALID_PARAMS, exc.message))
                return
        elif method == INITIALIZE:
            self._initialize(params, request_id)
            return
        elif self.session is None and method != "ping":
            self.send(error_body(request_id, INVALID_REQUEST,
                             "Invalid Request: send initialize first"))
            return
        session = None if envelope is not None else self.session
        ctx = Context(self.server, method, params, request_id, _Channel(self, session),
                      session=session, envelope=envelope, listen_served=False,
                      served_versions=ALL_VERSIONS)
        task = asyncio.current_task()
        ctx.task = task
        self.in_flight[request_id] = ctx
        try:
            result = await self.server.handle(method, ctx.params, ctx)
            self.send({"jsonrpc": "2.0", "id": request_id, "result": result})
        except asyncio.CancelledError:
            if not ctx.cancelled or task is None:
                raise
            task.uncancel()  # cancelled by the client: not answered
        except MCPError as exc:
            self.send({"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()})
        except Exception:
            log.exception("handler for %s raised", method)
            self.send(error_body(request_id, INTERNAL_ERROR, "Internal error"))
        finally:
            ctx.task = None
            self.in_flight.pop(request_id, None)

    def _initialize(self, params: dict[str, Any], request_id: Any) -> None:
        try:
            p = load(INITIALIZE_PARAMS, params, "initialize")
        except MCPError as exc:
            self.send(error_body(request_id, exc.code, exc.message))
            return
        version = self.server.negotiate_version(p["protocolVersion"], LEGACY_VERSIONS)
        if self.session is not None:
            self.session.notifier = None
        self.session = Session("stdio", version, params.get("clientInfo"),
                               params.get("capabilities"), jsonio.count_values(params))
        self.session.notifier = self._session_notify
        self.send({"jsonrpc": "2.0", "id": request_id,
                   "result": self.server.initialize_result(version)})

    async def close(self) -> None:
        """End of input: cancel what still runs, and stop receiving notifications."""
        self.server.remove_sink(self)
        for ctx in list(self.in_flight.values()):
            ctx.cancel()
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(MCPError(INTERNAL_ERROR, "The client closed its input"))
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5.0)
        if self.session is not None:
            self.session.notifier = None


async def serve(server: Server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                **limits: Any) -> None:
    """Serve ``server`` on ``stdin``/``stdout`` (the process's own by default) until the
    input ends.  ``limits``: ``max_line_bytes``, ``max_in_flight``, ``request_timeout``."""
    loop = asyncio.get_running_loop()
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer

    def write(line: bytes) -> None:
        try:
            sink.write(line)
            sink.flush()
        except (BrokenPipeError, ValueError):
            pass  # the client is gone; end of input follows

    conn = StdioConnection(server, write, **limits)
    fd = source.fileno()
    try:
        while True:
            chunk = await loop.run_in_executor(None, os.read, fd, _READ_CHUNK)
            if not chunk:
                break
            conn.feed(chunk)
    finally:
        await conn.close()


def load_server(target: str) -> Server:
    """The :class:`Server` named by ``module:attribute`` or ``path/to/file.py:attribute``
    (the attribute may also be a function of no arguments returning one)."""
    where, sep, attribute = target.rpartition(":")
    if not sep or not where or not attribute:
        raise ValueError(f"{target!r} is not module:attribute")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(where))[0], where)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    value = getattr(module, attribute)
    if not isinstance(value, Server) and callable(value):
        value = value()
    if not isinstance(value, Server):
        raise TypeError(f"{target} is not a tornado_mcp.Server (got {type(value).__name__})")
    return value


def run(server: Server, *, log_level: str = "WARNING", **limits: Any) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client closes
    stdin.  Logging goes to stderr; so does anything the code prints."""
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(server, sys.stdin.buffer, protocol_out, **limits))
    finally:
        sys.stdout = sys.__stdout__
