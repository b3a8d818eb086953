"""``subscriptions/listen`` (2026-07-28): a long-lived SSE stream of the notifications a
client asked for.

The request's filter is validated and bounded before anything is kept (its id, the
number and bytes of resource URIs, the number of open streams); the acknowledgement is
the stream's first event, and only after it is queued can a notification reach the
stream.  The stream ends with its final result when the transport closes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..options import MAX_RESOURCE_SUBSCRIPTION_URIS
from ..protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    META_CAPABILITIES,
    META_SUBSCRIPTION_ID,
    RESOURCES_READ,
    SUBSCRIPTIONS_ACKNOWLEDGED,
    Refusal,
)
from ..protocol.errors import MCPError
from ..protocol.shapes import SUBSCRIPTION_FILTER, load
from ..tasks.methods import principal_owner
from ..tasks.watch import task_ids
from .listen_index import ListenStream
from .reply import Reply, valid_id
from .sse import frame

if TYPE_CHECKING:
    from .handler import MCPHandler

#: A listen stream keeps its request id for its whole life, so the id is bounded too.
MAX_LISTEN_ID_LENGTH = 256
#: Filter flag -> the server capability that must declare ``listChanged`` for it.
FLAG_CAPABILITIES = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
                     ("resourcesListChanged", "resources"))
URIS_FIELD = "subscriptions/listen `resourceSubscriptions`"


async def listen(h: MCPHandler, message: dict[str, Any], params: dict[str, Any]) -> None:
    t = h.transport
    opts = t.options
    listen_id = message.get("id")
    if not valid_id(listen_id):
        raise Reply(400, INVALID_REQUEST, "Invalid Request: subscriptions/listen requires an id")
    if isinstance(listen_id, str) and len(listen_id) > MAX_LISTEN_ID_LENGTH:
        raise Reply(400, INVALID_REQUEST, "Invalid Request: subscriptions/listen id exceeds "
                                          f"{MAX_LISTEN_ID_LENGTH} characters")
    notifications = params.get("notifications")
    if not isinstance(notifications, dict):
        raise Reply(400, INVALID_PARAMS, "Invalid params: subscriptions/listen requires "
                                         "a `notifications` filter object", listen_id)
    if "resourceSubscriptions" in notifications:
        subs = notifications["resourceSubscriptions"]
        if not isinstance(subs, list) or not all(isinstance(u, str) for u in subs):
            raise Reply(400, INVALID_PARAMS,
                        f"Invalid params: {URIS_FIELD} must be an array of strings", listen_id)
    try:
        filt = load(SUBSCRIPTION_FILTER, notifications, "subscriptions/listen `notifications`")
        watched = task_ids(notifications, (params.get("_meta") or {}).get(META_CAPABILITIES))
    except MCPError as exc:
        raise Reply(400, exc.code, exc.message, listen_id, exc.data) from None
    uris = list(dict.fromkeys(filt.get("resourceSubscriptions") or ()))
    rules = t.server.scope_rules
    if rules.active:  # watching a resource needs what reading it needs (AuthError: 401/403)
        for uri in uris[:MAX_RESOURCE_SUBSCRIPTION_URIS]:
            rules.authorize_target(RESOURCES_READ, uri, h.principal)
    if len(uris) > MAX_RESOURCE_SUBSCRIPTION_URIS:
        raise Reply(400, INVALID_PARAMS, f"Invalid params: {URIS_FIELD} exceeds "
                                         f"{MAX_RESOURCE_SUBSCRIPTION_URIS} URIs", listen_id,
                    refusal=Refusal.RESOURCE_SUBSCRIPTION_URIS)
    bound = opts.max_resource_subscription_bytes
    if bound is not None and sum(len(u.encode("utf-8")) for u in uris) > bound:
        raise Reply(400, INVALID_PARAMS, f"Invalid params: {URIS_FIELD} exceeds {bound} bytes",
                    listen_id, refusal=Refusal.MAX_RESOURCE_SUBSCRIPTION_BYTES)
    cap = opts.max_listen_subscriptions
    if cap is not None and (len(t.hub) + t.remote_count("listen_streams") >= cap
                            or not await t.reserve("listen_streams")):
        raise Reply(503, INTERNAL_ERROR,
                    "Service unavailable: maximum concurrent subscriptions/listen streams "
                    f"({cap}) reached", listen_id, refusal=Refusal.MAX_LISTEN_SUBSCRIPTIONS)
    server = t.server
    flags = frozenset(flag for flag, capability in FLAG_CAPABILITIES
                      if filt.get(flag) is True and server.has_capability(capability,
                                                                         "listChanged"))
    honored_uris = uris if uris and server.has_capability("resources", "subscribe") else []
    channel = h.open_channel(lambda: opts.listen_keepalive_interval)
    stream = ListenStream(listen_id, channel, flags, frozenset(honored_uris),
                          sum(len(u.encode("utf-8")) for u in honored_uris), h.principal)
    honored: dict[str, Any] = stream.honored()
    if honored_uris:
        honored["resourceSubscriptions"] = honored_uris
    if watched:
        honored["taskIds"] = watched
    channel.send(frame({"jsonrpc": "2.0", "method": SUBSCRIPTIONS_ACKNOWLEDGED,
                        "params": {"_meta": {META_SUBSCRIPTION_ID: listen_id},
                                   "notifications": honored}}))
    if channel.closed:
        return
    stream.acknowledged = True
    t.hub.add(stream)  # only now can a notification reach it: the ack is already queued
    t.tasks.watchers.add(stream, watched, principal_owner(h.principal))
    t.admitted()

    def disconnected() -> None:
        t.hub.remove(stream)
        t.tasks.watchers.remove(stream)
        channel.abort()

    h.on_disconnect = disconnected
    try:
        await channel.done
    finally:
        t.hub.remove(stream)
        t.tasks.watchers.remove(stream)
