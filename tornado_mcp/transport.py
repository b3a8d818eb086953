"""MCP's Streamable HTTP transport on Tornado, both protocol eras on one endpoint.

    server = Server("demo")
    transport = Transport(server, max_sessions=1000)
    app = tornado.web.Application([*transport.routes("/mcp"), (r"/", MainHandler)])

A :class:`Transport` owns everything clients can make the server keep (sessions, GET
streams, listen streams) and the :class:`~tornado_mcp.options.TransportOptions` that bound
them; :class:`MCPHandler` serves each HTTP request on it.  Each POST is routed to the
legacy era (``initialize`` and ``Mcp-Session-Id`` sessions, 2025-03-26 to 2025-11-25) or the
modern one (2026-07-28, stateless, ``_meta`` on every request) by its headers and body.

Everything runs on the application's IOLoop.  The notify methods of :class:`Server` and
:class:`Session` may be called from other threads; they hop onto the loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import functools
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from http.client import responses as HTTP_REASONS
from typing import Any, TypeVar

import tornado.web
from tornado.ioloop import IOLoop, PeriodicCallback
from tornado.iostream import IOStream, StreamClosedError

from . import jsonio
from .context import Context
from .errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_BAD_REQUEST_CODES,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    MCPError,
)
from .hub import LIST_CHANGED, LISTEN_METHODS, ListenStream, NotificationHub, change_key
from .introspection import REFUSAL_KINDS, SessionInfo, Snapshot, StreamInfo, Totals
from .options import (
    LEGACY_VERSIONS,
    MAX_INITIALIZE_PARAMS_VALUES,
    MAX_REQUEST_NOTIFICATIONS,
    MAX_RESOURCE_SUBSCRIPTION_URIS,
    MODERN_VERSIONS,
    TransportOptions,
)
from .schemas import (
    ENVELOPE,
    INITIALIZE_PARAMS,
    META_SUBSCRIPTION_ID,
    META_VERSION,
    SUBSCRIPTION_FILTER,
    load,
)
from .server import Server
from .session import Session, SessionStore
from .sse import SSE_HEADERS, SSEChannel, frame

log = logging.getLogger("tornado_mcp.transport")

T_ = TypeVar("T_")

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
NAME_BEARING = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
DEFAULT_LEGACY_HEADER = "2025-03-26"


class Transport:
    """Serves one :class:`Server` over Streamable HTTP; see the module docstring.

    Keyword arguments are :class:`~tornado_mcp.options.TransportOptions` (or pass
    ``options=``).  Mount it with :meth:`routes` or :meth:`mount`, stop it with
    :meth:`close`, and read what it holds with :meth:`snapshot`.
    """

    def __init__(self, server: Server, options: TransportOptions | None = None,
                 **option_values: Any) -> None:
        if options is not None and option_values:
            raise TypeError("pass either options= or option keywords, not both")
        self.server = server
        self.options = options if options is not None else TransportOptions(**option_values)
        self.hub = NotificationHub()
        self.sessions = SessionStore(lambda: self.options.max_sessions,
                                     lambda: self.options.session_idle_timeout,
                                     self._session_removed)
        self.refusals: Counter[str] = Counter({k: 0 for k in REFUSAL_KINDS})
        self.requests_total = 0
        self.started_at = time.time()
        self.closing = False
        self._loop: IOLoop | None = None
        self._loop_thread: int | None = None
        self._reaper: PeriodicCallback | None = None
        self._handlers: set[MCPHandler] = set()
        self._rebinding_cache: dict[tuple[str | None, str | None], str | None] = {}
        versions = self.options.protocol_versions  # not live: fixed for the transport's life
        self._served = (any(v in versions for v in LEGACY_VERSIONS),
                        any(v in versions for v in MODERN_VERSIONS))
        self._modern_versions = [v for v in MODERN_VERSIONS if v in versions]
        self._lingering: set[asyncio.Future[None]] = set()
        server.add_sink(self)

    # -- mounting ---------------------------------------------------------------------------
    def routes(self, path: str = "/mcp") -> list[tuple[str, type[MCPHandler], dict[str, Any]]]:
        """URL rules for ``tornado.web.Application`` serving MCP at ``path``."""
        return [(path, MCPHandler, {"transport": self})]

    def mount(self, app: tornado.web.Application, path: str = "/mcp",
              host_pattern: str = r".*") -> None:
        """Add the MCP endpoint to an existing application."""
        app.add_handlers(host_pattern, self.routes(path))

    # -- loop affinity ----------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self._loop is not None:
            return
        self._loop = IOLoop.current()
        self._loop_thread = threading.get_ident()
        if not self.options.stateless:
            self._reaper = PeriodicCallback(self._reap, 1000 * 5)
            self._reaper.start()

    def _reap(self) -> None:
        if self.options.session_idle_timeout is not None:
            self.sessions.reap()

    def _on_loop(self, fn: Callable[[], Any]) -> bool:
        """Run ``fn`` on the IOLoop: now if we are on it, else soon. False if never started."""
        if self._loop is None:
            return False
        if threading.get_ident() == self._loop_thread:
            fn()
        else:
            self._loop.add_callback(fn)
        return True

    # -- notifications ----------------------------------------------------------------------
    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        """Deliver a server-wide notification (the :class:`Server` calls this)."""
        self._on_loop(lambda: self._publish_now(method, params))

    def _publish_now(self, method: str, params: dict[str, Any] | None) -> int:
        delivered = self.hub.publish(method, params)
        if method in LIST_CHANGED:
            data = frame({"jsonrpc": "2.0", "method": method,
                          **({"params": params} if params else {})})
            key = change_key(method, params)
            for session in self.sessions:
                channel = session.get_channel
                if channel is not None and channel.send(data, key):
                    delivered += 1
        return delivered

    def _session_notify(self, session: Session, method: str,
                        params: dict[str, Any] | None, fan_out: bool) -> bool:
        if threading.get_ident() != self._loop_thread:
            def later() -> None:
                self._session_notify(session, method, params, fan_out)
            return self._on_loop(later)
        if fan_out and method in LISTEN_METHODS:  # listen streams everywhere, once
            self.server.publish(method, params)
        channel = session.get_channel
        if channel is None:
            return False
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return channel.send(frame(message), change_key(method, params))

    def _session_removed(self, session: Session) -> None:
        session.notifier = None
        if session.get_channel is not None:
            session.get_channel.close()
            session.get_channel = None
        for ctx in list(session.in_flight.values()):
            ctx.cancel()
        for fut in session.pending.values():
            if not fut.done():
                fut.set_exception(MCPError(INTERNAL_ERROR, "Session closed while waiting for "
                                                           "the client's response"))
        session.pending.clear()

    # -- DNS rebinding protection -------------------------------------------------------------
    def host_origin_verdict(self, host_header: str | None, origin: str | None) -> str | None:
        """The refusal message for this Host/Origin pair, or ``None`` when it is allowed.

        The DNS-rebinding check of the MCP endpoint, for other handlers mounted beside it
        (the dashboard uses it) to apply the same rule.

        Verdicts are cached per pair (the allowed hosts and origins are fixed for the
        transport's life); the cache is bounded and simply starts over when full.
        """
        if len(host_header or "") + len(origin or "") > MAX_CACHED_HEADER:
            return _rebinding_verdict(host_header, origin, self.options)
        key = (host_header, origin)
        cache = self._rebinding_cache
        if key in cache:
            return cache[key]
        if len(cache) >= 1024:
            cache.clear()
        verdict = cache[key] = _rebinding_verdict(host_header, origin, self.options)
        return verdict

    # -- administration ---------------------------------------------------------------------
    def end_session(self, session_id: str) -> bool:
        """End a legacy session now (its id then gets 404). Call on the IOLoop."""
        session = self.sessions.get(session_id)
        return session is not None and self.sessions.remove(session)

    async def close_stream(self, stream_id: str) -> bool:
        """Close one listen stream gracefully: it receives its final result first."""
        stream = self.hub.get(stream_id)
        if stream is None:
            return False
        self.hub.remove(stream)
        stream.channel.close(stream.final_result())
        try:
            await asyncio.wait_for(asyncio.shield(stream.channel.done), 5.0)
        except TimeoutError:
            stream.channel.abort()  # the peer is not reading: drop it
        return True

    async def close(self, timeout: float = 5.0) -> None:
        """Shut down gracefully: every acknowledged listen stream gets its final result,
        every session ends (its GET stream closed, its requests cancelled), no task is left.
        """
        self.closing = True
        if self._reaper is not None:
            self._reaper.stop()
            self._reaper = None
        channels: list[SSEChannel] = []
        for stream in self.hub:
            self.hub.remove(stream)
            stream.channel.close(stream.final_result())
            channels.append(stream.channel)
        for session in self.sessions:
            if session.get_channel is not None:
                channels.append(session.get_channel)
            self.sessions.remove(session)
        for handler in list(self._handlers):
            handler.cancel_request()
        if channels:
            await asyncio.wait([asyncio.ensure_future(c.done) for c in channels],
                               timeout=timeout)
            for channel in channels:
                channel.abort()  # a peer that did not take its last bytes is dropped
        for task in list(self._lingering):  # refusals still draining a peer's body
            task.cancel()
        if self._lingering:
            await asyncio.wait(list(self._lingering), timeout=timeout)
        self.server.remove_sink(self)

    def snapshot(self, sessions: bool = True, streams: bool = True,
                 stream_uris: bool = False) -> Snapshot:
        """A consistent, read-only picture of what the transport holds right now."""
        now_wall, now_mono = time.time(), time.monotonic()
        session_rows = []
        s_bytes = s_values = in_flight = get_streams = 0
        for s in self.sessions:
            s_bytes += s.retained_bytes
            s_values += s.retained_values
            in_flight += len(s.in_flight)
            has_get = s.get_channel is not None and not s.get_channel.closed
            get_streams += has_get
            if sessions:
                session_rows.append(SessionInfo(
                    id=s.id, client_name=s.client_name, client_version=s.client_version,
                    protocol_version=s.protocol_version, created_at=s.created_at,
                    last_active_at=now_wall - (now_mono - s.last_active),
                    in_flight=len(s.in_flight), retained_bytes=s.retained_bytes,
                    retained_values=s.retained_values, has_get_stream=has_get))
        stream_rows = []
        u_count = u_bytes = 0
        for st in self.hub:
            u_count += len(st.uris)
            u_bytes += st.uri_bytes
            if streams:
                stream_rows.append(StreamInfo(
                    id=st.id, subscription_id=st.subscription_id, honored=st.honored(),
                    uri_count=len(st.uris), uri_bytes=st.uri_bytes,
                    queue_depth=st.channel.queue_depth, opened_at=st.opened_at,
                    acknowledged=st.acknowledged,
                    uris=tuple(sorted(st.uris)) if stream_uris else ()))
        totals = Totals(sessions=len(self.sessions), get_streams=get_streams,
                        listen_streams=len(self.hub), retained_bytes=s_bytes + u_bytes,
                        retained_values=s_values, subscription_uris=u_count,
                        subscription_uri_bytes=u_bytes, in_flight=in_flight)
        return Snapshot(taken_at=now_wall, started_at=self.started_at, totals=totals,
                        limits=self.options.as_dict(), refusals=dict(self.refusals),
                        requests_total=self.requests_total, sessions=tuple(session_rows),
                        streams=tuple(stream_rows))


class _Reply(Exception):
    """Internal: stop handling and answer with this status and JSON-RPC error."""

    def __init__(self, status: int, code: int, message: str, request_id: Any = None,
                 data: Any = None, refusal: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.request_id, self.data, self.refusal = request_id, data, refusal

    def body(self) -> bytes:
        return jsonio.dumps(MCPHandler._error_body(self.request_id, self.code, self.message,
                                                   self.data))


#: Header values longer than this are parsed each time instead of being cached, so the
#: caches cannot be made to hold large client-chosen strings.
MAX_CACHED_HEADER = 256


def _cached_when_short(parse: Callable[[str], T_]) -> Callable[[str], T_]:
    """``parse``, memoised for header values up to MAX_CACHED_HEADER characters."""
    cached = functools.lru_cache(maxsize=256)(parse)

    def lookup(header: str) -> T_:
        return cached(header) if len(header) <= MAX_CACHED_HEADER else parse(header)
    return lookup


@_cached_when_short
def _media_type(header: str) -> str:
    return header.split(";", 1)[0].strip().lower()


@_cached_when_short
def _offered(header: str) -> frozenset[str]:
    return frozenset(part.split(";", 1)[0].strip().lower() for part in header.split(","))


def _rebinding_verdict(host_header: str | None, origin: str | None,
                       opts: TransportOptions) -> str | None:
    host = (host_header or "").strip().lower()
    if host:
        bare = host[: host.index("]") + 1] if host.startswith("[") and "]" in host \
            else host.rsplit(":", 1)[0]
        if not (bare in LOOPBACK_HOSTS or host in opts.allowed_hosts
                or bare in opts.allowed_hosts):
            return "Forbidden: Invalid Host header"
    if origin is None:
        return None
    o = origin.strip().lower()
    if o in opts.allowed_origins:
        return None
    scheme, sep, authority = o.partition("://")
    if not sep or not authority or "/" in authority or scheme not in ("http", "https"):
        return "Forbidden: Invalid Origin header"
    default = ":443" if scheme == "https" else ":80"
    if authority.endswith(default):
        authority = authority[: -len(default)]
    if host.endswith((":80", ":443")):
        host = host.rsplit(":", 1)[0]
    return None if authority == host else "Forbidden: Invalid Origin header"


def _accepts(header: str | None, *wanted: str) -> bool:
    if not header:
        return False
    offered = _offered(header)
    if "*/*" in offered:
        return True
    return all(w in offered or f"{w.split('/')[0]}/*" in offered for w in wanted)


def _decode_header_value(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise _Reply(400, HEADER_MISMATCH, "Header mismatch: invalid base64 header value") \
                from None
    return value


def _header_matches(header: str, value: Any) -> bool:
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(header) == float(value)
        except (ValueError, OverflowError):
            return False
    return bool(header == value)


@tornado.web.stream_request_body
class MCPHandler(tornado.web.RequestHandler):
    """The MCP endpoint. One instance per HTTP request; state lives on the transport."""

    SUPPORTED_METHODS = ("GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD")

    transport: Transport

    def initialize(self, transport: Transport) -> None:
        self.transport = transport
        self._chunks: list[bytes] = []
        self._size = 0
        self._channel: SSEChannel | None = None
        self._ctx: Context | None = None
        self._on_close: Callable[[], None] | None = None
        self._notifications = 0
        self._json_only = False

    # -- Tornado hooks ----------------------------------------------------------------------
    def check_xsrf_cookie(self) -> None:
        """MCP clients are not browsers with cookies; Origin checks guard this endpoint."""

    def set_default_headers(self) -> None:
        self.clear_header("Server")  # less to write on every response, and nothing to leak

    def prepare(self) -> None:
        """Checks that need no body; a refusal is answered before the body is read.

        Synchronous: no coroutine to create and await per request.
        """
        t = self.transport
        if t._loop is None:
            t._ensure_started()
        t._handlers.add(self)
        try:
            if t.options.dns_rebinding_protection:
                self._check_rebinding()
            if self.request.method == "POST":
                limit = t.options.max_request_bytes
                self.request.connection.set_max_body_size(limit + 256 * 1024)  # type: ignore[union-attr]
                declared = self.request.headers.get("Content-Length")
                if declared is not None and declared.isdigit() and int(declared) > limit:
                    raise self._too_large(limit)
        except _Reply as reply:
            if reply.status == 413:
                self._refuse_now(reply)
            else:
                self._write_reply(reply)
                self.finish()

    def data_received(self, chunk: bytes) -> None:
        if self._finished:
            return
        self._size += len(chunk)
        limit = self.transport.options.max_request_bytes
        if self._size > limit:
            self._chunks = []
            self._refuse_now(self._too_large(limit))
            return
        self._chunks.append(chunk)

    def _too_large(self, limit: int) -> _Reply:
        return _Reply(413, INVALID_REQUEST,
                      f"Payload too large: request body exceeds {limit} bytes",
                      refusal="max_request_bytes")

    def _refuse_now(self, reply: _Reply) -> None:
        """Answer before the body is read, and never read it.

        The stream is taken over from Tornado (which would otherwise close it at once,
        making the peer's kernel answer its unsent body with a reset that can swallow our
        answer): the refusal is written, the sending side shut, and whatever the peer
        still sends is discarded for a bounded time and amount before the connection is
        closed (a "lingering close").
        """
        self._count_refusal(reply)
        body = reply.body()
        head = (f"HTTP/1.1 {reply.status} {HTTP_REASONS.get(reply.status, 'Error')}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n").encode("latin-1")
        self.transport._handlers.discard(self)
        self.log_refusal(reply.status)
        stream = self.detach()
        task = asyncio.ensure_future(_linger_close(stream, head + body))
        self.transport._lingering.add(task)  # bounded: LINGER_SECONDS at most
        task.add_done_callback(self.transport._lingering.discard)

    def log_refusal(self, status: int) -> None:
        log.info("%d %s %s (%s): refused before reading the body", status,
                 self.request.method, self.request.uri, self.request.remote_ip)

    def on_connection_close(self) -> None:
        if self._on_close is not None:
            self._on_close()
        body = getattr(self.request, "_body_future", None)
        if body is not None and not body.done():
            # The peer left mid-upload: Tornado will never finish this request, so
            # on_finish will not run. Let go of the handler and what it had read.
            self._chunks = []
            self.transport._handlers.discard(self)
        super().on_connection_close()

    def on_finish(self) -> None:
        self.transport._handlers.discard(self)

    def _drop_stream(self) -> None:
        if self._channel is not None:
            self._channel.abort()

    def cancel_request(self) -> None:
        if self._ctx is not None:
            self._ctx.cancel()

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, StreamClosedError):
            return
        super().log_exception(typ, value, tb)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error is a JSON-RPC error body; never a traceback."""
        self.set_header("Content-Type", "application/json")
        if status_code == 405:
            body = self._error_body(None, INVALID_REQUEST, "Method not allowed")
        elif status_code >= 500:
            body = self._error_body(None, INTERNAL_ERROR, "Internal server error")
        else:
            body = self._error_body(None, INVALID_REQUEST, self._reason or "Bad request")
        self.finish(jsonio.dumps(body))

    # -- responses --------------------------------------------------------------------------
    @staticmethod
    def _error_body(request_id: Any, code: int, message: str, data: Any = None
                    ) -> dict[str, Any]:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        return {"jsonrpc": "2.0", "id": request_id, "error": err}

    def _count_refusal(self, reply: _Reply) -> None:
        if reply.refusal is not None:
            self.transport.refusals[reply.refusal] += 1

    def _write_reply(self, reply: _Reply) -> None:
        self._count_refusal(reply)
        self.clear()
        self.set_status(reply.status)
        self.set_header("Content-Type", "application/json")
        self.write(reply.body())

    def _send_json(self, status: int, message: Any,
                   headers: dict[str, str] | None = None) -> None:
        if status != 200:
            self.set_status(status)
        self.set_header("Content-Type", "application/json")
        if headers:
            for name, value in headers.items():
                self.set_header(name, value)
        self.finish(jsonio.dumps(message))

    def _accepted(self) -> None:
        self.set_status(202)
        self.finish()

    # -- checks -----------------------------------------------------------------------------
    def _check_rebinding(self) -> None:
        headers = self.request.headers
        verdict = self.transport.host_origin_verdict(headers.get("Host"), headers.get("Origin"))
        if verdict is not None:
            raise _Reply(403, INVALID_REQUEST, verdict)

    def _single_header(self, name: str) -> str | None:
        values = self.request.headers.get_list(name)
        if len(values) > 1:
            raise _Reply(400, HEADER_MISMATCH, f"Header mismatch: duplicated {name} header")
        return values[0].strip() if values else None

    def _served(self) -> tuple[bool, bool]:
        return self.transport._served

    def _check_legacy_version(self) -> str:
        header = self.request.headers.get("MCP-Protocol-Version")
        version = DEFAULT_LEGACY_HEADER if header is None else header.strip()
        versions = self.transport.options.protocol_versions
        if version not in versions and not (version == DEFAULT_LEGACY_HEADER and header is None):
            raise _Reply(400, INVALID_REQUEST,
                         f"Bad Request: Unsupported protocol version: {version}. "
                         f"Supported versions: {', '.join(versions)}")
        return version

    def _session_from_header(self) -> Session:
        session_id = self.request.headers.get("Mcp-Session-Id")
        if not session_id:
            raise _Reply(400, INVALID_REQUEST, "Bad Request: Missing session ID")
        session = self.transport.sessions.get(session_id.strip())
        if session is None:
            raise _Reply(404, INVALID_REQUEST, "Session not found")
        return session

    # -- HTTP methods -----------------------------------------------------------------------
    async def _guarded(self, work: Callable[[], Awaitable[None]]) -> None:
        if self._finished:
            return
        if self.transport.closing:
            self._write_reply(_Reply(503, INTERNAL_ERROR, "Service unavailable: shutting down"))
            self.finish()
            return
        try:
            await work()
        except _Reply as reply:
            if not self._finished:
                self._write_reply(reply)
                self.finish()
        except (StreamClosedError, asyncio.CancelledError):
            # The peer went away, or the loop is shutting down under us.
            if self._channel is not None:
                self._channel.abort()
        except Exception:
            log.exception("unexpected error serving %s", self.request.method)
            if not self._finished and not self._headers_written:
                self._write_reply(_Reply(500, INTERNAL_ERROR, "Internal server error"))
                self.finish()

    def post(self) -> Awaitable[None]:
        return self._guarded(self._post)

    async def get(self) -> None:
        await self._guarded(self._get)

    async def delete(self) -> None:
        await self._guarded(self._delete)

    async def put(self) -> None:
        await self._guarded(self._not_allowed)

    async def patch(self) -> None:
        await self._guarded(self._not_allowed)

    async def options(self) -> None:
        await self._guarded(self._not_allowed)

    async def head(self) -> None:
        await self._guarded(self._not_allowed)

    async def _not_allowed(self) -> None:
        raise _Reply(405, INVALID_REQUEST, "Method not allowed")

    def _header_era_is_modern_only(self) -> bool:
        """GET and DELETE: is this request addressed to the 2026 era (which has neither)?"""
        legacy, _modern = self._served()
        if not legacy:
            return True
        header = (self.request.headers.get("MCP-Protocol-Version") or "").strip()
        if not header or header in LEGACY_VERSIONS:
            return False
        if header in MODERN_VERSIONS:
            return "Mcp-Session-Id" not in self.request.headers
        return True  # unknown version: the modern path, which answers 405

    async def _post(self) -> None:
        t = self.transport
        opts = t.options
        t.requests_total += 1
        legacy_served, modern_served = self._served()
        header = self._single_header("MCP-Protocol-Version")
        has_session = "Mcp-Session-Id" in self.request.headers
        era = "legacy"
        if not legacy_served:
            era = "modern"
        elif header and header not in LEGACY_VERSIONS and (
                header not in MODERN_VERSIONS or (modern_served and not has_session)):
            era = "sniff" if header in MODERN_VERSIONS else "modern"
        json_only = era == "legacy" and opts.json_response
        accept = self.request.headers.get("Accept")
        if json_only:
            if not _accepts(accept, "application/json"):
                raise _Reply(406, INVALID_REQUEST,
                             "Not Acceptable: Accept header must include application/json")
        elif not _accepts(accept, "application/json", "text/event-stream") and not (
                opts.json_response and era == "sniff" and _accepts(accept, "application/json")):
            raise _Reply(406, INVALID_REQUEST, "Not Acceptable: Accept header must include "
                                               "application/json and text/event-stream")
        if _media_type(self.request.headers.get("Content-Type") or "") != "application/json":
            raise _Reply(415, INVALID_REQUEST,
                         "Unsupported Media Type: Content-Type must be application/json")
        body = b"".join(self._chunks)
        self._chunks = []
        try:
            message = jsonio.loads(body)
        except jsonio.JSONDecodeError as exc:
            refusal = "json_nesting" if "nesting" in str(exc) or "depth" in str(exc) else None
            raise _Reply(400, PARSE_ERROR, "Parse error: Invalid JSON", refusal=refusal) from None
        if era == "sniff":
            era = "legacy" if _is_legacy_initialize(message) else "modern"
        if era == "modern":
            await self._modern(message, header, body)
        else:
            await self._legacy(message, header, body)

    # -- legacy era -------------------------------------------------------------------------
    async def _legacy(self, message: Any, header: str | None, body: bytes) -> None:
        t = self.transport
        opts = t.options
        if isinstance(message, list):
            await self._legacy_batch(message)
            return
        if not isinstance(message, dict):
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: JSON-RPC body must be a single request object")
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and META_VERSION in meta:
            if header in MODERN_VERSIONS and "Mcp-Session-Id" not in self.request.headers:
                raise _Reply(400, INVALID_REQUEST,
                             "Bad Request: this endpoint does not serve protocol "
                             f"{header}; open a session with `initialize`", request_id)
            if header in MODERN_VERSIONS:
                raise _Reply(400, INVALID_REQUEST,
                             "Invalid Request: the session already negotiated the legacy "
                             "lifecycle via `initialize`", request_id)
            raise _Reply(400, HEADER_MISMATCH,
                         "Header mismatch: MCP-Protocol-Version header is missing or legacy "
                         "while the body carries the modern _meta envelope", request_id)
        if method == "initialize":
            await self._handle_initialize(message, body)
            return
        if method == "server/discover" and "Mcp-Session-Id" not in self.request.headers:
            await self._run_request(message, None, json_only=True)
            return
        session: Session | None = None
        if not opts.stateless:
            session = self._session_from_header()
        self._check_legacy_version()
        kind = _classify(message)
        if kind == "notification":
            self._client_notification(method, params, session)
            self._accepted()
        elif kind == "response":
            if session is not None:
                fut = session.pending.pop(str(request_id), None)
                if fut is not None and not fut.done():
                    fut.set_result(message)
            self._accepted()
        elif kind == "request":
            if session is not None and _valid_id(request_id) and \
                    request_id in session.in_flight:
                raise _Reply(409, INVALID_REQUEST,
                             "Conflict: Request id is already in flight for this session",
                             request_id)
            await self._run_request(message, session, json_only=opts.json_response)
        else:
            raise _Reply(400, INVALID_REQUEST, "Invalid Request", _safe_id(request_id))

    async def _legacy_batch(self, batch: list[Any]) -> None:
        """2025-03-26 allowed batches; later versions and sessionless calls do not."""
        session = None if self.transport.options.stateless else self._session_from_header()
        version = self._check_legacy_version()
        negotiated = session.protocol_version if session else version
        if not batch or negotiated != "2025-03-26" or not all(isinstance(m, dict) for m in batch):
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: JSON-RPC body must be a single request object")
        if any(m.get("method") == "initialize" for m in batch):
            raise _Reply(400, INVALID_REQUEST, "Invalid Request: initialize cannot be batched")
        self._json_only = True  # one JSON array answers the batch: no SSE for its items
        responses = []
        for m in batch:
            kind = _classify(m)
            if kind == "notification":
                self._client_notification(m.get("method"), m.get("params"), session)
            elif kind == "response" and session is not None:
                fut = session.pending.pop(str(m.get("id")), None)
                if fut is not None and not fut.done():
                    fut.set_result(m)
            elif kind == "request":
                rid = m.get("id")
                if session is not None and _valid_id(rid) and rid in session.in_flight:
                    responses.append(self._error_body(
                        rid, INVALID_REQUEST,
                        "Conflict: Request id is already in flight for this session"))
                    continue
                reply = await self._dispatch(m, session, None, modern=False)
                if reply is not None:  # a cancelled request is not answered
                    responses.append(reply)
            else:
                responses.append(self._error_body(None, INVALID_REQUEST, "Invalid Request"))
        if not responses:
            self._accepted()
        else:
            self._send_json(200, responses)

    def _client_notification(self, method: Any, params: Any, session: Session | None) -> None:
        if method == "notifications/cancelled" and session is not None and \
                isinstance(params, dict):
            request_id = params.get("requestId")
            ctx = session.in_flight.get(request_id) if _valid_id(request_id) else None
            if ctx is not None:
                ctx.cancel()

    async def _handle_initialize(self, message: dict[str, Any], body: bytes) -> None:
        t = self.transport
        opts = t.options
        request_id = message.get("id")
        params = message.get("params")
        if not opts.stateless:
            bound = opts.max_initialize_request_bytes
            if bound is not None and len(body) > bound:
                raise _Reply(413, INVALID_REQUEST,
                             f"Payload too large: initialize request body exceeds {bound} bytes",
                             _safe_id(request_id), refusal="max_initialize_request_bytes")
            if jsonio.count_values_exceeds(params, MAX_INITIALIZE_PARAMS_VALUES):
                raise _Reply(413, INVALID_REQUEST,
                             "Payload too large: initialize request params exceed "
                             f"{MAX_INITIALIZE_PARAMS_VALUES} JSON values",
                             _safe_id(request_id), refusal="initialize_params_values")
            existing = self.request.headers.get("Mcp-Session-Id")
            if existing:
                if t.sessions.get(existing.strip()) is not None:
                    raise _Reply(400, INVALID_REQUEST,
                                 "Invalid Request: Server already initialized",
                                 _safe_id(request_id))
                raise _Reply(404, INVALID_REQUEST, "Session not found")
        if "id" not in message:
            self._accepted()  # an initialize notification: nothing to answer, nothing kept
            return
        if message.get("jsonrpc") != "2.0" or not _valid_id(request_id):
            self._send_json(200, self._error_body(_safe_id(request_id), INVALID_REQUEST,
                                                  "Invalid Request"))
            return
        try:
            p = load(INITIALIZE_PARAMS, params, "initialize")
        except MCPError as exc:
            self._send_json(200, self._error_body(request_id, exc.code, exc.message))
            return
        version = t.server.negotiate_version(p["protocolVersion"], opts.protocol_versions)
        result = {"jsonrpc": "2.0", "id": request_id,
                  "result": t.server.initialize_result(version)}
        if opts.stateless:
            self._send_json(200, result)
            return
        assert isinstance(params, dict)  # the schema above guarantees it
        session = Session(t.sessions.new_id(), version, params.get("clientInfo"),
                          params.get("capabilities"), jsonio.count_values(params))
        if not t.sessions.admit(session):
            raise _Reply(503, INTERNAL_ERROR,
                         "Service unavailable: maximum concurrent sessions "
                         f"({opts.max_sessions}) reached", refusal="max_sessions")
        session.notifier = t._session_notify
        self._send_json(200, result, {"Mcp-Session-Id": session.id})

    async def _get(self) -> None:
        t = self.transport
        opts = t.options
        if self._header_era_is_modern_only() or opts.stateless:
            raise _Reply(405, INVALID_REQUEST, "Method not allowed")
        if not _accepts(self.request.headers.get("Accept"), "text/event-stream"):
            raise _Reply(406, INVALID_REQUEST,
                         "Not Acceptable: Accept header must include text/event-stream")
        session = self._session_from_header()
        self._check_legacy_version()
        if session.get_channel is not None and not session.get_channel.closed:
            raise _Reply(409, INVALID_REQUEST,
                         "Conflict: Only one SSE stream is allowed per session")
        channel = self._open_channel(lambda: opts.sse_keepalive_interval)
        session.get_channel = channel
        self._on_close = channel.abort
        channel.start()
        try:
            await channel.done
        finally:
            if session.get_channel is channel:
                session.get_channel = None
            session.touch()

    async def _delete(self) -> None:
        t = self.transport
        if self._header_era_is_modern_only() or t.options.stateless:
            raise _Reply(405, INVALID_REQUEST, "Method not allowed")
        session = self._session_from_header()
        self._check_legacy_version()
        t.sessions.remove(session)
        self._send_json(200, {"success": True})

    def _open_channel(self, keepalive: Callable[[], float | None]) -> SSEChannel:
        """This response as an SSE stream, bounded by the live options."""
        opts = self.transport.options
        return SSEChannel(self, lambda: opts.max_stream_queue, keepalive, self._overflowed,
                          lambda: opts.stream_stall_timeout)

    def _overflowed(self, kind: str) -> None:
        self.transport.refusals[kind] += 1

    # -- requests (both eras) -----------------------------------------------------------------
    async def _run_request(self, message: dict[str, Any], session: Session | None,
                           json_only: bool, envelope: dict[str, Any] | None = None) -> None:
        self._json_only = json_only
        if self._on_close is None:
            # Legacy era: a disconnect is not a cancellation (clients send
            # notifications/cancelled), but the stream and its queue are freed at once.
            self._on_close = self._drop_stream
        response = await self._dispatch(message, session, envelope, modern=envelope is not None)
        if self._finished:
            return
        if response is None and envelope is not None and self.transport.closing \
                and self._channel is None:
            response = self._error_body(message.get("id"), INTERNAL_ERROR,
                                        "Service unavailable: shutting down")
            self._send_json(503, response)
            return
        if response is None:  # cancelled: nothing more is written for it
            if self._channel is not None:
                self._channel.close()
                await self._channel.done
            elif json_only or envelope is not None:
                self._accepted()
            else:
                for name, value in SSE_HEADERS:
                    self.set_header(name, value)
                self.finish()
            return
        status = 200
        if envelope is not None and "error" in response:
            code = response["error"]["code"]
            status = 404 if code == METHOD_NOT_FOUND else \
                400 if code in MODERN_BAD_REQUEST_CODES else 200
        if self._channel is not None:
            self._channel.close(frame(response))
            await self._channel.done
        elif json_only or envelope is not None:
            self._send_json(status, response)
        else:
            for name, value in SSE_HEADERS:
                self.set_header(name, value)
            self.finish(frame(response))

    async def _dispatch(self, message: dict[str, Any], session: Session | None,
                        envelope: dict[str, Any] | None, modern: bool) -> dict[str, Any] | None:
        t = self.transport
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str) \
                or not _valid_id(request_id) or (params is not None
                                                 and not isinstance(params, dict)):
            return self._error_body(_safe_id(request_id), INVALID_REQUEST, "Invalid Request")
        ctx = Context(t.server, method, params or {}, request_id, self, session=session,
                      envelope=envelope, listen_served=t.options.serve_subscriptions_listen,
                      served_versions=t.options.protocol_versions)
        self._ctx = ctx
        if session is not None:
            session.in_flight[request_id] = ctx  # in flight: never idle until it is done
        # The handler runs in this request's own task (no extra task per request); a
        # cancellation (notifications/cancelled, or a 2026-07-28 client closing its stream)
        # cancels this task while the handler runs, and is absorbed here.
        task = asyncio.current_task()
        ctx.task = task
        try:
            result = await t.server.handle(method, ctx.params, ctx)
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except asyncio.CancelledError:
            if not ctx.cancelled or task is None:
                raise
            task.uncancel()
            return None
        except MCPError as exc:
            return {"jsonrpc": "2.0", "id": request_id, "error": exc.to_error()}
        except Exception:
            log.exception("handler for %s raised", method)
            return self._error_body(request_id, INTERNAL_ERROR, "Internal error")
        finally:
            ctx.task = None
            if session is not None:
                if session.in_flight.get(request_id) is ctx:
                    del session.in_flight[request_id]
                session.touch()

    # RequestChannel: what a request's Context uses to reach the client ------------------------
    def emit(self, message: dict[str, Any]) -> bool:
        if self._json_only or self._finished:
            return False
        if self._ctx is not None and self._ctx.modern:
            self._notifications += 1
            if self._notifications > MAX_REQUEST_NOTIFICATIONS:
                return False
        if self._channel is None:
            opts = self.transport.options
            self._channel = self._open_channel(lambda: opts.sse_keepalive_interval)
        return self._channel.send(frame(message))

    async def send_request(self, method: str, params: dict[str, Any] | None,
                      timeout: float | None) -> dict[str, Any]:
        ctx = self._ctx
        session = ctx.session if ctx is not None else None
        if session is None:
            raise MCPError(INVALID_REQUEST,
                           "Stateless mode does not support server-to-client requests")
        if self._json_only:
            raise MCPError(INVALID_REQUEST,
                           "JSON response mode does not support server-to-client requests")
        request_id = f"s-{session.id[:8]}-{len(session.pending)}-{time.monotonic_ns()}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        session.pending[request_id] = fut
        sent = self.emit(message) if not self._finished else False
        if not sent and session.get_channel is not None:
            sent = session.get_channel.send(frame(message))
        if not sent:
            session.pending.pop(request_id, None)
            raise MCPError(INTERNAL_ERROR, f"No active stream for {method} request")
        wait = timeout if timeout is not None else \
            self.transport.options.server_to_client_request_timeout
        try:
            reply = await asyncio.wait_for(fut, wait)
        except TimeoutError:
            self.emit({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": request_id,
                                  "reason": f"Timed out after {wait:g} seconds"}})
            raise MCPError(-32001, f"Timed out waiting for the client's {method} response") \
                from None
        finally:
            session.pending.pop(request_id, None)
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            raise MCPError(INTERNAL_ERROR,
                           f"Client returned an error for {method} request "
                           f"(code: {err.get('code')}): {err.get('message')}")
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def notify_resources_updated(self, uri: str) -> None:
        ctx = self._ctx
        t = self.transport
        params = {"uri": uri}
        session = ctx.session if ctx is not None else None
        if session is not None and session.get_channel is not None:
            t._session_notify(session, "notifications/resources/updated", params, True)
            return
        t.server.publish("notifications/resources/updated", params)
        if session is not None:
            self.emit({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                       "params": params})

    # -- modern era (2026-07-28) -------------------------------------------------------------
    async def _modern(self, message: Any, header: str | None, body: bytes) -> None:
        t = self.transport
        opts = t.options
        if not isinstance(message, dict):
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: JSON-RPC body must be a single request object")
        request_id = _safe_id(message.get("id"))
        method = message.get("method")
        modern_versions = t._modern_versions
        if header is None:
            raise _Reply(400, HEADER_MISMATCH,
                         "Header mismatch: MCP-Protocol-Version header is required",
                         request_id, {"supported": modern_versions})
        if header not in modern_versions:
            raise _Reply(400, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                         request_id, {"supported": modern_versions, "requested": header})
        kind = _classify(message)
        if kind == "notification":
            self._accepted()
            return
        if kind != "request":
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: JSON-RPC body must be a single request object",
                         request_id)
        params = message.get("params")
        if params is None:
            params = message["params"] = {}
        if not isinstance(params, dict):
            raise _Reply(400, INVALID_PARAMS, "Invalid params: params must be an object",
                         request_id)
        meta = params.get("_meta")
        if isinstance(meta, dict) and META_VERSION in meta and meta[META_VERSION] != header:
            raise _Reply(400, HEADER_MISMATCH,
                         "Header mismatch: MCP-Protocol-Version header does not match "
                         "`_meta` protocolVersion", request_id)
        self._check_routing_headers(method, params, request_id)
        try:
            envelope = load(ENVELOPE, meta, "missing or invalid `_meta` envelope")
        except MCPError as exc:
            raise _Reply(400, INVALID_PARAMS, exc.message, request_id) from None
        if method == "subscriptions/listen" and opts.serve_subscriptions_listen:
            await self._listen(message, params, envelope)
            return
        # Unknown, removed and capability-gated methods are -32601 from the server's own
        # check, which the 2026-07-28 status ladder answers with 404.
        self._on_close = self.cancel_request
        await self._run_request(message, None, json_only=False, envelope=envelope)

    def _check_routing_headers(self, method: Any, params: dict[str, Any],
                               request_id: Any) -> None:
        hdr_method = self._single_header("Mcp-Method")
        if not hdr_method:
            raise _Reply(400, HEADER_MISMATCH,
                         "Header mismatch: Mcp-Method header is required on the modern path",
                         request_id)
        if hdr_method != method:
            raise _Reply(400, HEADER_MISMATCH,
                         "Header mismatch: Mcp-Method header does not match the body's method",
                         request_id)
        name_key = NAME_BEARING.get(str(method))
        if name_key is None:
            return
        body_name = params.get(name_key)
        hdr_name = self._single_header("Mcp-Name")
        if hdr_name is None:
            raise _Reply(400, HEADER_MISMATCH,
                         f"Header mismatch: Mcp-Name header is required for `{method}`",
                         request_id)
        if _decode_header_value(hdr_name) != body_name:
            raise _Reply(400, HEADER_MISMATCH,
                         f"Header mismatch: Mcp-Name header does not match params.{name_key}",
                         request_id)
        if method != "tools/call":
            return
        tool = self.transport.server.get_tool(str(body_name))
        if tool is None or not tool.header_params:
            return
        arguments = params.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        for header_name, path in tool.header_params.items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            raw = self._single_header(f"Mcp-Param-{header_name}")
            if value is None:
                if raw is not None:
                    raise _Reply(400, HEADER_MISMATCH,
                                 f"Header mismatch: Mcp-Param-{header_name} header has no "
                                 "matching argument", request_id)
                continue
            if raw is None:
                raise _Reply(400, HEADER_MISMATCH,
                             f"Header mismatch: Mcp-Param-{header_name} header is required",
                             request_id)
            if not _header_matches(_decode_header_value(raw), value):
                raise _Reply(400, HEADER_MISMATCH,
                             f"Header mismatch: Mcp-Param-{header_name} header does not match "
                             "the argument", request_id)

    async def _listen(self, message: dict[str, Any], params: dict[str, Any],
                      envelope: dict[str, Any]) -> None:
        t = self.transport
        opts = t.options
        listen_id = message.get("id")
        if not _valid_id(listen_id):
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: subscriptions/listen requires an id")
        if isinstance(listen_id, str) and len(listen_id) > MAX_LISTEN_ID_LENGTH:
            raise _Reply(400, INVALID_REQUEST,
                         "Invalid Request: subscriptions/listen id exceeds "
                         f"{MAX_LISTEN_ID_LENGTH} characters")
        notifications = params.get("notifications")
        if not isinstance(notifications, dict):
            raise _Reply(400, INVALID_PARAMS, "Invalid params: subscriptions/listen requires "
                                              "a `notifications` filter object", listen_id)
        if "resourceSubscriptions" in notifications:
            subs = notifications["resourceSubscriptions"]
            if not isinstance(subs, list) or not all(isinstance(u, str) for u in subs):
                raise _Reply(400, INVALID_PARAMS,
                             "Invalid params: subscriptions/listen `resourceSubscriptions` "
                             "must be an array of strings", listen_id)
        try:
            filt = load(SUBSCRIPTION_FILTER, notifications, "subscriptions/listen `notifications`")
        except MCPError as exc:
            raise _Reply(400, INVALID_PARAMS, exc.message, listen_id) from None
        uris = list(dict.fromkeys(filt.get("resourceSubscriptions") or ()))
        if len(uris) > MAX_RESOURCE_SUBSCRIPTION_URIS:
            raise _Reply(400, INVALID_PARAMS,
                         "Invalid params: subscriptions/listen `resourceSubscriptions` exceeds "
                         f"{MAX_RESOURCE_SUBSCRIPTION_URIS} URIs", listen_id,
                         refusal="resource_subscription_uris")
        uri_bytes = sum(len(u.encode("utf-8")) for u in uris)
        bound = opts.max_resource_subscription_bytes
        if bound is not None and uri_bytes > bound:
            raise _Reply(400, INVALID_PARAMS,
                         "Invalid params: subscriptions/listen `resourceSubscriptions` exceeds "
                         f"{bound} bytes", listen_id, refusal="max_resource_subscription_bytes")
        cap = opts.max_listen_subscriptions
        if cap is not None and len(t.hub) >= cap:
            raise _Reply(503, INTERNAL_ERROR,
                         "Service unavailable: maximum concurrent subscriptions/listen streams "
                         f"({cap}) reached", listen_id, refusal="max_listen_subscriptions")
        server = t.server
        flags = frozenset(f for f, cap_name in (("toolsListChanged", "tools"),
                                                ("promptsListChanged", "prompts"),
                                                ("resourcesListChanged", "resources"))
                          if filt.get(f) is True and server.has_capability(cap_name,
                                                                           "listChanged"))
        honored_uris = uris if uris and server.has_capability("resources", "subscribe") else []
        channel = self._open_channel(lambda: opts.listen_keepalive_interval)
        stream = ListenStream(listen_id, channel, flags, frozenset(honored_uris),
                              sum(len(u.encode("utf-8")) for u in honored_uris))
        honored: dict[str, Any] = stream.honored()
        if honored_uris:
            honored["resourceSubscriptions"] = honored_uris
        channel.send(frame({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                            "params": {"_meta": {META_SUBSCRIPTION_ID: listen_id},
                                       "notifications": honored}}))
        if channel.closed:
            return
        stream.acknowledged = True
        t.hub.add(stream)  # only now can a notification reach it: the ack is already queued

        def disconnected() -> None:
            t.hub.remove(stream)
            channel.abort()

        self._on_close = disconnected
        try:
            await channel.done
        finally:
            t.hub.remove(stream)


