"""``subscriptions/listen`` over Streamable HTTP: the engine's listen stream
(:mod:`tornado_mcp.engine.listen`) as a long-lived SSE response.

The request is admitted by the engine (every bound checked before anything is kept), the
acknowledgement is the response's first event, and the stream ends with its final result
when the transport closes it, or when the client closes the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.listen import admit, answer_id, close_stream, listen_cap_reached, open_stream
from ..protocol.errors import MCPError
from . import wire

if TYPE_CHECKING:
    from .flow import RequestFlow


async def listen(h: RequestFlow, message: dict[str, Any], params: dict[str, Any]) -> None:
    t = h.transport
    opts = t.options
    try:
        admission = admit(t.engine, message, params, h.principal)
        cap = opts.max_listen_subscriptions
        if cap is not None and not await t.reserve("listen_streams"):  # cluster-wide
            raise listen_cap_reached(cap)
    except MCPError as exc:  # a bad request, or refused by a bound: the wire map answers
        raise wire.failed(exc, answer_id(message), modern=True) from None
    channel = h.open_channel(lambda: opts.listen_keepalive_interval)
    stream = open_stream(t.engine, admission, channel)
    if stream is None:
        return
    t.admitted()

    def disconnected() -> None:
        close_stream(t.engine, stream)
        channel.abort()

    h.on_disconnect = disconnected
    try:
        await h.stream(channel)
    finally:
        close_stream(t.engine, stream)
