"""A TCP proxy a test controls, between one server process and the redis-server (which
listens on a Unix socket): :meth:`Proxy.cut` closes every connection through it and
refuses new ones (a network partition of that one process), :meth:`Proxy.restore` lets
connections through again.  It runs its own event loop in a thread, so it keeps relaying
while the test blocks (starting a server process waits for its port).  :meth:`Proxy.hold`
makes new connections wait (accepted, nothing relayed: a Redis that is slow to answer)
until :meth:`Proxy.release`."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

START_TIMEOUT_S = 10.0


class Proxy:
    def __init__(self, unix_path: str) -> None:
        self.unix_path = unix_path
        self.cut_off = False
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._released = asyncio.Event()
        self._released.set()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._accept, "127.0.0.1", 0), self._loop
        ).result(START_TIMEOUT_S)
        self.port = self._server.sockets[0].getsockname()[1]

    def _call(self, fn: object) -> None:
        async def run() -> None:
            fn()  # type: ignore[operator]
        asyncio.run_coroutine_threadsafe(run(), self._loop).result(START_TIMEOUT_S)

    def cut(self) -> None:
        """Close every connection through the proxy, and refuse new ones."""
        self._call(self._cut)

    def _cut(self) -> None:
        self.cut_off = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def restore(self) -> None:
        self._call(lambda: setattr(self, "cut_off", False))

    def hold(self) -> None:
        """New connections are accepted and wait: nothing reaches Redis until release()."""
        self._call(self._released.clear)

    def release(self) -> None:
        self._call(self._released.set)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.transport.abort()
            return
        await self._released.wait()
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self.unix_path)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(dst)
            dst.transport.abort()

    def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)


@contextlib.contextmanager
def proxy_to(unix_path: str) -> Iterator[Proxy]:
    proxy = Proxy(unix_path)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.close()
