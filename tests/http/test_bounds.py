"""What a client can make the server retain, bounded and accounted for.

A listen stream's ``resourceSubscriptions`` (array of strings; duplicates dropped;
``max_resource_subscription_bytes`` on the UTF-8 bytes of the distinct URIs; at most 1024
URIs always) and its id (at most 256 characters).  A stateful ``initialize``
(``max_initialize_request_bytes`` on the body; at most 1024 JSON values in its params,
whatever the byte bound).  Then a server filled to every limit, checked against the snapshot
API and the documented budget.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    Reply,
    Running,
    Stream,
    acked,
    example_server,
    running,
    wait_until,
)

from tornado_mcp import Server
from tornado_mcp.engine.listen import MAX_LISTEN_ID_LENGTH
from tornado_mcp.introspection import REFUSAL_KINDS
from tornado_mcp.options import MAX_INITIALIZE_PARAMS_VALUES, MAX_RESOURCE_SUBSCRIPTION_URIS
from tornado_mcp.protocol import jsonio

KiB = 1024

pytestmark = pytest.mark.timeout(90)


# -- helpers ----------------------------------------------------------------------------------

@dataclass
class Budget:
    """What the bounds together guarantee (the figures docs/limits.md states)."""

    session_bytes: int | None  # max_sessions x max_initialize_request_bytes
    session_values: int | None  # max_sessions x 1024
    stream_bytes: int | None  # max_listen_subscriptions x max_resource_subscription_bytes
    stream_uris: int | None  # max_listen_subscriptions x 1024


def documented_budget(limits: dict[str, Any]) -> Budget:
    """The retention budget of docs/limits.md, from a snapshot's ``limits``:

    * sessions retain at most ``max_sessions x max_initialize_request_bytes`` bytes and
      ``max_sessions x 1024`` JSON values;
    * listen streams retain at most ``max_listen_subscriptions x
      max_resource_subscription_bytes`` bytes and ``max_listen_subscriptions x 1024`` URIs.

    ``None`` in a factor makes that figure unbounded (``None``).
    """
    def times(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a * b

    sessions = limits["max_sessions"]
    streams = limits["max_listen_subscriptions"]
    return Budget(
        session_bytes=times(sessions, limits["max_initialize_request_bytes"]),
        session_values=times(sessions, MAX_INITIALIZE_PARAMS_VALUES),
        stream_bytes=times(streams, limits["max_resource_subscription_bytes"]),
        stream_uris=times(streams, MAX_RESOURCE_SUBSCRIPTION_URIS))


def initialize_params(zeros: int = 0, pad: int = 0, name: str = "bounds",
                      objects: int = 0) -> dict[str, Any]:
    experimental: dict[str, Any] = {"fill": [0] * zeros}
    if objects:
        experimental["objects"] = [{} for _ in range(objects)]
    return {"protocolVersion": LEGACY,
            "capabilities": {"experimental": experimental},
            "clientInfo": {"name": name, "version": "1.0", "pad": "x" * pad}}


def initialize_body(values: int | None = None, size: int | None = None,
                    request_id: Any = 1, name: str = "bounds") -> tuple[bytes, dict[str, Any]]:
    """An initialize body holding exactly ``values`` JSON values in its params and/or
    exactly ``size`` bytes; returns the body and its params."""
    def build(zeros: int, pad: int) -> tuple[bytes, dict[str, Any]]:
        params = initialize_params(zeros, pad, name)
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                           "params": params}, separators=(",", ":")).encode()
        return body, params

    zeros = 0
    if values is not None:
        zeros = values - jsonio.count_values(build(0, 0)[1])
        assert zeros >= 0
    body, params = build(zeros, 0)
    if size is not None:
        body, params = build(zeros, size - len(body))
        assert len(body) == size
    if values is not None:
        assert jsonio.count_values(params) == values
    return body, params


async def post_initialize(srv: Running, body: bytes) -> Reply:
    return await srv.post(None, raw=body)


def assert_413(reply: Reply, request_id: Any, fragment: str) -> None:
    assert reply.status == 413, (reply.status, reply.body[:300])
    assert reply.json["id"] == request_id
    assert reply.json["error"]["code"] == -32600
    assert fragment in reply.json["error"]["message"], reply.json
    assert "Mcp-Session-Id" not in reply.headers


def assert_no_session(srv: Running) -> None:
    snap = srv.transport.snapshot()
    assert snap.totals.sessions == 0
    assert snap.totals.retained_bytes == 0 and snap.totals.retained_values == 0
    assert snap.sessions == ()
    assert len(srv.transport.sessions) == 0


def uris_of(count: int, prefix: str = "test://r/") -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def utf8_len(uris: list[str]) -> int:
    return sum(len(u.encode("utf-8")) for u in uris)


async def listen_refused(srv: Running, subs: Any, request_id: Any = "L",
                         include_key: bool = True) -> dict[str, Any]:
    notifications: dict[str, Any] = {"resourcesListChanged": True}
    if include_key:
        notifications["resourceSubscriptions"] = subs
    r = await srv.modern("subscriptions/listen", {"notifications": notifications},
                         request_id=request_id)
    assert r.status == 400, (r.status, r.body[:300])
    assert r.json["id"] == request_id
    err: dict[str, Any] = r.json["error"]
    assert err["code"] == -32602
    return err


async def listen_acked(srv: Running, subs: list[str], request_id: Any = "L") -> Stream:
    return await acked(srv, {"resourceSubscriptions": subs}, request_id)


def subscribe_server() -> Server:
    return Server("subs", capabilities={"resources": {"listChanged": True, "subscribe": True}})


def no_subscribe_server() -> Server:
    return Server("nosubs", capabilities={"resources": {"listChanged": True}})


# -- listen filters: the type ---------------------------------------------------------

BAD_SUBSCRIPTIONS = ["test://a", 5, ["test://a", 1], [None], None, [["test://a"]],
                     {"0": "test://a"}]


@pytest.mark.parametrize("make_server", [subscribe_server, no_subscribe_server],
                         ids=["subscribe", "no-subscribe"])
@pytest.mark.parametrize("subs", BAD_SUBSCRIPTIONS,
                         ids=["string", "number", "uri-and-number", "null-element", "null",
                              "nested-array", "object"])
async def test_resource_subscriptions_must_be_an_array_of_strings(make_server: Any,
                                                                   subs: Any) -> None:
    async with running(make_server()) as srv:
        err = await listen_refused(srv, subs)
        assert "array of strings" in err["message"]
        assert len(srv.transport.listen_index) == 0
        assert srv.transport.snapshot().streams == ()


async def test_valid_shapes_are_accepted() -> None:
    async with running(subscribe_server()) as srv:
        empty = await listen_acked(srv, [], "empty")
        assert "resourceSubscriptions" not in empty.messages[0]["params"]["notifications"]
        absent = await srv.listen({"resourcesListChanged": True}, "absent")
        await absent.wait_messages(1)
        assert absent.messages[0]["params"]["notifications"] == {"resourcesListChanged": True}


# -- listen filters: the byte bound -------------------------------------------------------------

async def test_byte_bound_counts_utf8_bytes_not_characters() -> None:
    u1, u2 = "test://café/1", "test://naïve/2"
    assert len(u1.encode()) == len(u1) + 1 and len(u2.encode()) == len(u2) + 1
    bound = utf8_len([u1, u2])
    async with running(subscribe_server(), max_resource_subscription_bytes=bound) as srv:
        at = await listen_acked(srv, [u1, u2], "at")
        assert at.messages[0]["params"]["notifications"]["resourceSubscriptions"] == [u1, u2]
        over = [u1, u2 + "x"]  # one byte over; its characters still fit the bound
        assert sum(len(u) for u in over) < bound < utf8_len(over)
        err = await listen_refused(srv, over, "over")
        assert f"exceeds {bound} bytes" in err["message"]
        assert "resourceSubscriptions" in err["message"]
        snap = srv.transport.snapshot()
        assert snap.refusals["max_resource_subscription_bytes"] == 1
        assert snap.totals.listen_streams == 1
        assert snap.streams[0].uri_bytes == bound and snap.streams[0].uri_count == 2


async def test_duplicates_are_dropped_before_measuring() -> None:
    u = "test://é"
    async with running(subscribe_server(),
                       max_resource_subscription_bytes=len(u.encode())) as srv:
        stream = await listen_acked(srv, [u, u, u], "dups")
        assert stream.messages[0]["params"]["notifications"]["resourceSubscriptions"] == [u]
        info = srv.transport.snapshot().streams[0]
        assert (info.uri_count, info.uri_bytes) == (1, len(u.encode()))
        srv.server.notify_resources_updated(u)
        await stream.wait_messages(2)
        assert stream.messages[1]["params"]["uri"] == u


async def test_duplicates_keep_first_occurrence_order() -> None:
    async with running(subscribe_server()) as srv:
        stream = await listen_acked(srv, ["test://b", "test://a", "test://b", "test://c",
                                          "test://a"])
        assert stream.messages[0]["params"]["notifications"]["resourceSubscriptions"] == [
            "test://b", "test://a", "test://c"]


async def test_byte_bound_none_removes_it() -> None:
    uris = [f"test://big/{i:04d}/" + "p" * 88 for i in range(1000)]  # ~100 KiB
    assert utf8_len(uris) > 64 * KiB
    async with running(subscribe_server(), max_resource_subscription_bytes=None) as srv:
        stream = await listen_acked(srv, uris)
        assert stream.messages[0]["params"]["notifications"]["resourceSubscriptions"] == uris
        assert srv.transport.snapshot().totals.subscription_uri_bytes == utf8_len(uris)
    async with running(subscribe_server()) as srv:  # the default bound refuses the same
        err = await listen_refused(srv, uris)
        assert f"exceeds {64 * KiB} bytes" in err["message"]


# -- listen filters: the URI count bound --------------------------------------------------------

@pytest.mark.parametrize("byte_bound", ["default", None], ids=["default-bytes", "no-bytes"])
async def test_at_most_1024_distinct_uris(byte_bound: Any) -> None:
    options = {} if byte_bound == "default" else {"max_resource_subscription_bytes": None}
    async with running(subscribe_server(), **options) as srv:
        at = uris_of(1024)
        assert utf8_len(uris_of(1025)) < 64 * KiB  # the byte bound is not what refuses
        stream = await listen_acked(srv, [*at, at[0]], "at")  # plus a duplicate
        assert len(stream.messages[0]["params"]["notifications"]["resourceSubscriptions"]) \
            == 1024
        err = await listen_refused(srv, uris_of(1025), "over")
        assert "exceeds 1024 URIs" in err["message"]
        snap = srv.transport.snapshot()
        assert snap.refusals["resource_subscription_uris"] == 1
        assert snap.refusals["max_resource_subscription_bytes"] == 0
        assert snap.totals.listen_streams == 1
        assert snap.totals.subscription_uris == 1024


async def test_bounds_apply_without_the_subscribe_capability() -> None:
    async with running(no_subscribe_server(), max_resource_subscription_bytes=16) as srv:
        err = await listen_refused(srv, ["test://seventeen!"])  # 17 bytes
        assert "exceeds 16 bytes" in err["message"]
        err = await listen_refused(srv, ["test://x", *uris_of(1024, "t://")])
        assert "exceeds 1024 URIs" in err["message"]
        fits = await listen_acked(srv, ["test://sixteen!!"], "fits")  # 16 bytes: at the bound
        assert fits.messages[0]["params"]["notifications"] == {}
        info = srv.transport.snapshot().streams[0]
        assert (info.uri_count, info.uri_bytes) == (0, 0)  # nothing honored, nothing kept
    async with running(no_subscribe_server(), max_resource_subscription_bytes=None) as srv:
        err = await listen_refused(srv, uris_of(1025))
        assert "exceeds 1024 URIs" in err["message"]


async def test_stored_uris_are_an_immutable_set() -> None:
    async with running(subscribe_server()) as srv:
        uris = ["test://a", "test://b", "test://a"]
        await listen_acked(srv, uris, "set")
        (stream,) = list(srv.transport.listen_index)
        assert isinstance(stream.uris, frozenset)
        assert stream.uris == frozenset({"test://a", "test://b"})
        with pytest.raises(AttributeError):
            stream.uris.add("test://c")  # type: ignore[attr-defined]
        detail = srv.transport.snapshot(stream_uris=True).streams[0]
        assert detail.uris == ("test://a", "test://b")
        assert srv.transport.snapshot().streams[0].uris == ()  # only when asked for


# -- listen: the id --------------------------------------------------------------------------

async def test_listen_id_of_256_characters_is_accepted_and_257_refused() -> None:
    async with running(Server("x")) as srv:
        at = await srv.listen({}, request_id="i" * MAX_LISTEN_ID_LENGTH)
        try:
            acked = await at.wait_messages(1)
            assert acked[0]["method"] == "notifications/subscriptions/acknowledged"
            assert len(srv.transport.listen_index) == 1
        finally:
            at.close()
        await wait_until(lambda: len(srv.transport.listen_index) == 0)
        over = await srv.modern("subscriptions/listen", {"notifications": {}},
                                request_id="i" * (MAX_LISTEN_ID_LENGTH + 1))
        assert over.status == 400
        assert over.json["error"]["code"] == -32600
        assert f"{MAX_LISTEN_ID_LENGTH} characters" in over.json["error"]["message"]
        assert len(srv.transport.listen_index) == 0  # nothing retained for the refusal


async def test_a_huge_listen_id_is_refused_and_nothing_is_held() -> None:
    async with running(Server("x")) as srv:
        stream = await srv.listen({}, request_id="i" * 1_000_000)
        await stream.wait_closed()
        assert stream.status == 400
        assert stream.messages == [] and json.loads(stream.raw)["error"]["code"] == -32600
        assert len(srv.transport.listen_index) == 0


# -- initialize: the byte bound -------------------------------------------------------

async def test_initialize_exactly_at_and_one_byte_over_the_byte_bound() -> None:
    async with running(example_server(), max_initialize_request_bytes=4096) as srv:
        over, _ = initialize_body(size=4097, request_id="over-1")
        r = await post_initialize(srv, over)
        assert_413(r, "over-1", "initialize request body exceeds 4096 bytes")
        assert_no_session(srv)
        assert srv.transport.snapshot().refusals["max_initialize_request_bytes"] == 1
        at, _ = initialize_body(size=4096, request_id=2)
        ok = await post_initialize(srv, at)
        assert ok.status == 200, ok.body
        assert ok.headers.get("Mcp-Session-Id")
        snap = srv.transport.snapshot()
        assert snap.totals.sessions == 1
        assert snap.sessions[0].client_name == "bounds"
        assert snap.refusals["max_initialize_request_bytes"] == 1
        # The refused one never existed: one more refusal changes nothing else.
        r = await post_initialize(srv, over)
        assert r.status == 413
        assert srv.transport.snapshot().totals.sessions == 1
        assert srv.transport.snapshot().refusals["max_initialize_request_bytes"] == 2


async def test_initialize_byte_bound_none_removes_it() -> None:
    async with running(example_server(), max_initialize_request_bytes=None) as srv:
        body, _ = initialize_body(size=128 * KiB)
        r = await post_initialize(srv, body)
        assert r.status == 200, r.body[:200]
        info = srv.transport.snapshot().sessions[0]
        assert info.retained_bytes > 127 * KiB


async def test_stateless_mode_ignores_both_initialize_bounds() -> None:
    async with running(example_server(), stateless=True,
                       max_initialize_request_bytes=1024) as srv:
        big, _ = initialize_body(size=8 * KiB)
        r = await post_initialize(srv, big)
        assert r.status == 200, r.body[:200]
        assert "Mcp-Session-Id" not in r.headers
        many, _ = initialize_body(values=4096)
        r = await post_initialize(srv, many)
        assert r.status == 200, r.body[:200]
        assert_no_session(srv)
        refusals = srv.transport.snapshot().refusals
        assert refusals["max_initialize_request_bytes"] == 0
        assert refusals["initialize_params_values"] == 0


async def test_regular_requests_are_governed_by_max_request_bytes_alone() -> None:
    async with running(example_server(), max_initialize_request_bytes=1024,
                       max_request_bytes=16 * KiB) as srv:
        sid = await srv.initialize()
        text = "y" * (4 * KiB)
        r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "echo", "arguments": {"text": text}}},
                           session=sid)
        assert r.status == 200
        assert r.messages[-1]["result"]["content"][0]["text"] == text
        modern = await srv.modern("tools/call", {"name": "echo", "arguments": {"text": text}})
        assert modern.status == 200
        too_big = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                  "params": {"name": "echo",
                                             "arguments": {"text": "z" * (17 * KiB)}}},
                                 session=sid)
        assert too_big.status == 413
        assert "request body exceeds 16384 bytes" in too_big.json["error"]["message"]
        assert srv.transport.snapshot().refusals["max_request_bytes"] == 1
        assert srv.transport.snapshot().refusals["max_initialize_request_bytes"] == 0


async def test_initialize_over_max_request_bytes_with_no_initialize_bound() -> None:
    async with running(example_server(), max_initialize_request_bytes=None,
                       max_request_bytes=8 * KiB) as srv:
        body, _ = initialize_body(size=9 * KiB)
        r = await post_initialize(srv, body)
        assert r.status == 413
        assert "request body exceeds 8192 bytes" in r.json["error"]["message"]
        assert_no_session(srv)


# -- initialize: the value bound -----------------------------------------------------------------

def test_value_walk_counts_keys_and_stops_early() -> None:
    assert jsonio.count_values({"a": 1, "b": 2}) == 5
    assert not jsonio.count_values_exceeds({"a": 1, "b": 2}, 5)
    assert jsonio.count_values_exceeds({"a": 1, "b": 2}, 4)
    nested = [[0] * 970 for _ in range(30)]
    assert jsonio.count_values_exceeds(nested, 1024)
    assert jsonio.count_values(nested) == 1 + 30 + 30 * 970
    for shape in ([], {}, "s", 0, None, [[[]]], {"k": {"k": {"k": None}}}):
        n = jsonio.count_values(shape)
        assert not jsonio.count_values_exceeds(shape, n)
        assert jsonio.count_values_exceeds(shape, n - 1)


async def test_initialize_exactly_1024_values_accepted_1025_refused() -> None:
    async with running(example_server()) as srv:
        over, _ = initialize_body(values=1025, request_id=77)
        assert len(over) < 64 * KiB  # the byte bound is not what refuses it
        r = await post_initialize(srv, over)
        assert_413(r, 77, "params exceed 1024 JSON values")
        assert_no_session(srv)
        assert srv.transport.snapshot().refusals["initialize_params_values"] == 1
        at, _ = initialize_body(values=1024)
        ok = await post_initialize(srv, at)
        assert ok.status == 200, ok.body[:200]
        info = srv.transport.snapshot().sessions[0]
        assert info.retained_values == 1024


async def test_object_keys_are_counted() -> None:
    # 1024 empty objects: few bytes, but more than 1024 values with the envelope's keys.
    params = initialize_params(objects=1024)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": params}).encode()
    assert len(body) < 8 * KiB
    async with running(example_server()) as srv:
        r = await post_initialize(srv, body)
        assert_413(r, 1, "params exceed 1024 JSON values")
        # The same value count made of keys: every key counts once.
        keys = initialize_params()
        keys["capabilities"]["experimental"] = {f"k{i}": None for i in range(520)}
        assert jsonio.count_values(keys) > 1024
        r = await post_initialize(srv, json.dumps(
            {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": keys}).encode())
        assert_413(r, 2, "JSON values")
        assert_no_session(srv)


async def test_nested_shapes_are_refused() -> None:
    params = initialize_params()
    params["capabilities"]["experimental"] = {"nested": [[0] * 970 for _ in range(30)]}
    body = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "initialize",
                       "params": params}, separators=(",", ":")).encode()
    assert len(body) < 64 * KiB
    async with running(example_server()) as srv:
        r = await post_initialize(srv, body)
        assert_413(r, 3, "params exceed 1024 JSON values")
        assert_no_session(srv)


async def test_many_values_within_the_bound_are_accepted() -> None:
    params = initialize_params(objects=900)
    assert jsonio.count_values(params) <= 1024
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": params}).encode()
    async with running(example_server()) as srv:
        r = await post_initialize(srv, body)
        assert r.status == 200, r.body[:200]
        assert srv.transport.snapshot().sessions[0].retained_values == \
            jsonio.count_values(params)


async def test_value_bound_kept_when_the_byte_bound_is_none() -> None:
    params = initialize_params(objects=2048)
    body = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "initialize",
                       "params": params}).encode()
    async with running(example_server(), max_initialize_request_bytes=None) as srv:
        r = await post_initialize(srv, body)
        assert_413(r, 4, "JSON values")
        assert_no_session(srv)


def representative_initialize() -> dict[str, Any]:
    icons = [{"src": f"https://client.example/icons/{size}.png", "mimeType": "image/png",
              "sizes": [f"{size}x{size}"], "theme": theme}
             for size, theme in ((16, "light"), (32, "dark"), (64, "light"), (128, "dark"))]
    return {
        "protocolVersion": LEGACY,
        "capabilities": {
            "roots": {"listChanged": True},
            "sampling": {"context": {}, "tools": {}},
            "elicitation": {"form": {}, "url": {}},
            "tasks": {"list": {}, "cancel": {}, "requests": {
                "sampling": {"createMessage": {}}, "elicitation": {"create": {}}}},
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}},
            "experimental": {f"vendor.example/feature-{i}": {"enabled": True,
                                                             "version": f"1.{i}"}
                             for i in range(40)},
        },
        "clientInfo": {"name": "representative-client", "title": "Representative Client",
                       "version": "3.1.4", "description": "A client with every capability",
                       "websiteUrl": "https://client.example", "icons": icons},
    }


async def test_representative_initialize_is_well_inside_both_bounds() -> None:
    params = representative_initialize()
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": params}).encode()
    values = jsonio.count_values(params)
    assert values < MAX_INITIALIZE_PARAMS_VALUES // 2, values
    assert len(body) < (64 * KiB) // 4, len(body)
    assert values > 200  # representative, not trivial
    async with running(example_server()) as srv:
        r = await post_initialize(srv, body)
        assert r.status == 200, r.body[:200]
        info = srv.transport.snapshot().sessions[0]
        assert info.client_name == "representative-client"
        assert info.client_version == "3.1.4"
        assert info.retained_values == values
        refusals = srv.transport.snapshot().refusals
        assert refusals["max_initialize_request_bytes"] == refusals[
            "initialize_params_values"] == 0


# -- a server filled to its limits -------------------------------------------------------------

FILL = {"max_sessions": 5, "max_listen_subscriptions": 4,
        "max_initialize_request_bytes": 8 * KiB, "max_resource_subscription_bytes": 16 * KiB}


@pytest.fixture
async def filled() -> AsyncIterator[tuple[Running, list[dict[str, Any]], list[list[str]]]]:
    async with running(example_server(), **FILL) as srv:
        sent_params: list[dict[str, Any]] = []
        for n in range(FILL["max_sessions"]):
            body, params = initialize_body(values=1024, size=FILL["max_initialize_request_bytes"],
                                           request_id=n, name=f"client-{n}")
            r = await post_initialize(srv, body)
            assert r.status == 200, r.body[:200]
            sent_params.append(params)
        sent_uris: list[list[str]] = []
        streams: list[Stream] = []
        for s in range(FILL["max_listen_subscriptions"]):
            uris = [f"test://s{s}/{i:06d}" for i in range(1024)]
            assert {len(u.encode()) for u in uris} == {16}
            assert utf8_len(uris) == FILL["max_resource_subscription_bytes"]
            streams.append(await listen_acked(srv, uris, f"fill-{s}"))
            sent_uris.append(uris)
        yield srv, sent_params, sent_uris
        for stream in streams:
            stream.close()


async def test_filled_server_accounts_for_everything(
        filled: tuple[Running, list[dict[str, Any]], list[list[str]]]) -> None:
    srv, sent_params, sent_uris = filled
    snap = srv.transport.snapshot()
    # Per session: what its initialize left behind, in bytes and values.
    by_name = {s.client_name: s for s in snap.sessions}
    assert len(by_name) == len(sent_params)
    for params in sent_params:
        info = by_name[params["clientInfo"]["name"]]
        assert info.retained_values == jsonio.count_values(params) == 1024
        kept = jsonio.dumps({"clientInfo": params["clientInfo"],
                             "capabilities": params["capabilities"]})
        assert info.retained_bytes == len(kept)
        assert info.retained_bytes <= FILL["max_initialize_request_bytes"]
        assert info.protocol_version == LEGACY
    # Per stream: its URIs and their bytes.
    by_id = {s.subscription_id: s for s in snap.streams}
    for n, uris in enumerate(sent_uris):
        info = by_id[f"fill-{n}"]
        assert (info.uri_count, info.uri_bytes) == (len(uris), utf8_len(uris))
    # Totals agree with the rows and with what was sent.
    t = snap.totals
    assert t.sessions == FILL["max_sessions"]
    assert t.listen_streams == FILL["max_listen_subscriptions"]
    session_bytes = sum(s.retained_bytes for s in snap.sessions)
    assert t.retained_values == sum(jsonio.count_values(p) for p in sent_params)
    assert t.subscription_uris == sum(len(u) for u in sent_uris)
    assert t.subscription_uri_bytes == sum(utf8_len(u) for u in sent_uris)
    assert t.retained_bytes == session_bytes + t.subscription_uri_bytes
    # ...and stay within the documented budget, the URI and value figures exactly at it.
    budget = documented_budget(snap.limits)
    assert budget == Budget(session_bytes=5 * 8 * KiB, session_values=5 * 1024,
                            stream_bytes=4 * 16 * KiB, stream_uris=4 * 1024)
    assert budget.session_bytes is not None and budget.stream_bytes is not None
    assert session_bytes <= budget.session_bytes
    assert t.retained_values == budget.session_values
    assert t.subscription_uri_bytes == budget.stream_bytes
    assert t.subscription_uris == budget.stream_uris
    assert t.retained_bytes <= budget.session_bytes + budget.stream_bytes
    assert snap.limits["max_sessions"] == 5
    assert snap.limits["max_listen_subscriptions"] == 4


async def test_filled_server_refuses_more_and_keeps_its_totals(
        filled: tuple[Running, list[dict[str, Any]], list[list[str]]]) -> None:
    srv, _, _ = filled
    before = srv.transport.snapshot()
    body, _ = initialize_body(request_id="extra")
    r = await post_initialize(srv, body)
    assert r.status == 503
    assert "maximum concurrent sessions (5)" in r.json["error"]["message"]
    assert "Mcp-Session-Id" not in r.headers
    listen = await srv.modern("subscriptions/listen",
                              {"notifications": {"resourceSubscriptions": ["test://x"]}},
                              request_id="extra")
    assert listen.status == 503
    over_bytes, _ = initialize_body(size=8 * KiB + 1)
    assert (await post_initialize(srv, over_bytes)).status == 413
    over_values, _ = initialize_body(values=1025)
    assert (await post_initialize(srv, over_values)).status == 413
    after = srv.transport.snapshot()
    assert after.totals == before.totals
    counted = {k: after.refusals[k] - before.refusals[k] for k in after.refusals}
    assert counted == {**{kind: 0 for kind in REFUSAL_KINDS}, "max_sessions": 1,
                       "max_initialize_request_bytes": 1, "initialize_params_values": 1,
                       "max_listen_subscriptions": 1}


def test_budget_helper_handles_unbounded_factors() -> None:
    budget = documented_budget({"max_sessions": None, "max_initialize_request_bytes": 10,
                                "max_listen_subscriptions": 2,
                                "max_resource_subscription_bytes": None})
    assert budget == Budget(session_bytes=None, session_values=None, stream_bytes=None,
                            stream_uris=2 * 1024)
