"""The lingering close: how a refusal is answered before the body it refuses is read.

Closing a socket while the peer is still sending makes the peer's kernel answer the
unsent data with a reset, which can swallow the response we just wrote.  So the refusal
is written (through Tornado, as any answer: :func:`.seams.linger_on_finish`), our sending
side shut once it is sent, and whatever the peer still sends is discarded for a bounded
time and amount before the connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

from tornado.iostream import IOStream, StreamClosedError

LINGER_SECONDS = 2.0
LINGER_BYTES = 64 * 1024 * 1024


async def linger_close(stream: IOStream) -> None:
    """Wait until what was written to ``stream`` is sent, shut our sending side, discard
    what the peer still sends (at most ``LINGER_BYTES`` for ``LINGER_SECONDS``), then
    close."""
    try:
        await stream.write(b"")  # resolves once everything written before is sent
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
