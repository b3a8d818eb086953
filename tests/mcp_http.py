"""The shared MCP test client: an in-process Tornado server on port 0, and raw clients.

Tests talk real HTTP to a real server; nothing here mocks the transport.

* ``running(server, **options)`` serves ``server`` on an ephemeral loopback port (bound to
  port 0, the port read back from the socket) and yields a :class:`Running` client;
* ``example_server()`` is the one way to load ``examples/conformance_server.py``;
* ``rpc()`` / ``init_msg()`` build JSON-RPC messages; ``error_of`` / ``final`` /
  ``result_of`` / ``assert_refused`` read replies;
* ``raw_request()`` is the one raw-socket exchange (bytes written exactly as given, the
  response read incrementally into a :class:`Stream`); ``raw_exchange`` and
  ``Running.open_stream`` are built on it;
* ``wait_until()`` polls server-side state that has no event of its own.

    async with running(build_server(), max_sessions=2) as srv:
        sid = await srv.initialize()
        r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        assert r.status == 200 and r.messages[-1]["result"]["tools"]
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest, HTTPResponse

from tornado_mcp import Context, Server, Transport

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TIMEOUT = 10.0
ALL_CAPS = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}


def modern_meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0"}}
    meta.update(extra)
    return meta


def parse_sse(body: bytes) -> list[dict[str, Any]]:
    """The JSON messages in an SSE body (``data:`` lines; comments and events with empty
    data, such as a resumable stream's priming event, ignored)."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if any(data):
            out.append(json.loads(b"\n".join(data)))
    return out


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "")


