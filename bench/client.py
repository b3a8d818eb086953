"""A small asyncio HTTP/1.1 client for the stream and session scenarios.

Raw sockets keep the load generator cheap: one keep-alive connection per worker,
chunked and Content-Length bodies, and an incremental SSE reader for held streams.
Every wait has a timeout. Also the MCP wire helpers (both protocol eras).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.servers import HOST, BenchError

LEGACY_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
MCP_PATH = "/mcp"
READ_LIMIT = 8 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0

ACCEPT_BOTH = "application/json, text/event-stream"


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of a JSON or SSE body."""
        ctype = self.header("content-type") or ""
        if "text/event-stream" in ctype:
            parser = SseParser()
            return parser.feed(self.body)
        if not self.body.strip():
            return []
        data = json.loads(self.body)
        return data if isinstance(data, list) else [data]


class SseParser:
    """Incremental SSE parser yielding each event's ``data`` parsed as JSON."""

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        buf = self._buf + chunk
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            line = buf[start:nl]
            start = nl + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if self._data:
                    payload = b"\n".join(self._data)
                    self._data = []
                    with contextlib.suppress(ValueError):
                        msg = json.loads(payload)
                        if isinstance(msg, dict):
                            out.append(msg)
                continue
            if line.startswith(b"data:"):
                value = line[5:]
                if value.startswith(b" "):
                    value = value[1:]
                self._data.append(value)
        self._buf = buf[start:]
        return out


