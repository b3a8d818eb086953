"""``subscriptions/listen`` over Streamable HTTP: the engine's listen stream
(:mod:`tornado_mcp.engine.listen`) as a long-lived SSE response.

The request is admitted by the engine (every bound checked before anything is kept), the
acknowledgement is the response's first event, and the stream ends with its final result
when the transport closes it, or when the client closes the connection.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.listen import admit, close_stream, listen_cap_reached, open_stream

if TYPE_CHECKING:
    from .exchange import Exchange


async def listen(h: Exchange, message: dict[str, Any], params: dict[str, Any]) -> None:
    t = h.transport
    admission = admit(t.engine, message, params, h.principal)
    opts = t.options
    cap = opts.max_listen_subscriptions
    if cap is not None and not await t.reserve("listen_streams"):  # cluster-wide, in Redis
        raise listen_cap_reached(admission.listen_id, cap)
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
        await channel.done
    finally:
        close_stream(t.engine, stream)
