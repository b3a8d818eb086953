"""The two stores keep the same promises (the in-process one and the Redis one, against a
real redis-server): the client cap with its eviction, one-use codes and their replay
marks, refresh rotation and reuse, the grants one user gives one client, revocations read
from a cursor, the key ring's compare-and-set, the registration counter's window."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import pytest
from cluster.redis_proc import RedisProc

from tornado_mcp.issuer.records import Client, Code, Grant, SigningKey
from tornado_mcp.issuer.redis_store import RedisStore
from tornado_mcp.issuer.store import (
    MAX_GRANTS_PER_CONSENT,
    REUSED,
    ROTATED,
    UNKNOWN,
    USED_REFRESH_KEPT,
    IssuerStore,
    MemoryStore,
)

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def store_of(kind: str) -> AsyncIterator[IssuerStore]:
    if kind == "memory":
        yield MemoryStore()
        return
    proc = RedisProc()
    proc.start()
    store = RedisStore(proc.url, secret="x" * 16)
    try:
        yield store
    finally:
        await store.redis.aclose()
        proc.stop()


STORES = ["memory", "redis"]


def client(cid: str, issued_at: int) -> Client:
    return Client(cid, {"redirect_uris": ["http://127.0.0.1/cb"]}, None, issued_at)


def grant(gid: str, subject: str = "ada", client_id: str = "c", created: int = 0,
          refresh: str = "r0") -> Grant:
    t = int(time.time())
    return Grant(gid, subject, client_id, ("notes",), "http://x/mcp", created or t, t + 600,
                 refresh)


@pytest.mark.parametrize("kind", STORES)
async def test_clients_at_the_cap_evict_the_oldest_unused_then_refuse(kind: str) -> None:
    async with store_of(kind) as store:
        assert await store.add_client(client("a", 1), 2)
        assert await store.add_client(client("b", 2), 2)
        await store.client_used("b", 10)
        assert await store.add_client(client("c", 3), 2)  # a, never used, makes room
        assert [c.client_id for c in await store.clients()] == ["b", "c"]
        assert (await store.client("b")).used_at == 10  # type: ignore[union-attr]
        await store.client_used("c", 11)
        assert not await store.add_client(client("d", 4), 2)  # every one was used
        assert await store.add_client(client("d", 4), 3)  # a larger cap, live
        assert await store.remove_client("d") and not await store.remove_client("d")
        assert await store.client("d") is None


@pytest.mark.parametrize("kind", STORES)
async def test_a_code_is_taken_once_and_its_replay_names_its_grant(kind: str) -> None:
    async with store_of(kind) as store:
        code = Code("c", "http://127.0.0.1/cb", "ada", ("notes",), "http://x/mcp", "ch",
                    "S256", int(time.time()) + 60)
        assert await store.add_code("k", code)
        assert await store.code("k") == code
        assert await store.code_replayed("k") is None
        assert await store.take_code("k", "g1", 60)
        assert not await store.take_code("k", "g2", 60)  # one use
        assert await store.code("k") is None
        assert await store.code_replayed("k") == "g1"
        expired = Code("c", "", "ada", (), "r", "ch", "S256", int(time.time()) - 1)
        if kind == "memory":  # Redis rejects a past EXAT itself
            assert await store.add_code("old", expired)
            assert await store.code("old") is None


@pytest.mark.parametrize("kind", STORES)
async def test_refresh_rotates_once_and_a_rotated_token_is_a_reuse(kind: str) -> None:
    async with store_of(kind) as store:
        await store.add_grant(grant("g", refresh="h0"))
        later = int(time.time()) + 900
        assert await store.rotate_refresh("g", "h0", "h1", later, ("notes",)) == ROTATED
        assert await store.rotate_refresh("g", "h0", "h2", later, ("notes",)) == REUSED
        assert await store.rotate_refresh("g", "h1", "", 0, ()) == UNKNOWN  # only asking
        assert (await store.grant("g")).refresh_hash == "h1"  # type: ignore[union-attr]
        assert await store.rotate_refresh("g", "nope", "h3", later, ()) == UNKNOWN
        assert await store.rotate_refresh("other", "h1", "h3", later, ()) == UNKNOWN
        for n in range(1, USED_REFRESH_KEPT + 2):
            assert await store.rotate_refresh("g", f"h{n}", f"h{n + 1}", later,
                                              ("notes",)) == ROTATED
        assert await store.rotate_refresh("g", "h1", "", 0, ()) == UNKNOWN  # forgotten
        assert await store.rotate_refresh("g", "h3", "", 0, ()) == REUSED  # remembered


@pytest.mark.parametrize("kind", STORES)
async def test_grants_per_consent_are_bounded_and_revocations_read_from_a_cursor(
        kind: str) -> None:
    async with store_of(kind) as store:
        pushed: list[str] = []
        for n in range(MAX_GRANTS_PER_CONSENT + 2):
            pushed += await store.add_grant(grant(f"g{n}", created=1000 + n))
        assert pushed[:2] == ["g0", "g1"]  # the oldest pushed out, for the caller to revoke
        await store.add_grant(grant("other", subject="root"))
        await store.revoke(pushed, time.time() + 60)
        found, cursor = await store.revocations(None)
        assert set(found) == {"g0", "g1"}
        assert {g.grant_id for g in await store.grants()} == \
            {f"g{n}" for n in range(2, MAX_GRANTS_PER_CONSENT + 2)} | {"other"}
        await store.revoke(["other"], time.time() + 60)
        await store.revoke(["stale"], time.time() - 1)  # already past: never listed
        found, cursor = await store.revocations(cursor)
        assert set(found) == {"other"}
        assert (await store.revocations(cursor))[0] == {}


@pytest.mark.parametrize("kind", STORES)
async def test_a_key_is_added_only_after_the_expected_one(kind: str) -> None:
    async with store_of(kind) as store:
        a = SigningKey("a", {"kty": "oct"}, 1.0)
        b = SigningKey("b", {"kty": "oct"}, 2.0)
        c = SigningKey("c", {"kty": "oct"}, 3.0)
        assert await store.add_signing_key(a, None, [])
        assert not await store.add_signing_key(b, None, [])  # someone rotated first
        assert await store.add_signing_key(b, "a", [])
        assert not await store.add_signing_key(c, "a", [])
        assert await store.add_signing_key(c, "b", ["a"])
        assert [k.kid for k in await store.signing_keys()] == ["b", "c"]


@pytest.mark.parametrize("kind", STORES)
async def test_the_counter_window_opens_at_the_first_event(kind: str) -> None:
    async with store_of(kind) as store:
        assert [await store.hit("x", 0.3) for _ in range(3)] == [1, 2, 3]
        assert await store.hit("y", 0.3) == 1
        await __import__("asyncio").sleep(0.35)  # the window's end: a time, not an event
        assert await store.hit("x", 0.3) == 1
