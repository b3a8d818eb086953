"""An existing Tornado application that mounts MCP at /mcp in a few lines.

    python examples/embed_in_app.py --port 8888 [--header-timeout 30] [--body-timeout 60]
                                    [--read-chunk 8192]
    python examples/embed_in_app.py --unix-socket /run/app.sock   # instead of a port

The app keeps its own routes (``/`` and ``/api/greeting``); the MCP endpoint shares its
IOLoop, its server and its port.  Once listening it prints
``MCP endpoint: http://127.0.0.1:PORT/mcp``; ``--port 0`` binds an ephemeral port and that
line reports it.  With ``--unix-socket PATH`` the app is served on that Unix domain socket
instead (mode 0600, removed on shutdown) and the line reads
``MCP endpoint: http+unix://<PATH percent-encoded>/mcp``.
The app owns its ``HTTPServer``, so the HTTP server's own bounds are set here, where
it is started (see docs/limits.md): Tornado's defaults keep a connection an hour for its
headers and forever for its body.  The body's bound is the endpoint's ``body_timeout``
option, which it keeps without Tornado's per-request timer; the headers' is the HTTP
server's ``idle_connection_timeout``.  ``chunk_size`` is the HTTP server's read size:
Tornado zeroes a fresh buffer that large for every read, and 8 KiB instead of its 64 KiB
makes a small JSON-RPC request about a tenth cheaper (docs/performance.md).  The endpoint
is one of the app's own handlers: the app's settings, ``log_function`` and any
instrumentation of its handlers see MCP requests as they see the others.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

import tornado.httpserver
import tornado.netutil
import tornado.web

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tornado_mcp import Server, Transport
from tornado_mcp.transport import unixsocket

GREETINGS = {"en": "Hello", "fr": "Bonjour", "de": "Hallo"}


class HomeHandler(tornado.web.RequestHandler):
    def get(self) -> None:
        self.write("This app also speaks MCP at /mcp.\n")


class GreetingHandler(tornado.web.RequestHandler):
    def get(self) -> None:
        lang = self.get_argument("lang", "en")
        self.write({"greeting": GREETINGS.get(lang, GREETINGS["en"])})


# --- the MCP part: a server, one tool, one transport --------------------------------------
mcp = Server("greeter", version="1.0.0")


@mcp.tool()
def greet(name: str, lang: str = "en") -> str:
    """Greet someone in a language (en, fr, de)."""
    return f"{GREETINGS.get(lang, GREETINGS['en'])}, {name}!"


async def main(port: int, header_timeout: float = 30.0, body_timeout: float = 60.0,
               unix_socket: str | None = None, read_chunk: int = 8192) -> None:
    unix = unixsocket.bind_or_exit(unix_socket, 4096) if unix_socket else None
    transport = Transport(mcp, max_sessions=1000, body_timeout=body_timeout)
    app = tornado.web.Application([
        (r"/", HomeHandler),
        (r"/api/greeting", GreetingHandler),
        *transport.routes("/mcp"),  # <- the one line that mounts MCP
    ])
    server = tornado.httpserver.HTTPServer(
        app, idle_connection_timeout=header_timeout,  # headers, and idle keep-alive
        chunk_size=read_chunk)  # bytes read at once (Tornado's default: 64 KiB)
    if unix is not None:  # the same app on a Unix domain socket
        server.add_socket(unix[0])
        base = unixsocket.url(unix_socket or "", "")
    else:  # a burst of connections waits in the backlog, is not refused
        sockets = tornado.netutil.bind_sockets(port, address="127.0.0.1", backlog=4096)
        server.add_sockets(sockets)
        port = sockets[0].getsockname()[1]  # port 0: the one the kernel chose
        base = f"http://127.0.0.1:{port}"
    print(f"app: {base}/", flush=True)
    print(f"MCP endpoint: {base}/mcp", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    server.stop()
    await transport.close()
    if unix is not None:
        unix[0].close()
        unixsocket.remove(unix_socket or "", unix[1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8888)
    parser.add_argument("--unix-socket", default=None, metavar="PATH",
                        help="serve on this Unix domain socket instead of the port")
    parser.add_argument("--header-timeout", type=float, default=30.0, metavar="SECONDS",
                        help="close a connection whose request headers take longer, or that "
                             "stays idle between requests longer (default: 30)")
    parser.add_argument("--body-timeout", type=float, default=60.0, metavar="SECONDS",
                        help="close a connection whose request body takes longer "
                             "(default: 60)")
    parser.add_argument("--read-chunk", type=int, default=8192, metavar="BYTES",
                        help="bytes read from a connection at once (default: 8192; "
                             "Tornado's is 65536)")
    args = parser.parse_args()
    asyncio.run(main(args.port, args.header_timeout, args.body_timeout, args.unix_socket,
                     args.read_chunk))
