"""MCP's Streamable HTTP transport on Tornado, both protocol eras on one endpoint.

    server = Server("demo")
    transport = Transport(server, max_sessions=1000)
    app = tornado.web.Application([*transport.routes("/mcp"), (r"/", MainHandler)])

The package, one concern a module:

* :mod:`.core`: :class:`Transport`, what an endpoint holds (sessions, streams, options,
  counters), its public API, and the small interface its handlers call.
* :mod:`.handler`: :class:`MCPHandler`, the Tornado adapter: hooks, the body limit and
  refusals before the body is read, choosing the era of a POST, writing responses.
* :mod:`.legacy`: the 2025 era: ``initialize``, sessions, GET and DELETE, batches.
* :mod:`.modern`: the 2026-07-28 era: the envelope, routing headers, the status ladder.
* :mod:`.listen`: ``subscriptions/listen`` streams.
* :mod:`.request`: running one request in either era, and the channel a ``Context``
  uses to reach its client (notifications, server-to-client requests).
* :mod:`.headers`, :mod:`.security`, :mod:`.linger`, :mod:`.snapshot`: header parsing,
  DNS-rebinding checks, the lingering close, and building a
  :class:`~tornado_mcp.Snapshot` (message shapes and errors are the protocol's:
  :mod:`..protocol.jsonrpc`).
"""

from .core import Transport
from .handler import MCPHandler

__all__ = ["MCPHandler", "Transport"]
