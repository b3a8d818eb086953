"""The listen index: which ``subscriptions/listen`` streams want which notification.

Matching costs the same however many URIs a stream named: list-changed kinds and resource
URIs are both indexed (kind -> streams, URI -> streams), so a ``resources/updated`` looks
up one set.  Each stream's message is the shared notification bytes with that stream's
subscription id spliced in, so a fan-out encodes the JSON once.  Delivery only queues on
each stream's bounded channel (an SSE response over HTTP, the pipe over stdio: a
:class:`~tornado_mcp.server.channels.StreamChannel`); nothing here waits on a peer.  What
a channel is handed is one encoded JSON-RPC message; each channel frames it for its wire
(an SSE event, a line).

A stream enters the index only after its acknowledgement is queued, so no notification can
ever precede the acknowledgement.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

from ..protocol import (
    META_SUBSCRIPTION_ID,
    PROMPTS_LIST_CHANGED,
    RESOURCES_LIST_CHANGED,
    RESOURCES_UPDATED,
    TOOLS_LIST_CHANGED,
    jsonio,
)
from ..protocol.identity import ANONYMOUS, Principal
from ..server.channels import StreamChannel

#: The list-changed notifications, each with the listen filter flag that asks for it.
LIST_CHANGED = {
    TOOLS_LIST_CHANGED: "toolsListChanged",
    PROMPTS_LIST_CHANGED: "promptsListChanged",
    RESOURCES_LIST_CHANGED: "resourcesListChanged",
}
LISTEN_METHODS = frozenset((*LIST_CHANGED, RESOURCES_UPDATED))


def change_key(method: str, params: dict[str, Any] | None) -> Any:
    """What makes two change notifications the same change (see ``SSEChannel.send``):
    the method, and for ``resources/updated`` the URI. ``None`` for anything else."""
    if method == RESOURCES_UPDATED:
        return (method, params.get("uri") if params is not None else None)
    return method if method in LIST_CHANGED else None


class ListenStream:
    """One acknowledged ``subscriptions/listen`` stream."""

    __slots__ = ("_sid", "acknowledged", "channel", "flags", "id", "opened_at", "principal",
                 "subscription_id", "uri_bytes", "uris")

    def __init__(self, subscription_id: Any, channel: StreamChannel, flags: frozenset[str],
                 uris: frozenset[str], uri_bytes: int, principal: Principal = ANONYMOUS
                 ) -> None:
        self.id = secrets.token_hex(8)
        self.subscription_id = subscription_id
        self.channel = channel
        self.flags = flags  # honored list-changed members, e.g. {"toolsListChanged"}
        self.uris = uris  # immutable once stored
        self.uri_bytes = uri_bytes
        self.opened_at = time.time()
        self.acknowledged = False
        self.principal = principal  # who opened it
        self._sid = jsonio.dumps_retained(subscription_id)

    def honored(self) -> dict[str, Any]:
        filt: dict[str, Any] = {flag: True for flag in sorted(self.flags)}
        return filt

    def final_result(self) -> bytes:
        """The stream's last message: its request's result."""
        return (b'{"jsonrpc":"2.0","id":' + self._sid
                + b',"result":{"resultType":"complete","_meta":{"'
                + META_SUBSCRIPTION_ID.encode() + b'":' + self._sid + b"}}}")


def _frame_parts(method: str, params: dict[str, Any] | None) -> tuple[bytes, bytes]:
    rest = {k: v for k, v in (params or {}).items() if k != "_meta"}
    head = (b'{"jsonrpc":"2.0","method":' + jsonio.dumps(method)
            + b',"params":{"_meta":{"' + META_SUBSCRIPTION_ID.encode() + b'":')
    tail = b"}" + (b"," + jsonio.dumps(rest)[1:] if rest else b"}") + b"}"
    return head, tail


class ListenIndex:
    """The acknowledged listen streams, indexed by the list-changed flags and the resource
    URIs they asked for, so a notification finds its streams in one lookup."""

    def __init__(self) -> None:
        self._streams: dict[str, ListenStream] = {}
        self._by_flag: dict[str, set[ListenStream]] = {f: set() for f in LIST_CHANGED.values()}
        #: URI -> the one stream naming it, or the set of them when several do (a set per
        #: URI would cost more than the URI itself: most URIs have one watcher).
        self._by_uri: dict[str, ListenStream | set[ListenStream]] = {}

    def __len__(self) -> int:
        return len(self._streams)

    def __iter__(self) -> Iterator[ListenStream]:
        return iter(list(self._streams.values()))

    def get(self, stream_id: str) -> ListenStream | None:
        return self._streams.get(stream_id)

    def add(self, stream: ListenStream) -> None:
        self._streams[stream.id] = stream
        for flag in stream.flags:
            self._by_flag[flag].add(stream)
        by_uri = self._by_uri
        for uri in stream.uris:
            holder = by_uri.get(uri)
            if holder is None:
                by_uri[uri] = stream
            elif isinstance(holder, set):
                holder.add(stream)
            elif holder is not stream:
                by_uri[uri] = {holder, stream}

    def remove(self, stream: ListenStream) -> bool:
        if self._streams.pop(stream.id, None) is None:
            return False
        for flag in stream.flags:
            self._by_flag[flag].discard(stream)
        by_uri = self._by_uri
        for uri in stream.uris:
            holder = by_uri.get(uri)
            if holder is stream:
                del by_uri[uri]
            elif isinstance(holder, set):
                holder.discard(stream)
                if len(holder) == 1:
                    by_uri[uri] = next(iter(holder))
        return True

    def publish(self, method: str, params: dict[str, Any] | None) -> int:
        """Deliver to every matching stream; return how many took it."""
        flag = LIST_CHANGED.get(method)
        targets: set[ListenStream] | tuple[ListenStream, ...]
        if flag is not None:
            targets = self._by_flag[flag]
        elif method == RESOURCES_UPDATED and params is not None:
            holder = self._by_uri.get(str(params.get("uri")))
            if holder is None:
                return 0
            targets = holder if isinstance(holder, set) else (holder,)
        else:
            return 0
        if not targets:
            return 0
        head, tail = _frame_parts(method, params)
        key = change_key(method, params)
        delivered = 0
        for stream in list(targets):
            if stream.channel.send(head + stream._sid + tail, key):
                delivered += 1
        return delivered
