"""Forwarding a legacy session's request to the process of the cluster that holds it.

A session lives in the process that created it; its id starts with that process's id
(:attr:`tornado_mcp.cluster.Cluster.session_prefix`).  When a request for it reaches
another process (a proxy without sticky routing, or a hash that maps the id elsewhere),
:func:`forward` relays it, headers and body, to the owner's advertised URL and streams the
answer back as it comes (JSON, an SSE response, or a whole GET stream).  The owner never
forwards again: the id names it.  When the owner advertises no URL the client gets 421,
when it cannot be reached 502, and when it stays silent 504: each a JSON-RPC error naming
the process, never a misleading 404.

Two bounds keep a forwarding process from holding more than it should:

- **Flow control.**  The owner's answer is read one chunk (at most :data:`CHUNK` bytes) at
  a time, and the next chunk is read only once the client has taken the previous one, so
  a slow client makes the *owner* wait (where ``max_stream_queue`` and
  ``stream_stall_timeout`` bound its stream) instead of making this process buffer: what
  one forwarded answer holds here is one chunk plus the connection's receive buffer
  (:data:`UPSTREAM_RCVBUF`, which the kernel doubles).  A
  client that takes nothing of a chunk for ``stream_stall_timeout`` seconds is
  disconnected, as a stalled SSE stream is, and counted as that refusal.
- **Owner silence.**  ``forward_idle_timeout`` bounds how long the owner may send nothing
  (no response head, no body bytes) while this process waits for it: 504 when no head
  came, else the client's connection is closed; counted as the ``forward_idle_timeout``
  refusal.  Streams stay open as long as the owner's keepalive comments arrive
  (``sse_keepalive_interval`` must be shorter than the timeout).

The relay is Tornado's own HTTP/1.1 client connection (:class:`~tornado.tcpclient.TCPClient`
and :class:`~tornado.http1connection.HTTP1Connection`), one connection per forwarded
request, closed when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tornado import httputil
from tornado.http1connection import HTTP1Connection, HTTP1ConnectionParameters
from tornado.ioloop import IOLoop
from tornado.iostream import IOStream, StreamClosedError
from tornado.tcpclient import TCPClient

from ..introspection import ProcessInfo
from ..protocol import INTERNAL_ERROR, INVALID_REQUEST, Refusal
from .wire import Reply

if TYPE_CHECKING:
    from .flow import RequestFlow

log = logging.getLogger("tornado_mcp.transport")

#: Marks a forwarded request; a process never forwards a request that carries it.
FORWARDED_HEADER = "X-Tornado-MCP-Forwarded-By"
#: Seconds to wait for the owner to accept the connection (502 past it).
CONNECT_TIMEOUT = 5.0
#: The most bytes of the owner's answer passed on before the client has taken them.
CHUNK = 64 * 1024
#: The receive buffer of the connection to the owner: while the client is slow, this (and
#: the kernel's doubling of it) is what the owner's answer can fill in this process.
UPSTREAM_RCVBUF = 256 * 1024
#: A response with neither a length nor chunks is read whole; past this it is cut off.
MAX_BUFFER = 4 * 1024 * 1024
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                  "expect"})


class Forwarded(Reply):
    """The owner answered the request; nothing more to write."""

    def __init__(self) -> None:
        super().__init__(200, INTERNAL_ERROR, "forwarded")


class Unreachable(Reply):
    """502: nothing accepted the connection at the owner's URL (no listener there, or no
    route to it); the cluster then asks Redis whether the owner lives."""


def misrouted(owner: ProcessInfo, session_id: str) -> Reply:
    """421: the session is alive in another process that this one cannot forward to."""
    return Reply(421, INVALID_REQUEST,
                 f"Misdirected request: session {session_id} is held by process {owner.id} "
                 f"on {owner.host} (pid {owner.pid}); route requests by Mcp-Session-Id to "
                 "the process that created the session (sticky sessions)")


async def forward(h: RequestFlow, owner: ProcessInfo, self_id: str, body: bytes | None) -> None:
    """Relay the request to ``owner`` and stream its answer; raise :class:`Forwarded`
    (or :class:`~tornado.iostream.StreamClosedError` when the answer was cut short)."""
    session_id = h.request.headers.get("Mcp-Session-Id", "")
    if owner.url is None or FORWARDED_HEADER in h.request.headers:
        raise misrouted(owner, session_id)
    relay = _Relay(h, owner, session_id)
    await relay.run(self_id, body)
    raise Forwarded()


class _Relay(httputil.HTTPMessageDelegate):
    """One forwarded request: the upstream connection, and its answer passed on."""

    def __init__(self, h: RequestFlow, owner: ProcessInfo, session_id: str) -> None:
        self.h = h
        self.owner = owner
        self.session_id = session_id
        self.opts = h.transport.options
        self.upstream: IOStream | None = None
        self.started = False  # the owner's response head was passed on
        self.complete = False  # the owner's response ended normally
        self.timed_out = False
        self.client_gone = False
        self._timer: object | None = None

    def _where(self) -> str:
        return f"process {self.owner.id} on {self.owner.host} (pid {self.owner.pid}), " \
               f"which holds session {self.session_id},"

    async def run(self, self_id: str, body: bytes | None) -> None:
        h = self.h
        assert self.owner.url is not None
        url = urlsplit(self.owner.url)
        tls = url.scheme == "https"
        try:
            self.upstream = await TCPClient().connect(
                url.hostname or "127.0.0.1", url.port or (443 if tls else 80),
                ssl_options=ssl.create_default_context() if tls else None,
                max_buffer_size=MAX_BUFFER, timeout=CONNECT_TIMEOUT)
            self.upstream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF,
                                            UPSTREAM_RCVBUF)
        except (OSError, StreamClosedError, TimeoutError, ssl.SSLError) as exc:
            log.warning("could not forward to process %s at %s: %r", self.owner.id,
                        self.owner.url, exc)
            raise Unreachable(502, INTERNAL_ERROR,
                              f"Bad gateway: {self._where()} could not be reached at "
                              f"{self.owner.url}") from None
        h.on_disconnect = self._client_left
        conn = HTTP1Connection(self.upstream, True, HTTP1ConnectionParameters(
            no_keep_alive=True, chunk_size=CHUNK, max_body_size=2**62, decompress=False))
        out = httputil.HTTPHeaders()
        for name, value in h.request.headers.get_all():
            if name.lower() not in _HOP:
                out.add(name, value)
        out[FORWARDED_HEADER] = self_id
        out["Connection"] = "close"
        if body is not None:
            out["Content-Length"] = str(len(body))
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        start = httputil.RequestStartLine(h.request.method or "GET", path, "HTTP/1.1")
        self._arm()
        try:
            conn.write_headers(start, out, body or None)
            conn.finish()
            await conn.read_response(self)
        except (StreamClosedError, OSError, httputil.HTTPInputError):
            pass  # the owner, or we (a timeout, the client left), closed the connection
        finally:
            self._disarm()
            h.on_disconnect = None
            self.upstream.close()
        self._conclude()

    def _conclude(self) -> None:
        """Answer for what happened upstream: finish, cut short, or an error."""
        h = self.h
        if self.timed_out:
            h.transport.count_refusal(Refusal.FORWARD_IDLE_TIMEOUT)
            log.warning("process %s at %s sent nothing for %s s; forward abandoned",
                        self.owner.id, self.owner.url, self.opts.forward_idle_timeout)
        if not self.started:
            if self.client_gone:
                raise StreamClosedError()
            if self.timed_out:
                raise Reply(504, INTERNAL_ERROR,
                            f"Gateway timeout: {self._where()} did not answer within "
                            f"{self.opts.forward_idle_timeout:g} s")
            raise Reply(502, INTERNAL_ERROR,
                        f"Bad gateway: {self._where()} closed the connection without "
                        "answering")
        if h.done:
            return
        if self.complete and not self.client_gone:
            h.finish()
            return
        self._drop_client()  # an answer cut short must not look complete
        raise StreamClosedError()

    # -- the owner's answer (HTTPMessageDelegate) -------------------------------------------
    def headers_received(self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
                         headers: httputil.HTTPHeaders) -> Awaitable[None] | None:
        assert isinstance(start_line, httputil.ResponseStartLine)
        if start_line.code < 200:
            return None  # an interim answer; the real one follows
        self.started = True
        self.h.set_status(start_line.code, start_line.reason or None)
        for name, value in headers.get_all():
            if name.lower() not in _HOP:
                self.h.set_header(name, value)
        # Pass the head on at once: a stream may stay idle for a long time after it.
        return self._deliver()

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        if self.client_gone:
            self._close_upstream()
            return None
        self.h.write(chunk)
        return self._deliver()

    def finish(self) -> None:
        self.complete = True

    def on_connection_close(self) -> None:
        """The owner closed the connection before the answer was complete."""

    # -- flow control and timers ------------------------------------------------------------
    async def _deliver(self) -> None:
        """Flush what was written to the client; the owner is read again only after it."""
        self._disarm()
        flush = self.h.flush()
        stall = self.opts.stream_stall_timeout
        if stall is None:
            await asyncio.wait([flush])
        else:
            await asyncio.wait([flush], timeout=stall)
        if not flush.done():  # the client took nothing for stall seconds
            flush.add_done_callback(lambda f: f.exception())
            self.h.transport.count_refusal(Refusal.STREAM_STALL_TIMEOUT)
            self._drop_client()
            self._close_upstream()
            return
        if flush.exception() is not None:
            self._client_left()
            return
        self._arm()

    def _arm(self) -> None:
        timeout = self.opts.forward_idle_timeout
        if timeout is not None:
            self._timer = IOLoop.current().call_later(timeout, self._idle)

    def _disarm(self) -> None:
        if self._timer is not None:
            IOLoop.current().remove_timeout(self._timer)
            self._timer = None

    def _idle(self) -> None:
        self._timer = None
        self.timed_out = True
        self._close_upstream()

    def _client_left(self) -> None:
        self.client_gone = True
        self._close_upstream()

    def _close_upstream(self) -> None:
        if self.upstream is not None:
            self.upstream.close()

    def _drop_client(self) -> None:
        self.client_gone = True
        conn = self.h.request.connection
        if conn is not None:
            conn.close()  # type: ignore[attr-defined]
