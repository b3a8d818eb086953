"""The sign-in in a cluster: two processes (two apps, each with its own ``SignIn``, key
cache and revocation list) share a real redis-server through ``RedisStore``, as processes
behind one load balancer do.  A token one issues the other verifies; a grant one made the
other refreshes; a refresh token or code used again at the other is caught; a revocation
at one is honoured by the other within ``poll_interval``; a key rotated at one verifies
at the other; the client cap is the cluster's; the private keys in Redis are sealed; and
a Redis outage is a 503, not a 500, while known tokens keep working."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
import tornado.httpserver
import tornado.netutil
from cluster.redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from signin_support import App, load_example

from tornado_mcp.issuer import keys
from tornado_mcp.issuer.redis_store import RedisStore

pytestmark = pytest.mark.timeout(90)
SECRET = "a shared secret of the cluster, kept out of redis"
POLL = 0.2


@contextlib.asynccontextmanager
async def cluster(redis: RedisProc, **options: Any) -> AsyncIterator[tuple[App, App]]:
    """Two apps on two ports, one public URL (the first's), one Redis."""
    sockets = [tornado.netutil.bind_sockets(0, "127.0.0.1") for _ in range(2)]
    base = f"http://127.0.0.1:{sockets[0][0].getsockname()[1]}"
    apps, servers = [], []
    for socks in sockets:
        example = load_example()
        store = RedisStore(redis.url, secret=SECRET, poll_interval=POLL)
        signin = example.SignIn(base, login=example.BaseHandler, scopes=example.SCOPES,
                                store=store, policy=example.Policy(
                                    user_scopes=lambda name, ex=example: ex.USERS[name][1]))
        app, transport = example.build("shared-cookie-secret", signin, **options)
        http = tornado.httpserver.HTTPServer(app)
        http.add_sockets(socks)
        here = f"http://127.0.0.1:{socks[0].getsockname()[1]}"
        running = App(example, here, signin, transport, public=base)
        apps.append(running)
        servers.append((http, transport, store))
    try:
        yield apps[0], apps[1]
    finally:
        for running in apps:
            for client in running.clients:
                await client.aclose()
        for http, transport, store in servers:
            http.stop()
            await transport.close()
            await http.close_all_connections()
            await store.redis.aclose()


async def call_at(app: App, token: str) -> int:
    """``whoami`` at ``app`` (its own port) with ``token``: the status."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "whoami", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    r = await app.http().post(app.base + "/mcp", content=json.dumps(body), headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call", "Mcp-Name": "whoami"})
    return r.status_code


async def refused_within(app: App, token: str, seconds: float) -> float:
    """How long ``app`` took to start refusing ``token`` (polled: the other process learns
    of a revocation on its next read, which has no event to wait on here)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while await call_at(app, token) != 401:
        assert loop.time() - start < seconds, "the revocation never reached the other process"
        await asyncio.sleep(0.05)
    return loop.time() - start


async def test_one_process_issues_the_other_verifies_refreshes_and_catches_reuse(
        redis: RedisProc) -> None:
    async with cluster(redis) as (a, b):
        flow, tokens = await a.tokens()
        assert await call_at(b, tokens["access_token"]) == 200  # b never saw the key before
        fresh = await b.refresh(flow, tokens["refresh_token"])  # b refreshes a's grant
        assert fresh.status_code == 200, fresh.text
        assert await call_at(a, fresh.json()["access_token"]) == 200
        replay = await a.refresh(flow, tokens["refresh_token"])  # the old one, at a
        assert replay.status_code == 400
        assert replay.json()["error_description"] == "refresh token was already used"
        assert await call_at(a, fresh.json()["access_token"]) == 401  # a revoked: at once
        waited = await refused_within(b, fresh.json()["access_token"], 5.0)
        assert waited <= POLL + 1.0
        assert await b.signin.consents() == []


async def test_a_code_replayed_at_the_other_process_is_caught(redis: RedisProc) -> None:
    async with cluster(redis) as (a, b):
        browser = await a.signed_in()
        flow = a.flow(await a.register())
        code = await a.code(browser, flow)
        first = await a.token(flow, code)
        assert first.status_code == 200
        again = await b.token(flow, code)
        assert again.status_code == 400
        assert again.json()["error_description"] == "authorization code was already used"
        assert await call_at(b, first.json()["access_token"]) == 401  # b revoked: at once
        await refused_within(a, first.json()["access_token"], 5.0)


def kid_of(token: str) -> str:
    return str(json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"])


async def test_a_key_rotated_at_one_process_verifies_at_the_other(
        redis: RedisProc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "PUBLISH_DELAY", 0.5)  # (2 s in production)
    monkeypatch.setattr(keys, "RELOAD_INTERVAL", 0.25)
    async with cluster(redis) as (a, b):
        _flow, old = await a.tokens()
        assert await call_at(b, old["access_token"]) == 200  # b reads the ring: one key
        kid = await a.signin.rotate_keys()
        assert (await a.signin.ring.signer())[0] == kid_of(old["access_token"])  # not yet
        await asyncio.sleep(0.5)  # the new key's publication: a time, not an event
        _flow, new = await a.tokens()
        assert kid_of(new["access_token"]) == kid
        assert await call_at(b, new["access_token"]) == 200  # an unknown kid: b reads again
        assert await call_at(b, old["access_token"]) == 200  # the old key still verifies
        assert b.signin.ring.kids == a.signin.ring.kids and len(a.signin.ring.kids) == 2


async def test_the_client_cap_is_the_clusters_and_the_keys_are_sealed(
        redis: RedisProc) -> None:
    async with cluster(redis, oauth_max_clients=2) as (a, b):
        browser = await a.signed_in()
        for app in (a, b):
            flow = app.flow(await app.register())
            assert (await app.token(flow, await app.code(browser, flow))).status_code == 200
        refused = await b.http().post(b.url("register"),
                                      json={"redirect_uris": ["http://127.0.0.1:9/cb"]})
        assert refused.status_code == 503  # both kept clients were authorized, at a and b
        assert len(await a.signin.clients()) == 2
        raw = aioredis.from_url(redis.url)
        try:
            keys = await raw.hgetall("tornado-mcp:signin:keys")
            assert keys and all(b'"d"' not in v and not v.startswith(b"{")
                                for v in keys.values())
        finally:
            await raw.aclose()


async def test_a_redis_outage_is_a_503_and_known_tokens_keep_working(
        redis: RedisProc) -> None:
    async with cluster(redis) as (a, _b):
        flow, tokens = await a.tokens()
        assert await call_at(a, tokens["access_token"]) == 200
        redis.kill()
        r = await a.refresh(flow, tokens["refresh_token"])
        assert r.status_code == 503 and r.headers["retry-after"] == "5"
        assert r.json()["error"] == "temporarily_unavailable"
        r = await a.http().post(a.url("register"), json={"redirect_uris": [
            "http://127.0.0.1:9/cb"]})
        assert r.status_code == 503
        browser = a.http(cookies=(await a.signed_in()).cookies)
        page = await browser.get(a.url("authorize") + "?client_id=x")
        assert page.status_code == 503 and "temporarily_unavailable" in page.text
        await asyncio.sleep(POLL * 2)  # past the revocation poll: it fails, and is logged
        assert await call_at(a, tokens["access_token"]) == 200