class Running:
    """A running server: its URL, transport, and a small raw client."""

    @classmethod
    def remote(cls, port: int) -> Running:
        """A client for a server running elsewhere (e.g. a subprocess) on ``port``."""
        return cls(Server("remote"), None, port)  # type: ignore[arg-type]

    def __init__(self, server: Server, transport: Transport, port: int) -> None:
        self.server = server
        self.transport = transport
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.client = AsyncHTTPClient(force_instance=True)

    async def request(self, method: str, body: bytes | None = None,
                      headers: dict[str, str] | None = None,
                      timeout: float = TIMEOUT) -> Reply:
        req = HTTPRequest(self.url, method=method, body=body, headers=headers or {},
                          request_timeout=timeout, connect_timeout=timeout,
                          allow_nonstandard_methods=True)
        try:
            resp: HTTPResponse = await self.client.fetch(req, raise_error=False)
        except HTTPClientError as exc:  # pragma: no cover - raise_error=False
            assert exc.response is not None
            resp = exc.response
        hdrs = {k: v for k, v in resp.headers.get_all()}
        body_bytes = resp.body or b""
        reply = Reply(resp.code, hdrs, body_bytes)
        ctype = hdrs.get("Content-Type", "")
        if ctype.startswith("text/event-stream"):
            reply.messages = parse_sse(body_bytes)
        elif ctype.startswith("application/json") and body_bytes:
            parsed = json.loads(body_bytes)
            reply.messages = parsed if isinstance(parsed, list) else [parsed]
        return reply

    async def post(self, message: Any, session: str | None = None,
                   headers: dict[str, str] | None = None, raw: bytes | None = None,
                   version: str | None = None) -> Reply:
        """POST one message with the usual legacy headers (override with ``headers``)."""
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream"}
        if session is not None:
            h["Mcp-Session-Id"] = session
            h["MCP-Protocol-Version"] = version or LEGACY
        elif version is not None:
            h["MCP-Protocol-Version"] = version
        h.update(headers or {})
        body = raw if raw is not None else json.dumps(message).encode()
        return await self.request("POST", body, h)

    async def modern(self, method: str, params: dict[str, Any] | None = None,
                     request_id: Any = 1, headers: dict[str, str] | None = None,
                     meta: dict[str, Any] | None = None) -> Reply:
        """POST a 2026-07-28 request with matching routing headers."""
        p = dict(params or {})
        p.setdefault("_meta", meta if meta is not None else modern_meta())
        h = {"Content-Type": "application/json",
             "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if method in ("tools/call", "prompts/get"):
            h["Mcp-Name"] = str(p.get("name"))
        elif method == "resources/read":
            h["Mcp-Name"] = str(p.get("uri"))
        h.update(headers or {})
        msg = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": p}
        return await self.request("POST", json.dumps(msg).encode(), h)

    async def delete(self, sid: str) -> Reply:
        """DELETE the legacy session ``sid``."""
        return await self.request("DELETE", None, {"Mcp-Session-Id": sid,
                                                   "MCP-Protocol-Version": LEGACY})

    async def get(self, sid: str | None, accept: str | None = "text/event-stream",
                  **extra: str) -> Reply:
        """A GET expected to be refused (a successful one never ends; use ``get_stream``)."""
        headers = {"MCP-Protocol-Version": LEGACY, **extra}
        if accept is not None:
            headers["Accept"] = accept
        if sid is not None:
            headers["Mcp-Session-Id"] = sid
        return await self.request("GET", None, headers, timeout=5.0)

    async def initialize(self, version: str = LEGACY, capabilities: dict[str, Any] | None = None,
                         client_name: str = "test-client") -> str:
        """Open a legacy session and send notifications/initialized; return its id."""
        r = await self.post(init_msg(version, 0, capabilities, client_name, "1.0"))
        assert r.status == 200, r.body
        sid = r.headers["Mcp-Session-Id"]
        r2 = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                             session=sid)
        assert r2.status == 202, r2.body
        return sid

    async def open_stream(self, method: str, body: bytes | None,
                          headers: dict[str, str]) -> Stream:
        """Open a long-lived response (GET stream or listen stream) over a raw socket, so
        that :meth:`Stream.close` really drops the connection; returns once the response
        headers are in."""
        payload = body or b""
        head = [f"{method} /mcp HTTP/1.1", f"Content-Length: {len(payload)}",
                *(f"{k}: {v}" for k, v in headers.items())]
        stream = await raw_request(self.port, head, [payload])
        await asyncio.wait_for(stream.started.wait(), TIMEOUT)
        return stream

    async def listen(self, notifications: dict[str, Any], request_id: Any = "listen-1",
                     meta: dict[str, Any] | None = None) -> Stream:
        msg = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
               "params": {"notifications": notifications,
                          "_meta": meta if meta is not None else modern_meta()}}
        return await self.open_stream("POST", json.dumps(msg).encode(), {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})

    async def get_stream(self, session: str) -> Stream:
        return await self.open_stream("GET", None, {
            "Accept": "text/event-stream", "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LEGACY})


class Stream:
    """An open SSE response being read incrementally from a raw connection."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.status = 0
        self.headers: dict[str, str] = {}
        self.header_lines: list[tuple[str, str]] = []  # as sent: name case kept, repeats too
        self.raw = b""
        self.messages: list[dict[str, Any]] = []
        self.comments = 0
        self.started = asyncio.Event()
        self.ended = asyncio.Event()
        self._changed = asyncio.Event()
        self._buffer = b""
        self.task: asyncio.Future[None] | None = None

    async def read(self, reader: asyncio.StreamReader) -> None:
        try:
            status_line = await reader.readline()
            self.status = int(status_line.split()[1])
            while True:
                line = (await reader.readline()).decode("latin-1")
                if line in ("\r\n", "\n", ""):
                    break
                k, v = line.split(":", 1)
                self.header_lines.append((k.strip(), v.strip()))
                self.headers[k.strip().title()] = v.strip()
            self.started.set()
            if "Content-Length" in self.headers:
                self.feed(await reader.readexactly(int(self.headers["Content-Length"])))
            elif self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                while True:
                    size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        await reader.readline()
                        break
                    self.feed(await reader.readexactly(size))
                    await reader.readexactly(2)
            else:
                while chunk := await reader.read(65536):
                    self.feed(chunk)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, IndexError):
            pass
        finally:
            self.started.set()
            self.ended.set()
            self._changed.set()
            self.writer.close()

    def feed(self, chunk: bytes) -> None:
        self.raw += chunk
        self._buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            if block.startswith(b":"):
                self.comments += 1
            self.messages.extend(parse_sse(block + b"\n\n"))
        self._changed.set()

    async def wait_for(self, predicate: Callable[[Stream], bool],
                       timeout: float = TIMEOUT) -> None:
        """Wait until ``predicate(self)`` holds; fail after ``timeout`` or if the stream ends."""
        async def loop() -> None:
            while not predicate(self):
                if self.ended.is_set():
                    raise AssertionError(f"stream ended first; got {self.messages}")
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(loop(), timeout)

    async def wait_messages(self, n: int, timeout: float = TIMEOUT) -> list[dict[str, Any]]:
        await self.wait_for(lambda s: len(s.messages) >= n, timeout)
        return self.messages

    async def wait_closed(self, timeout: float = TIMEOUT) -> None:
        await asyncio.wait_for(self.ended.wait(), timeout)

    def close(self) -> None:
        """Drop the connection from the client side."""
        self.writer.close()
        if self.task is not None and not self.task.done():
            self.task.cancel()


def loopback_sockets() -> list[socket.socket]:
    """Sockets bound to an ephemeral loopback port (for :func:`running`)."""
    return tornado.netutil.bind_sockets(0, "127.0.0.1")


@contextlib.asynccontextmanager
async def serving(app: tornado.web.Application) -> AsyncIterator[str]:
    """Serve any Tornado ``app`` on an ephemeral loopback port for the duration of the
    block; yields its origin (``http://127.0.0.1:PORT``)."""
    http = tornado.httpserver.HTTPServer(app)
    sockets = loopback_sockets()
    http.add_sockets(sockets)
    try:
        yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    finally:
        http.stop()
        await http.close_all_connections()


@contextlib.asynccontextmanager
async def running(server: Server, *, transport: Transport | None = None,
                  extra_routes: Callable[[Transport], list[Any]] | None = None,
                  sockets: list[socket.socket] | None = None,
                  http_options: dict[str, Any] | None = None,
                  fast: bool | None = None, app_settings: dict[str, Any] | None = None,
                  **options: Any) -> AsyncIterator[Running]:
    """Serve ``server`` on an ephemeral loopback port for the duration of the block
    (``http_options``: keyword arguments of the ``HTTPServer``, e.g. ``body_timeout``;
    ``app_settings``: the ``Application``'s).

    The endpoint is mounted as an application mounts it (an ordinary handler), or on the
    fast path with ``fast=True`` (the default follows ``TORNADO_MCP_TEST_FAST=1``, to run
    a test module on the fast path).

    The socket is bound to port 0 and the port the kernel chose is read back from it, so
    no other process can take it between choosing and binding.  ``sockets``: ones bound
    already (by :func:`loopback_sockets`, when the port must be known beforehand, as an
    OAuth resource's URL)."""
    # Work still running at the end of a test is not waited for (a test of the drain
    # sets its own grace): the default 30 s would outlast the teardown's timeout.
    options.setdefault("shutdown_grace", 0.5)
    t = transport or Transport(server, **options)
    if fast is None:
        fast = os.environ.get("TORNADO_MCP_TEST_FAST") == "1"
    routes: list[Any] = [*t.routes("/mcp", fast=fast)]
    if extra_routes is not None:
        routes.extend(extra_routes(t))
    app = tornado.web.Application(routes, **(app_settings or {}))
    http = tornado.httpserver.HTTPServer(app, **(http_options or {}))
    sockets = sockets or loopback_sockets()
    http.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    srv = Running(server, t, port)
    try:
        yield srv
    finally:
        srv.client.close()
        http.stop()
        await asyncio.wait_for(t.close(), TIMEOUT)
        await asyncio.wait_for(http.close_all_connections(), TIMEOUT)




# -- messages ---------------------------------------------------------------------------------

def rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1
        ) -> dict[str, Any]:
    """A JSON-RPC request (``params`` left out when ``None``)."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def init_msg(version: str = LEGACY, request_id: Any = 0,
             capabilities: dict[str, Any] | None = None, client_name: str = "t",
             client_version: str = "1") -> dict[str, Any]:
    """A legacy ``initialize`` request."""
    return rpc("initialize", {"protocolVersion": version, "capabilities": capabilities or {},
                              "clientInfo": {"name": client_name, "version": client_version}},
               request_id)


def modern_header_lines(method: str, name: str | None = None,
                        version: str = MODERN) -> list[tuple[str, str]]:
    """The usual headers of a 2026-07-28 POST, as (name, value) lines for raw_exchange."""
    lines = [("Content-Type", "application/json"),
             ("Accept", "application/json, text/event-stream"),
             ("MCP-Protocol-Version", version), ("Mcp-Method", method)]
    if name is not None:
        lines.append(("Mcp-Name", name))
    return lines


def modern_body(method: str, params: dict[str, Any] | None = None, request_id: Any = 1,
                meta: dict[str, Any] | None = None) -> bytes:
    """A 2026-07-28 request body with the usual ``_meta`` envelope (unless ``params`` has one)."""
    p = dict(params or {})
    p.setdefault("_meta", meta if meta is not None else modern_meta())
    return json.dumps(rpc(method, p, request_id)).encode()


def legacy_headers(sid: str, version: str = LEGACY, **override: str | None) -> dict[str, str]:
    """The usual legacy POST headers; an override of ``None`` leaves that header out."""
    headers: dict[str, str | None] = {
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": sid, "MCP-Protocol-Version": version, **override}
    return {k: v for k, v in headers.items() if v is not None}


# -- replies ----------------------------------------------------------------------------------

def error_of(reply: Reply) -> dict[str, Any]:
    """The JSON-RPC error of a one-message JSON reply (asserting there is exactly one)."""
    assert reply.content_type.startswith("application/json"), (reply.status, reply.body)
    body = reply.json
    assert isinstance(body, dict) and body.get("jsonrpc") == "2.0", body
    assert "error" in body, body
    err: dict[str, Any] = body["error"]
    return err


def assert_refused(reply: Reply, status: int, code: int, message: str | None = None,
                   request_id: Any = None) -> dict[str, Any]:
    """``reply`` is exactly ``status`` with JSON-RPC error ``code`` for ``request_id``."""
    assert reply.status == status, (reply.status, reply.body)
    err = error_of(reply)
    assert err["code"] == code, err
    if message is not None:
        assert message in err["message"], err
    assert reply.json["id"] == request_id
    return err


def final(reply: Reply) -> dict[str, Any]:
    """The last message of a 200 reply (the JSON-RPC response)."""
    assert reply.status == 200, (reply.status, reply.body)
    assert reply.messages, reply.body
    last: dict[str, Any] = reply.messages[-1]
    return last


def result_of(reply: Reply) -> dict[str, Any]:
    """The ``result`` of a 200 reply's JSON-RPC response."""
    last = final(reply)
    assert "result" in last, last
    result: dict[str, Any] = last["result"]
    return result


def tool_text(result: dict[str, Any]) -> str:
    """The text of a tool result's content blocks, joined."""
    return "".join(c.get("text", "") for c in result["content"])


async def post_modern_raw(srv: Running, body: bytes,
                          headers: dict[str, str] | None = None) -> Reply:
    """POST ``body`` as is with the 2026-07-28 version header (and ``headers``)."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
         "MCP-Protocol-Version": MODERN}
    h.update(headers or {})
    return await srv.request("POST", body, h)


async def legacy_call(srv: Running, sid: str, method: str, params: Any,
                      request_id: int = 2) -> dict[str, Any]:
    """A request on legacy session ``sid``; returns its JSON-RPC response (asserting 200)."""
    return final(await srv.post(rpc(method, params, request_id), session=sid))


# -- listen streams -----------------------------------------------------------------------------

ACK = "notifications/subscriptions/acknowledged"
SUB_ID = "io.modelcontextprotocol/subscriptionId"


async def acked(srv: Running, notifications: dict[str, Any],
                request_id: Any = "listen-1") -> Stream:
    """Open a listen stream and wait for its acknowledgement (asserted to come first)."""
    stream = await srv.listen(notifications, request_id)
    assert stream.status == 200, stream.raw[:300]
    assert stream.headers.get("Content-Type", "").startswith("text/event-stream")
    await stream.wait_messages(1)
    assert stream.messages[0]["method"] == ACK, stream.messages
    return stream


def full_server(name: str = "full") -> Server:
    """Every list-changed flag and resources.subscribe declared explicitly."""
    return Server(name, capabilities={"tools": {"listChanged": True},
                                      "prompts": {"listChanged": True},
                                      "resources": {"listChanged": True, "subscribe": True}})


# -- raw sockets --------------------------------------------------------------------------------

async def raw_request(port: int, head: list[str],
                      body_parts: tuple[bytes, ...] | list[bytes] = ()) -> Stream:
    """The one raw-socket exchange: write ``head`` (the request line and header lines,
    byte for byte; ``Host`` is added when absent) and then ``body_parts`` as given, and read
    the response incrementally into a :class:`Stream` (not waiting for its headers: a
    handler that blocks before emitting anything sends none until it finishes)."""
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection("127.0.0.1", port), TIMEOUT)
    if not any(line.lower().startswith("host:") for line in head[1:]):
        head = [*head, f"Host: 127.0.0.1:{port}"]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
    for part in body_parts:
        writer.write(part)
    await writer.drain()
    stream = Stream(writer)
    stream.task = asyncio.ensure_future(stream.read(reader))
    return stream


@dataclass
class RawReply:
    """A response read off a raw socket: status, headers as sent (name case kept), body."""

    status: int
    header_lines: list[tuple[str, str]]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        for k, v in self.header_lines:
            if k.lower() == name.lower():
                return v
        return None


async def raw_exchange(port: int, method: str, body: bytes,
                       header_lines: list[tuple[str, str]],
                       timeout: float = TIMEOUT) -> RawReply:
    """One complete HTTP/1.1 request written byte for byte: header names keep their case and
    a name may repeat (clients like AsyncHTTPClient normalise both away)."""
    head = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}",
            f"Content-Length: {len(body)}", "Connection: close",
            *(f"{k}: {v}" for k, v in header_lines)]
    stream = await raw_request(port, head, [body])
    await stream.wait_closed(timeout)
    return RawReply(stream.status, stream.header_lines, stream.raw)


async def raw_post(srv: Running, headers: dict[str, str], body: str | bytes) -> Reply:
    """POST exactly these headers (an HTTP client library would add some of its own)."""
    data = body.encode() if isinstance(body, str) else body
    head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(data)}", "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items())]
    s = await raw_request(srv.port, head, [data])
    await s.wait_closed()
    return Reply(s.status, s.headers, s.raw,
                 s.messages or ([json.loads(s.raw)] if s.raw.startswith(b"{") else []))


async def post_stream(srv: Running, message: dict[str, Any], sid: str) -> Stream:
    """POST a legacy request on session ``sid`` and read its response incrementally."""
    body = json.dumps(message).encode()
    head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in legacy_headers(sid).items())]
    return await raw_request(srv.port, head, [body])


def unread_socket(port: int, request: bytes, rcvbuf: int) -> socket.socket:
    """A connection that sends ``request`` and then never reads: its receive buffer is
    ``rcvbuf`` bytes, so the server's writes soon stall (a slow or stuck consumer)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(TIMEOUT)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    return sock


# -- waiting ----------------------------------------------------------------------------------

async def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT,
                     interval: float = 0.01) -> None:
    """Poll ``predicate`` until it holds (for state with no event to await); fail after
    ``timeout``."""
    async def loop() -> None:
        while not predicate():
            await asyncio.sleep(interval)
    await asyncio.wait_for(loop(), timeout)


# -- test servers -----------------------------------------------------------------------------

SECRET = "secret-detail-4f1c"


@dataclass
class Probe:
    """What the extra tools of :func:`probe_server` let a test observe and steer."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    subscribe_calls: list[str] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)

    async def hold(self) -> None:
        """In a tool: set ``started``, then wait for ``gate`` (``cancelled`` is set if the
        tool is cancelled meanwhile)."""
        self.started.set()
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


def probe_server() -> tuple[Server, Probe]:
    """The example server plus tools that block (``block``), fail with ``SECRET`` in the
    exception (``boom``) or send a server-to-client request (``ask``)."""
    server = example_server()
    probe = Probe()

    async def block(ctx: Context) -> str:
        await probe.hold()
        return "released"

    def boom() -> str:
        raise RuntimeError(SECRET)

    async def ask(kind: str, ctx: Context) -> dict[str, Any]:
        if kind == "sampling":
            got = await ctx.sample([{"role": "user",
                                     "content": {"type": "text", "text": "hi"}}], 10)
        elif kind == "elicitation":
            got = await ctx.elicit("Name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}})
        elif kind == "roots":
            got = await ctx.list_roots()
        else:
            got = await ctx.ping()
        probe.answers.append(got)
        return {"got": got}

    server.add_tool(block, "block", description="Blocks until released or cancelled")
    server.add_tool(boom, "boom", description="Raises")
    server.add_tool(ask, "ask", description="Sends a server-to-client request")
    return server, probe


# -- the example server ---------------------------------------------------------------------------

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
_example_module: Any = None


def example_server() -> Server:
    """A fresh ``build_server()`` of ``examples/conformance_server.py`` (the module is loaded
    once, from its file)."""
    global _example_module
    if _example_module is None:
        spec = importlib.util.spec_from_file_location(
            "conformance_server_example", EXAMPLES / "conformance_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _example_module = module
    server: Server = _example_module.build_server()
    return server
