"""The lingering close: how a refusal is answered before the body it refuses is read.

Closing a socket while the peer is still sending makes the peer's kernel answer the
unsent data with a reset, which can swallow the response we just wrote.  So the refusal
is written, our sending side shut, and whatever the peer still sends is discarded for a
bounded time and amount before the connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from http.client import responses as HTTP_REASONS

from tornado.iostream import IOStream, StreamClosedError

LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024


async def linger_close(stream: IOStream, response: bytes) -> None:
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


def raw_response(status: int, json_body: bytes) -> bytes:
    """A complete HTTP/1.1 response carrying ``json_body``, closing the connection."""
    head = (f"HTTP/1.1 {status} {HTTP_REASONS.get(status, 'Error')}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(json_body)}\r\n"
            "Connection: close\r\n\r\n").encode("latin-1")
    return head + json_body
