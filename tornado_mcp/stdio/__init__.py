"""The same :class:`~tornado_mcp.Server` over stdio, for desktop clients that launch it.

    from tornado_mcp import Principal, Server
    from tornado_mcp.stdio import run

    server = Server("notes")
    ...
    if __name__ == "__main__":
        run(server, principal=Principal("alice", scopes=frozenset({"notes:write"})))

or, with no code: ``python -m tornado_mcp stdio package.module:server`` (the attribute is a
``Server``, or a function of no arguments that returns one; ``path/to/file.py:attr``
works too).

The MCP stdio transport: newline-delimited JSON-RPC messages, one per line, requests and
notifications on standard input, responses and the server's own messages on standard
output, nothing else on standard output.  Logging goes to standard error, and so does
anything the server's code ``print``s (standard output is the protocol's alone).

Requests run through the same :class:`~tornado_mcp.engine.engine.Engine` as over HTTP, so
the same promises hold: the server's and the connection's middleware and the per-principal
rate limit, scopes (the caller is the ``principal`` the embedder passes; by default the
anonymous caller, so a ``scopes=`` tool is refused until the embedder says who the local
user is), plain ``def`` handlers in the bounded pool off the event loop, tasks (the
2026-07-28 extension and the 2025-11-25 experimental tasks), the same errors for the same
mistakes, and every option of :class:`~tornado_mcp.Options` that is not HTTP.

* Legacy era: ``initialize`` opens the one session of the process, with everything the
  HTTP legacy era offers a handler: progress and log notifications, sampling,
  elicitation, roots and ping requests to the client, ``notifications/cancelled``,
  list-changed notifications, resource updates from ``session.notify_resources_updated``,
  task status notifications, ``logging/setLevel``.  The pipe plays the part of the
  session's GET stream.
* 2026-07-28: a request whose ``params._meta`` carries the protocol version is served
  statelessly, as over HTTP (no ``initialize``; ``server/discover``; input-required
  results instead of server-to-client requests), and ``subscriptions/listen`` opens a
  listen stream multiplexed on the pipe: acknowledged first, each notification tagged
  with its subscription id, ended with its final result at end of input (or dropped by
  ``notifications/cancelled`` naming it), bounded by the same limits as over HTTP.
* Bounds: a line longer than ``max_line_bytes`` is never held (it is skipped up to its
  newline and answered with an error); at most ``max_in_flight`` requests run at once.
* End of input is stdio's SIGTERM: requests and task runs in flight get
  ``shutdown_grace`` seconds to finish and be answered, listen streams get their final
  result, and what is left is cancelled.

No Tornado web machinery is involved: this module needs only asyncio.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import logging
import os
import sys
from typing import Any, BinaryIO

from ..protocol.identity import ANONYMOUS, Principal
from ..server.server import Server
from .connection import MAX_IN_FLIGHT as MAX_IN_FLIGHT
from .connection import MAX_LINE_BYTES as MAX_LINE_BYTES
from .connection import StdioConnection

__all__ = ["StdioConnection", "load_server", "run", "serve"]

_READ_CHUNK = 64 * 1024


async def serve(server: Server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                **limits: Any) -> None:
    """Serve ``server`` on ``stdin``/``stdout`` (the process's own by default) until the
    input ends.  ``limits``: the keyword arguments of :class:`StdioConnection`
    (``principal``, ``options`` or option keywords, ``middleware``, ``max_line_bytes``,
    ``max_in_flight``, ``request_timeout``)."""
    loop = asyncio.get_running_loop()
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer

    def write(line: bytes) -> None:
        try:
            sink.write(line)
            sink.flush()
        except (BrokenPipeError, ValueError):
            pass  # the client is gone; end of input follows

    conn = StdioConnection(server, write, **limits)
    fd = source.fileno()
    try:
        while True:
            chunk = await loop.run_in_executor(None, os.read, fd, _READ_CHUNK)
            if not chunk:
                break
            conn.feed(chunk)
    finally:
        await conn.close()


def load_server(target: str) -> Server:
    """The :class:`Server` named by ``module:attribute`` or ``path/to/file.py:attribute``
    (the attribute may also be a function of no arguments returning one)."""
    where, sep, attribute = target.rpartition(":")
    if not sep or not where or not attribute:
        raise ValueError(f"{target!r} is not module:attribute")
    if where.endswith(".py"):
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(where))[0], where)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {where}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(where)
    value = getattr(module, attribute)
    if not isinstance(value, Server) and callable(value):
        value = value()
    if not isinstance(value, Server):
        raise TypeError(f"{target} is not a tornado_mcp.Server (got {type(value).__name__})")
    return value


def run(server: Server, *, principal: Principal = ANONYMOUS, log_level: str = "WARNING",
        **limits: Any) -> None:
    """Serve ``server`` over this process's stdin and stdout until the client closes
    stdin, every request made by ``principal`` (the local user, with the scopes the
    embedder grants; anonymous by default).  ``limits``: as for :func:`serve`.  Logging
    goes to stderr; so does anything the code prints."""
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    protocol_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(server, sys.stdin.buffer, protocol_out, principal=principal,
                              **limits))
    finally:
        sys.stdout = sys.__stdout__
