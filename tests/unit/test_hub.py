"""The listen index: which listen streams a notification reaches, the message each gets
(encoded JSON: the engine frames nothing, each channel frames for its wire), and
``change_key`` (what makes two notifications the same change)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tornado_mcp.engine.listen_index import (
    LIST_CHANGED,
    LISTEN_METHODS,
    ListenIndex,
    ListenStream,
    change_key,
)
from tornado_mcp.protocol import META_SUBSCRIPTION_ID
from tornado_mcp.protocol import RESOURCES_UPDATED as RESOURCE_UPDATED


class Channel:
    """Stands in for an SSEChannel: records what it is sent; ``accept`` is what send returns."""

    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.sent: list[tuple[bytes, Any]] = []

    def send(self, data: bytes, key: Any = None) -> bool:
        self.sent.append((data, key))
        return self.accept


def stream(subscription_id: Any = "s", flags: tuple[str, ...] = (),
           uris: tuple[str, ...] = (), channel: Channel | None = None) -> ListenStream:
    return ListenStream(subscription_id, channel or Channel(),  # type: ignore[arg-type]
                        frozenset(flags), frozenset(uris), sum(len(u) for u in uris))


def sent(s: ListenStream) -> list[dict[str, Any]]:
    """The JSON messages ``s`` was sent (each one encoded message, no framing)."""
    out = []
    for data, _key in s.channel.sent:  # type: ignore[attr-defined]
        assert data.startswith(b"{") and data.endswith(b"}"), data
        out.append(json.loads(data))
    return out


# -- change_key -------------------------------------------------------------------------------

@pytest.mark.parametrize("method", sorted(LIST_CHANGED))
def test_change_key_of_a_list_change_is_its_method(method: str) -> None:
    assert change_key(method, None) == method
    assert change_key(method, {"anything": 1}) == method


def test_change_key_of_a_resource_update_is_method_and_uri() -> None:
    assert change_key(RESOURCE_UPDATED, {"uri": "test://a"}) == (RESOURCE_UPDATED, "test://a")
    assert change_key(RESOURCE_UPDATED, {"uri": "test://a", "_meta": {"x": 1}}) \
        == change_key(RESOURCE_UPDATED, {"uri": "test://a"})
    assert change_key(RESOURCE_UPDATED, {"uri": "test://b"}) != (RESOURCE_UPDATED, "test://a")
    assert change_key(RESOURCE_UPDATED, None) == (RESOURCE_UPDATED, None)


@pytest.mark.parametrize("method", ["notifications/message", "notifications/progress",
                                    "notifications/cancelled", "tools/list"])
def test_change_key_of_anything_else_is_none(method: str) -> None:
    assert change_key(method, {"uri": "test://a"}) is None


def test_listen_methods_are_the_list_changes_and_resource_updates() -> None:
    assert {"notifications/tools/list_changed",
                              "notifications/prompts/list_changed",
                              "notifications/resources/list_changed",
                              "notifications/resources/updated"} == LISTEN_METHODS
    assert LIST_CHANGED == {"notifications/tools/list_changed": "toolsListChanged",
                            "notifications/prompts/list_changed": "promptsListChanged",
                            "notifications/resources/list_changed": "resourcesListChanged"}


# -- ListenStream -------------------------------------------------------------------------------

def test_listen_stream_honored_filter_is_its_flags_sorted() -> None:
    s = stream(flags=("toolsListChanged", "promptsListChanged"))
    assert list(s.honored()) == ["promptsListChanged", "toolsListChanged"]
    assert s.honored() == {"promptsListChanged": True, "toolsListChanged": True}
    assert stream().honored() == {}


@pytest.mark.parametrize("subscription_id", ["L", 7, "quote\"and\\back"])
def test_listen_stream_final_result_carries_its_id_twice(subscription_id: Any) -> None:
    data = stream(subscription_id).final_result()
    assert data.startswith(b"{") and data.endswith(b"}")
    assert json.loads(data) == {
        "jsonrpc": "2.0", "id": subscription_id,
        "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: subscription_id}}}


def test_listen_streams_get_distinct_ids() -> None:
    assert len({stream().id for _ in range(100)}) == 100


# -- ListenIndex ------------------------------------------------------------------------------

def test_list_changed_reaches_exactly_the_streams_with_that_flag() -> None:
    index = ListenIndex()
    tools = stream("t", flags=("toolsListChanged",))
    both = stream("b", flags=("toolsListChanged", "promptsListChanged"))
    none = stream("n", uris=("test://a",))
    for s in (tools, both, none):
        index.add(s)
    assert len(index) == 3
    assert index.publish("notifications/tools/list_changed", None) == 2
    assert index.publish("notifications/prompts/list_changed", None) == 1
    assert index.publish("notifications/resources/list_changed", None) == 0
    assert sent(tools) == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                            "params": {"_meta": {META_SUBSCRIPTION_ID: "t"}}}]
    assert [m["method"] for m in sent(both)] == ["notifications/tools/list_changed",
                                                 "notifications/prompts/list_changed"]
    assert sent(none) == []


def test_resource_updated_reaches_exactly_the_streams_naming_the_uri() -> None:
    index = ListenIndex()
    a = stream(1, uris=("test://a", "test://b"))
    b = stream(2, uris=("test://b",))
    index.add(a)
    index.add(b)
    assert index.publish(RESOURCE_UPDATED, {"uri": "test://a"}) == 1
    assert index.publish(RESOURCE_UPDATED, {"uri": "test://b", "_meta": {"x": 1}}) == 2
    assert index.publish(RESOURCE_UPDATED, {"uri": "test://c"}) == 0
    assert index.publish(RESOURCE_UPDATED, None) == 0
    assert sent(a) == [
        {"jsonrpc": "2.0", "method": RESOURCE_UPDATED,
         "params": {"_meta": {META_SUBSCRIPTION_ID: 1}, "uri": "test://a"}},
        {"jsonrpc": "2.0", "method": RESOURCE_UPDATED,
         "params": {"_meta": {META_SUBSCRIPTION_ID: 1}, "uri": "test://b"}}]
    assert sent(b) == [{"jsonrpc": "2.0", "method": RESOURCE_UPDATED,
                        "params": {"_meta": {META_SUBSCRIPTION_ID: 2}, "uri": "test://b"}}]


def test_frames_carry_the_change_key() -> None:
    index = ListenIndex()
    s = stream(flags=("toolsListChanged",), uris=("test://a",))
    index.add(s)
    index.publish("notifications/tools/list_changed", None)
    index.publish(RESOURCE_UPDATED, {"uri": "test://a"})
    assert [key for _data, key in s.channel.sent] == [  # type: ignore[attr-defined]
        "notifications/tools/list_changed", (RESOURCE_UPDATED, "test://a")]


@pytest.mark.parametrize("method", ["notifications/message", "notifications/progress",
                                    "notifications/tools/list_changed_not"])
def test_other_notifications_reach_no_stream(method: str) -> None:
    index = ListenIndex()
    s = stream(flags=tuple(LIST_CHANGED.values()), uris=("test://a",))
    index.add(s)
    assert index.publish(method, {"uri": "test://a"}) == 0
    assert s.channel.sent == []  # type: ignore[attr-defined]


def test_publish_counts_only_streams_that_took_the_frame() -> None:
    index = ListenIndex()
    taking = stream("ok", flags=("toolsListChanged",))
    closed = stream("gone", flags=("toolsListChanged",), channel=Channel(accept=False))
    index.add(taking)
    index.add(closed)
    assert index.publish("notifications/tools/list_changed", None) == 1
    assert len(closed.channel.sent) == 1  # type: ignore[attr-defined]


def test_remove_unindexes_the_stream_and_is_idempotent() -> None:
    index = ListenIndex()
    a = stream("a", flags=("toolsListChanged",), uris=("test://a", "test://shared"))
    b = stream("b", uris=("test://shared",))
    index.add(a)
    index.add(b)
    assert index.get(a.id) is a
    assert index.remove(a) is True
    assert index.remove(a) is False
    assert index.get(a.id) is None
    assert len(index) == 1 and list(index) == [b]
    assert index.publish("notifications/tools/list_changed", None) == 0
    assert index.publish(RESOURCE_UPDATED, {"uri": "test://a"}) == 0
    assert index.publish(RESOURCE_UPDATED, {"uri": "test://shared"}) == 1
    assert index._by_uri == {"test://shared": b}  # one watcher left: the stream, no set
    assert index.remove(b) is True
    assert index._by_uri == {} and len(index) == 0


def test_iterating_is_over_a_copy() -> None:
    index = ListenIndex()
    streams = [stream(i) for i in range(3)]
    for s in streams:
        index.add(s)
    for s in index:
        index.remove(s)
    assert len(index) == 0
