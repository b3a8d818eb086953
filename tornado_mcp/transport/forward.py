"""Forwarding a legacy session's request to the process of the cluster that holds it.

A session lives in the process that created it; its id starts with that process's id
(:attr:`tornado_mcp.cluster.Cluster.session_prefix`).  When a request for it reaches
another process (a proxy without sticky routing, or a hash that maps the id elsewhere),
:func:`forward` relays it, headers and body, to the owner's advertised URL and streams the
answer back as it comes (JSON, an SSE response, or a whole GET stream).  The owner never
forwards again: the id names it.  When the owner advertises no URL, or cannot be reached,
the client gets a JSON-RPC error naming the process, never a misleading 404.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.httputil import HTTPHeaders, parse_response_start_line
from tornado.iostream import StreamClosedError

from ..introspection import ProcessInfo
from ..protocol import INTERNAL_ERROR, INVALID_REQUEST
from .jsonrpc import Reply

if TYPE_CHECKING:
    from .handler import MCPHandler

log = logging.getLogger("tornado_mcp.transport")

#: Marks a forwarded request; a process never forwards a request that carries it.
FORWARDED_HEADER = "X-Tornado-MCP-Forwarded-By"
#: Concurrent forwarded requests per process (GET streams hold one each while open).
MAX_FORWARDS = 1000
CONNECT_TIMEOUT = 5.0
_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
                  "te", "trailer", "transfer-encoding", "upgrade", "content-length"})


class Forwarded(Reply):
    """The owner answered the request; nothing more to write."""

    def __init__(self) -> None:
        super().__init__(200, INTERNAL_ERROR, "forwarded")


def misrouted(owner: ProcessInfo, session_id: str) -> Reply:
    """421: the session is alive in another process that this one cannot forward to."""
    return Reply(421, INVALID_REQUEST,
                 f"Misdirected request: session {session_id} is held by process {owner.id} "
                 f"on {owner.host} (pid {owner.pid}); route requests by Mcp-Session-Id to "
                 "the process that created the session (sticky sessions)")


async def forward(h: MCPHandler, owner: ProcessInfo, self_id: str, body: bytes | None) -> None:
    """Relay the request to ``owner`` and stream its answer; raise :class:`Forwarded`."""
    session_id = h.request.headers.get("Mcp-Session-Id", "")
    if owner.url is None or FORWARDED_HEADER in h.request.headers:
        raise misrouted(owner, session_id)
    out = HTTPHeaders()
    for name, value in h.request.headers.get_all():
        if name.lower() not in _HOP:
            out.add(name, value)
    out[FORWARDED_HEADER] = self_id
    status: list[int] = [502]
    got = HTTPHeaders()
    started = [False]

    def on_header(line: str) -> None:
        if line.startswith("HTTP/"):
            status[0] = parse_response_start_line(line.strip()).code
        elif line.strip():
            got.parse_line(line)
        elif status[0] != 100:  # the end of the head: pass it on now (a stream may idle)
            start()
            h.flush().add_done_callback(lambda f: f.exception())

    def start() -> None:
        if not started[0]:
            started[0] = True
            h.set_status(status[0])
            for name, value in got.get_all():
                if name.lower() not in _HOP:
                    h.set_header(name, value)

    def on_chunk(chunk: bytes) -> None:
        if h.request.connection is None or h.request.connection.stream.closed():  # type: ignore[attr-defined]
            raise StreamClosedError()  # our client left: drop the upstream request too
        start()
        h.write(chunk)
        h.flush().add_done_callback(lambda f: f.exception())

    request = HTTPRequest(owner.url, method=h.request.method or "GET", headers=out,
                          body=body if h.request.method == "POST" else None,
                          connect_timeout=CONNECT_TIMEOUT, request_timeout=0,
                          follow_redirects=False, decompress_response=False,
                          header_callback=on_header, streaming_callback=on_chunk)
    try:
        await _client().fetch(request, raise_error=False)
    except Exception as exc:
        log.warning("could not forward to process %s at %s: %r", owner.id, owner.url, exc)
        if not started[0]:
            raise Reply(502, INTERNAL_ERROR,
                        f"Bad gateway: process {owner.id} on {owner.host} holds session "
                        f"{session_id} and did not answer") from None
    if not h._finished:
        start()
        h.finish()
    raise Forwarded()


_clients: dict[int, AsyncHTTPClient] = {}


def _client() -> AsyncHTTPClient:
    import asyncio
    loop = id(asyncio.get_running_loop())
    client = _clients.get(loop)
    if client is None:
        client = AsyncHTTPClient(force_instance=True, max_clients=MAX_FORWARDS,
                                 max_body_size=2**62)
        _clients.clear()
        _clients[loop] = client
    return client
