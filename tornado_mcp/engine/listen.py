"""``subscriptions/listen`` (2026-07-28), for every transport: a long-lived stream of the
notifications a client asked for.

:func:`admit` validates and bounds the request before anything is kept (its id, the number
and bytes of resource URIs, the task ids, the scopes of what it watches, the number of open
streams) and raises :class:`~tornado_mcp.protocol.errors.MCPError` for a bad request,
:class:`~tornado_mcp.protocol.errors.Refused` past a bound (each transport maps them to
its wire).
:func:`open_stream` queues the acknowledgement as the stream's first event on the
transport's channel (an SSE response over HTTP, the pipe over stdio), and only then
registers the stream, so no notification can precede the acknowledgement.  The stream ends
with its final result when the transport closes it; :func:`close_stream` forgets it.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    jsonio,
)
from ..protocol.auth_errors import AuthError
from ..protocol.errors import MCPError, Refused
from ..protocol.identity import Principal
from ..protocol.jsonrpc import valid_id
from ..protocol.shapes import SUBSCRIPTION_FILTER, load
from ..server.channels import StreamChannel
from ..tasks.methods import principal_owner
from .listen_index import ListenStream
from .task_watch import task_ids

if TYPE_CHECKING:
    from .engine import Engine

#: A listen stream keeps its request id for its whole life, so the id is bounded too.
MAX_LISTEN_ID_LENGTH = 256
#: Filter flag -> the server capability that must declare ``listChanged`` for it.
FLAG_CAPABILITIES = (("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
                     ("resourcesListChanged", "resources"))
URIS_FIELD = "subscriptions/listen `resourceSubscriptions`"


@dataclass(frozen=True, slots=True)
class Admission:
    """A listen request that passed every check: what its stream will watch."""

    listen_id: Any
    flags: frozenset[str]
    uris: list[str]
    watched: list[str]
    principal: Principal


def admit(engine: Engine, message: dict[str, Any], params: dict[str, Any],
          principal: Principal) -> Admission:
    """Check a ``subscriptions/listen`` request against the limits: ``MCPError`` for a
    bad request, ``Refused`` past a bound, ``AuthError`` for a resource the caller may not
    read (the transport answers each with the request's id)."""
    opts = engine.options
    listen_id = message.get("id")
    if not valid_id(listen_id):
        raise MCPError(INVALID_REQUEST, "Invalid Request: subscriptions/listen requires an id")
    if isinstance(listen_id, str) and len(listen_id) > MAX_LISTEN_ID_LENGTH:
        raise MCPError(INVALID_REQUEST, "Invalid Request: subscriptions/listen id exceeds "
                                        f"{MAX_LISTEN_ID_LENGTH} characters")
    notifications = params.get("notifications")
    if not isinstance(notifications, dict):
        raise MCPError(INVALID_PARAMS, "Invalid params: subscriptions/listen requires "
                                       "a `notifications` filter object")
    if "resourceSubscriptions" in notifications:
        subs = notifications["resourceSubscriptions"]
        if not isinstance(subs, list) or not all(isinstance(u, str) for u in subs):
            raise MCPError(INVALID_PARAMS,
                           f"Invalid params: {URIS_FIELD} must be an array of strings")
    filt = load(SUBSCRIPTION_FILTER, notifications, "subscriptions/listen `notifications`")
    watched = task_ids(notifications, (params.get("_meta") or {}).get(META_CAPABILITIES))
    uris = list(dict.fromkeys(filt.get("resourceSubscriptions") or ()))
    rules = engine.server.scope_rules
    if rules.active:  # watching a resource needs what reading it needs (AuthError)
        try:
            for uri in uris[:MAX_RESOURCE_SUBSCRIPTION_URIS]:
                rules.authorize_target(RESOURCES_READ, uri, principal)
        except AuthError as exc:
            exc.request_id = listen_id
            raise
    if len(uris) > MAX_RESOURCE_SUBSCRIPTION_URIS:
        raise Refused(f"Invalid params: {URIS_FIELD} exceeds "
                      f"{MAX_RESOURCE_SUBSCRIPTION_URIS} URIs", code=INVALID_PARAMS,
                      refusal=Refusal.RESOURCE_SUBSCRIPTION_URIS)
    bound = opts.max_resource_subscription_bytes
    if bound is not None and sum(len(u.encode("utf-8")) for u in uris) > bound:
        raise Refused(f"Invalid params: {URIS_FIELD} exceeds {bound} bytes",
                      code=INVALID_PARAMS, refusal=Refusal.MAX_RESOURCE_SUBSCRIPTION_BYTES)
    cap = opts.max_listen_subscriptions
    if cap is not None and len(engine.listen_index) + engine.remote_count("listen_streams") >= cap:
        raise listen_cap_reached(cap)
    server = engine.server
    flags = frozenset(flag for flag, capability in FLAG_CAPABILITIES
                      if filt.get(flag) is True and server.has_capability(capability,
                                                                         "listChanged"))
    honored_uris = uris if uris and server.has_capability("resources", "subscribe") else []
    return Admission(listen_id, flags, honored_uris, watched, principal)


def answer_id(message: dict[str, Any]) -> Any:
    """The id a refusal of the listen request ``message`` answers with: its own, unless
    it is not a valid id or longer than :data:`MAX_LISTEN_ID_LENGTH` (never echoed)."""
    listen_id = message.get("id")
    if not valid_id(listen_id) or (isinstance(listen_id, str)
                                   and len(listen_id) > MAX_LISTEN_ID_LENGTH):
        return None
    return listen_id


def listen_cap_reached(cap: int) -> Refused:
    """The refusal of a listen stream over ``max_listen_subscriptions``."""
    return Refused("Service unavailable: maximum concurrent subscriptions/listen streams "
                   f"({cap}) reached", code=INTERNAL_ERROR,
                   refusal=Refusal.MAX_LISTEN_SUBSCRIPTIONS)


def open_stream(engine: Engine, admission: Admission,
                channel: StreamChannel) -> ListenStream | None:
    """Acknowledge ``admission`` on ``channel`` and register its stream; ``None`` when the
    channel closed before the acknowledgement could be queued."""
    uris = admission.uris
    stream = ListenStream(admission.listen_id, channel, admission.flags, frozenset(uris),
                          sum(len(u.encode("utf-8")) for u in uris), admission.principal)
    honored: dict[str, Any] = stream.honored()
    if uris:
        honored["resourceSubscriptions"] = uris
    if admission.watched:
        honored["taskIds"] = admission.watched
    channel.send(jsonio.dumps({"jsonrpc": "2.0", "method": SUBSCRIPTIONS_ACKNOWLEDGED,
                               "params": {"_meta": {META_SUBSCRIPTION_ID: admission.listen_id},
                                          "notifications": honored}}))
    if channel.closed:
        return None
    stream.acknowledged = True
    engine.listen_index.add(stream)  # only now can a notification reach it: the ack is queued
    engine.watchers.add(stream, admission.watched, principal_owner(admission.principal))
    return stream


def close_stream(engine: Engine, stream: ListenStream) -> None:
    """Forget ``stream`` (idempotent): it receives nothing more."""
    engine.listen_index.remove(stream)
    engine.watchers.remove(stream)