#: A listen stream keeps its request id for its whole life, so the id is bounded too.
MAX_LISTEN_ID_LENGTH = 256
LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024


async def _linger_close(stream: IOStream, response: bytes) -> None:
    """Write ``response``, shut our sending side, discard what the peer still sends (at
    most ``LINGER_BYTES`` for ``LINGER_SECONDS``), then close."""
    try:
        await stream.write(response)
        with contextlib.suppress(OSError):
            stream.socket.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + LINGER_SECONDS
        discarded = 0
        while discarded < LINGER_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            chunk = await asyncio.wait_for(stream.read_bytes(65536, partial=True), left)
            discarded += len(chunk)
    except (StreamClosedError, TimeoutError, OSError):
        pass
    finally:
        stream.close()


def _classify(message: dict[str, Any]) -> str:
    has_method = isinstance(message.get("method"), str)
    if has_method and "id" in message:
        return "request"
    if has_method:
        return "notification"
    if "id" in message and ("result" in message or "error" in message):
        return "response"
    return "invalid"


def _valid_id(value: Any) -> bool:
    return (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)))


def _safe_id(value: Any) -> Any:
    return value if _valid_id(value) else None


def _is_legacy_initialize(message: Any) -> bool:
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return False
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return not (isinstance(meta, dict) and META_VERSION in meta)
