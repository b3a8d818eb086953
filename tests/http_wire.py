"""HTTP/1.1 over a raw keep-alive socket, for tests about what happens to the connection.

``WireConn`` writes requests byte for byte and reads each response completely
(Content-Length, chunked, or up to the close), so a test can send a second request on the
same connection and tell "answered", "closed with ``Connection: close``" and "closed
without a word" apart.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

TIMEOUT = 10.0


@dataclass
class WireReply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    @property
    def closes(self) -> bool:
        """The response says the connection ends after it."""
        return "close" in (self.header("Connection") or "").lower()

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class ConnectionEnded(Exception):
    """The server closed the connection before a complete response."""


def request_bytes(method: str, port: int, headers: list[tuple[str, str]], body: bytes,
                  target: str = "/mcp", content_length: bool = True) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    if content_length:
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class WireConn:
    """One keep-alive connection to ``127.0.0.1:port``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 port: int) -> None:
        self.reader = reader
        self.writer = writer
        self.port = port

    @classmethod
    async def open(cls, port: int, timeout: float = TIMEOUT) -> WireConn:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port), timeout)
        return cls(reader, writer, port)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def exchange(self, method: str, headers: list[tuple[str, str]], body: bytes = b"",
                       timeout: float = TIMEOUT) -> WireReply:
        """Send one request and read its response; ``ConnectionEnded`` if there is none."""
        try:
            await self.send(request_bytes(method, self.port, headers, body))
        except ConnectionError as exc:
            raise ConnectionEnded(str(exc)) from exc
        return await self.read_reply(method == "HEAD", timeout)

    async def read_reply(self, head: bool = False, timeout: float = TIMEOUT) -> WireReply:
        return await asyncio.wait_for(self._read_reply(head), timeout)

    async def _read_reply(self, head: bool) -> WireReply:
        try:
            status_line = await self.reader.readline()
            if not status_line:
                raise ConnectionEnded("closed before a response")
            status = int(status_line.split()[1])
            headers: list[tuple[str, str]] = []
            while True:
                line = (await self.reader.readline()).decode("latin-1")
                if line in ("\r\n", "\n"):
                    break
                if line == "":
                    raise ConnectionEnded("closed inside the response headers")
                k, v = line.split(":", 1)
                headers.append((k.strip(), v.strip()))
            reply = WireReply(status, headers, b"")
            length = reply.header("Content-Length")
            if head or status in (204, 304) or 100 <= status < 200:
                return reply
            if length is not None:
                reply.body = await self.reader.readexactly(int(length))
            elif (reply.header("Transfer-Encoding") or "").lower() == "chunked":
                parts = []
                while True:
                    size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        await self.reader.readline()
                        break
                    parts.append(await self.reader.readexactly(size))
                    await self.reader.readexactly(2)
                reply.body = b"".join(parts)
            else:
                reply.body = await self.reader.read()
            return reply
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise ConnectionEnded(str(exc)) from exc

    async def at_eof(self, timeout: float = TIMEOUT) -> bool:
        """Whether the server closes the connection (within ``timeout``) with nothing more."""
        try:
            data = await asyncio.wait_for(self.reader.read(1), timeout)
        except ConnectionError:
            return True
        return data == b""

    def close(self) -> None:
        self.writer.close()