def _head(method: str, path: str, port: int, headers: Mapping[str, str], body_len: int) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines.extend(f"{k}: {v}" for k, v in headers.items())
    if body_len or method in {"POST", "PUT"}:
        lines.append(f"Content-Length: {body_len}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Connection:
    """One keep-alive HTTP/1.1 connection to a server under test."""

    def __init__(self, port: int, host: str = HOST) -> None:
        self.host = host
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    @property
    def is_open(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=READ_LIMIT), timeout
        )

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    def abort(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.transport.abort()

    async def _send(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> asyncio.StreamReader:
        if not self.is_open:
            await self.connect()
        assert self._writer is not None and self._reader is not None
        payload = body or b""
        self._writer.write(_head(method, path, self.port, headers, len(payload)))
        if payload:
            self._writer.write(payload)
        await self._writer.drain()
        return self._reader

    async def _read_head(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
        raw = await reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise BenchError(f"bad status line {lines[0]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(parts[1]), headers

    async def _body_chunks(
        self, reader: asyncio.StreamReader, status: int, headers: Mapping[str, str], method: str
    ) -> AsyncIterator[bytes]:
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return
        if "chunked" in headers.get("transfer-encoding", "").lower():
            for _ in itertools.count():
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    return
                data = await reader.readexactly(size)
                await reader.readexactly(2)
                yield data
        elif "content-length" in headers:
            length = int(headers["content-length"])
            if length:
                yield await reader.readexactly(length)
        else:
            while chunk := await reader.read(65536):
                yield chunk
            self.abort()

    async def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> Response:
        try:
            return await asyncio.wait_for(self._request(method, path, headers, body), timeout)
        except BaseException:
            self.abort()
            raise

    async def _request(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes | None
    ) -> Response:
        reader = await self._send(method, path, headers, body)
        status, resp_headers = await self._read_head(reader)
        parts = [chunk async for chunk in self._body_chunks(reader, status, resp_headers, method)]
        if resp_headers.get("connection", "").lower() == "close":
            self.abort()
        return Response(status, resp_headers, b"".join(parts))

    async def open_stream(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> Stream:
        """Send a request whose response is a held stream; return after its head."""
        try:
            reader = await asyncio.wait_for(self._send(method, path, headers, body), timeout)
            status, resp_headers = await asyncio.wait_for(self._read_head(reader), timeout)
        except BaseException:
            self.abort()
            raise
        return Stream(
            self, status, resp_headers, self._body_chunks(reader, status, resp_headers, method)
        )


@dataclass
class Stream:
    """A held response (SSE): iterate its JSON-RPC messages as they arrive."""

    conn: Connection
    status: int
    headers: dict[str, str]
    chunks: AsyncIterator[bytes]
    parser: SseParser = field(default_factory=SseParser)
    pending: list[dict[str, Any]] = field(default_factory=list)

    async def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when the stream ended."""
        deadline = time.monotonic() + timeout
        ctype = self.headers.get("content-type", "")
        for _ in itertools.count():
            if self.pending:
                return self.pending.pop(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no message on stream in time")
            try:
                chunk = await asyncio.wait_for(anext(self.chunks), remaining)
            except StopAsyncIteration:
                return None
            if "text/event-stream" in ctype:
                self.pending.extend(self.parser.feed(chunk))
            else:
                with contextlib.suppress(ValueError):
                    data = json.loads(chunk)
                    self.pending.append(data if isinstance(data, dict) else {"batch": data})
        return None  # pragma: no cover - the loop above only exits by return/raise


# --- MCP wire helpers ------------------------------------------------------------


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def legacy_headers(session_id: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
    if session_id is not None:
        headers["Mcp-Session-Id"] = session_id
        headers["MCP-Protocol-Version"] = LEGACY_VERSION
    return headers


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def initialize_body(req_id: int = 1, size: int = 0) -> bytes:
    """An ``initialize`` request, padded (in client capabilities) to ``size`` bytes."""
    params: dict[str, Any] = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    msg = {"jsonrpc": "2.0", "id": req_id, "method": "initialize", "params": params}
    body = dumps(msg)
    if size > len(body):
        params["capabilities"] = {"experimental": {"bench/pad": {"data": ""}}}
        overhead = len(dumps(msg))
        pad = max(0, size - overhead)
        params["capabilities"]["experimental"]["bench/pad"]["data"] = "x" * pad
        body = dumps(msg)
    return body


def tools_call_body(req_id: int, name: str, arguments: dict[str, Any], modern: bool) -> bytes:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if modern:
        params["_meta"] = modern_meta()
    return dumps({"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": params})


INITIALIZED_BODY = dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def expect_result(resp: Response, what: str) -> dict[str, Any]:
    if resp.status != 200:
        raise BenchError(f"{what}: HTTP {resp.status}: {resp.body[:300]!r}")
    for msg in resp.messages():
        if "result" in msg:
            result = msg["result"]
            return result if isinstance(result, dict) else {}
        if "error" in msg:
            raise BenchError(f"{what}: JSON-RPC error {msg['error']}")
    raise BenchError(f"{what}: no result in {resp.body[:300]!r}")


async def open_legacy_session(
    conn: Connection,
    *,
    init_size: int = 0,
    path: str = MCP_PATH,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> str:
    """initialize + notifications/initialized; returns the session id."""
    resp = await conn.request(
        "POST", path, legacy_headers(), initialize_body(1, init_size), timeout
    )
    expect_result(resp, "initialize")
    session_id = resp.header("mcp-session-id")
    if not session_id:
        raise BenchError("initialize: no Mcp-Session-Id header")
    resp = await conn.request("POST", path, legacy_headers(session_id), INITIALIZED_BODY, timeout)
    if resp.status not in (200, 202, 204):
        raise BenchError(f"notifications/initialized: HTTP {resp.status}")
    return session_id


async def delete_session(
    conn: Connection, session_id: str, *, path: str = MCP_PATH, timeout: float = DEFAULT_TIMEOUT_S
) -> None:
    resp = await conn.request("DELETE", path, legacy_headers(session_id), None, timeout)
    if resp.status not in (200, 202, 204):
        raise BenchError(f"DELETE session: HTTP {resp.status}")


async def legacy_request(
    conn: Connection,
    session_id: str,
    req_id: int,
    method: str,
    params: dict[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    body = dumps({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
    resp = await conn.request("POST", MCP_PATH, legacy_headers(session_id), body, timeout)
    return expect_result(resp, method)


async def modern_tools_call(
    conn: Connection, req_id: int, name: str, arguments: dict[str, Any], *, timeout: float
) -> dict[str, Any]:
    body = tools_call_body(req_id, name, arguments, modern=True)
    resp = await conn.request("POST", MCP_PATH, modern_headers("tools/call", name), body, timeout)
    return expect_result(resp, f"tools/call {name}")


def listen_body(req_id: int, uris: list[str]) -> bytes:
    return dumps(
        {
            "jsonrpc": "2.0",
            "id": req_id,
            "method": "subscriptions/listen",
            "params": {"notifications": {"resourceSubscriptions": uris}, "_meta": modern_meta()},
        }
    )


async def gather_bounded(coros: list[Any], limit: int, timeout: float) -> list[Any]:
    """Run coroutines with at most ``limit`` in flight; fail if any fails or all take too long."""
    sem = asyncio.Semaphore(limit)

    async def one(coro: Any) -> Any:
        async with sem:
            return await coro

    return await asyncio.wait_for(asyncio.gather(*(one(c) for c in coros)), timeout)
