"""Where the endpoint touches Tornado beyond the interfaces it implements: the one module
that may, and the list of what it uses.

The endpoint is an ordinary ``RequestHandler`` (:mod:`.handler`) or an
``httputil.HTTPMessageDelegate`` (:mod:`.fast`), and answers through
``httputil.HTTPConnection``'s ``write_headers``, ``write`` and ``finish``.  A few things
it needs have no home in those interfaces; each is a documented, public member of
Tornado's HTTP/1.1 server connection (``tornado.http1connection.HTTP1Connection``), used
only here, and checked on every supported Tornado (6.4, 6.5, 6.6) by
``tests/http/test_tornado_seams.py``:

=============================================  =================================================
``HTTP1Connection.params.max_body_size``       the HTTP server's own body limit, so the smaller
(and ``stream.max_buffer_size``, its default)  of it and ``max_request_bytes`` is the one kept,
                                               answered with the endpoint's own 413
``HTTP1Connection.detach()``                   a refusal answered before the body is read closes
                                               its connection after a bounded linger, not with
                                               the reset an abrupt close causes (see
                                               :mod:`.linger`); called during
                                               ``headers_received``, as documented
``HTTP1Connection.set_close_callback()``       the fast path learns that its client went away
                                               while it answers (``RequestHandler`` does the
                                               same for itself)
``HTTP1Connection.close()``                    a body still arriving past ``body_timeout`` is
                                               cut off (:mod:`.body_deadline`)
``HTTP1Connection.stream.socket``              the SSE stall probe reads the socket's
                                               unacknowledged bytes (:mod:`.sse`)
=============================================  =================================================

No private Tornado name is used anywhere in the package: :data:`PRIVATE_NAMES` is empty,
and ``tests/project/test_architecture.py`` fails on any access to a ``tornado`` name starting
with ``_``.
"""

from __future__ import annotations

import socket
from asyncio import Future
from collections.abc import Callable
from typing import Any

from tornado import httputil
from tornado.http1connection import HTTP1Connection
from tornado.iostream import IOStream

#: Private Tornado names the package still needs, each with why: none.
PRIVATE_NAMES: tuple[str, ...] = ()


def body_limit(connection: Any) -> int | None:
    """The most body bytes the HTTP server reads for one request on ``connection``
    (``HTTPServer(max_body_size=...)``, else its ``max_buffer_size``); ``None`` when the
    connection is not Tornado's HTTP/1.1 one."""
    if not isinstance(connection, HTTP1Connection):
        return None
    limit = connection.params.max_body_size
    return limit if limit is not None else connection.stream.max_buffer_size


def socket_of(connection: Any) -> socket.socket | None:
    """The socket under ``connection``, while it is open."""
    if not isinstance(connection, HTTP1Connection) or connection.stream is None:
        return None
    sock: socket.socket | None = connection.stream.socket
    return sock


def on_close(connection: Any, callback: Callable[[], None] | None) -> None:
    """Call ``callback`` when the client closes ``connection`` while it is being answered
    (``None``: no more)."""
    if isinstance(connection, HTTP1Connection):
        connection.set_close_callback(callback)


def close(connection: Any) -> None:
    """Close ``connection`` now (the request on it is abandoned)."""
    if isinstance(connection, HTTP1Connection):
        connection.close()


def linger_on_finish(request: httputil.HTTPServerRequest,
                     linger: Callable[[IOStream], None]) -> None:
    """Make the response being written to ``request`` the last on its connection, and
    its close a lingering one: once the response is complete the connection is taken
    from the HTTP server and handed to ``linger`` (which waits for the response to be
    sent, discards what the client still sends for a bounded time, and closes), instead
    of being closed at once with the unread body behind it.  Call it before the response
    is finished and before the body is read (a refusal decided from the headers)."""
    connection = request.connection
    if isinstance(connection, HTTP1Connection):
        request.connection = _LingeringConnection(connection, linger)


class _LingeringConnection(httputil.HTTPConnection):
    """The request's connection, whose ``finish`` hands the stream to the linger."""

    def __init__(self, connection: HTTP1Connection,
                 linger: Callable[[IOStream], None]) -> None:
        self._connection = connection
        self._linger = linger

    def write_headers(self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
                      headers: httputil.HTTPHeaders,
                      chunk: bytes | None = None) -> Future[None]:
        return self._connection.write_headers(start_line, headers, chunk)

    def write(self, chunk: bytes) -> Future[None]:
        return self._connection.write(chunk)

    def finish(self) -> None:
        if self._connection.stream is None:
            return  # already taken
        self._linger(self._connection.detach())

    def set_close_callback(self, callback: Callable[[], None] | None) -> None:
        self._connection.set_close_callback(callback)

    def __getattr__(self, name: str) -> Any:  # what else a handler or an agent reads
        return getattr(self._connection, name)
