"""Test helpers: an in-process Tornado server on a free loopback port, and a raw MCP client.

Tests talk real HTTP to a real server; nothing here mocks the transport.

    async with running(build_server(), max_sessions=2) as srv:
        sid = await srv.initialize()
        r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=sid)
        assert r.status == 200 and r.messages[-1]["result"]["tools"]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest, HTTPResponse

from tornado_mcp import Server, Transport

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TIMEOUT = 10.0


def modern_meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0"}}
    meta.update(extra)
    return meta


def parse_sse(body: bytes) -> list[dict[str, Any]]:
    """The JSON messages in an SSE body (``data:`` lines; comments ignored)."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
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

    async def initialize(self, version: str = LEGACY, capabilities: dict[str, Any] | None = None,
                         client_name: str = "test-client") -> str:
        """Open a legacy session and send notifications/initialized; return its id."""
        r = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"protocolVersion": version,
                                        "capabilities": capabilities or {},
                                        "clientInfo": {"name": client_name, "version": "1.0"}}})
        assert r.status == 200, r.body
        sid = r.headers["Mcp-Session-Id"]
        r2 = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                             session=sid)
        assert r2.status == 202, r2.body
        return sid

    async def open_stream(self, method: str, body: bytes | None,
                          headers: dict[str, str]) -> Stream:
        """Open a long-lived response (GET stream or listen stream) over a raw socket, so
        that :meth:`Stream.close` really drops the connection."""
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", self.port), TIMEOUT)
        payload = body or b""
        lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{self.port}",
                 f"Content-Length: {len(payload)}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
        await writer.drain()
        stream = Stream(writer)
        stream.task = asyncio.ensure_future(stream.read(reader))
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


@contextlib.asynccontextmanager
async def running(server: Server, *, transport: Transport | None = None,
                  extra_routes: Callable[[Transport], list[Any]] | None = None,
                  **options: Any) -> AsyncIterator[Running]:
    """Serve ``server`` on a free loopback port for the duration of the block."""
    t = transport or Transport(server, **options)
    routes: list[Any] = [*t.routes("/mcp")]
    if extra_routes is not None:
        routes.extend(extra_routes(t))
    app = tornado.web.Application(routes)
    http = tornado.httpserver.HTTPServer(app)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
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



# -- helpers added for the modern, listen and bounds suites (additive) -----------------------

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
    """One HTTP/1.1 request written byte for byte: header names keep their case and a
    name may repeat (clients like AsyncHTTPClient normalise both away).  The response must
    carry Content-Length (every JSON reply does)."""
    async def exchange() -> RawReply:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}",
                     f"Content-Length: {len(body)}", "Connection: close"]
            lines += [f"{k}: {v}" for k, v in header_lines]
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
            await writer.drain()
            status = int((await reader.readline()).split()[1])
            headers: list[tuple[str, str]] = []
            while True:
                line = (await reader.readline()).decode("latin-1")
                if line in ("\r\n", "\n", ""):
                    break
                k, v = line.split(":", 1)
                headers.append((k.strip(), v.strip()))
            length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
            return RawReply(status, headers, await reader.readexactly(length))
        finally:
            writer.close()
    return await asyncio.wait_for(exchange(), timeout)


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
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": p}).encode()


async def wait_until(predicate: Callable[[], bool], timeout: float = TIMEOUT,
                     interval: float = 0.01) -> None:
    """Poll ``predicate`` until it holds (for state with no event to await); fail after
    ``timeout``."""
    async def loop() -> None:
        while not predicate():
            await asyncio.sleep(interval)
    await asyncio.wait_for(loop(), timeout)


def conformance_server() -> Server:
    """A fresh ``examples/conformance_server.py`` ``build_server()``."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "conformance_server.py"
    spec = importlib.util.spec_from_file_location("conformance_server_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server: Server = module.build_server()
    return server
