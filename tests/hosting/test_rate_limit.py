"""The per-principal rate limit (``rate_limit_per_principal``, requests per minute): exactly
at the limit and one over in both eras and in a batch, 429 with ``Retry-After``, one bucket
per caller, live tuning, counting on the dashboard and in ``/metrics``, and the bound on
the bucket table.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import tornado.web
from admin_support import TOKEN, initialize, running_admin
from mcp_http import assert_refused, example_server, rpc, running

from tornado_mcp import Transport
from tornado_mcp.engine.middleware import MAX_RATE_BUCKETS, RateLimit
from tornado_mcp.options import Options
from tornado_mcp.protocol.identity import Principal
from tornado_mcp.transport.handler import MCPHandler

LIMIT = 3
# LIMIT per minute refills one token every 20 s: a request refused within a second of the
# bucket emptying waits ceil(20 - elapsed/20) = 20 s.
RETRY = "20"
MESSAGE = f"Too many requests: the limit is {LIMIT} per minute; retry after 20 s"


async def test_modern_requests_at_the_limit_pass_and_one_over_is_429() -> None:
    async with running(example_server(), rate_limit_per_principal=LIMIT) as srv:
        for i in range(LIMIT):
            assert (await srv.modern("tools/list", request_id=i)).status == 200
        r = await srv.modern("tools/list", request_id=99)
        err = assert_refused(r, 429, -32029, MESSAGE, 99)
        assert err["data"] == {"retryAfter": 20}
        assert r.headers["Retry-After"] == RETRY
        assert srv.transport.snapshot().refusals["rate_limit_per_principal"] == 1


async def test_legacy_session_initialize_counts_and_the_call_over_is_429() -> None:
    async with running(example_server(), rate_limit_per_principal=LIMIT) as srv:
        sid = await srv.initialize()  # request 1 (the notification is not a request)
        assert (await srv.post(rpc("ping", None, 2), session=sid)).status == 200
        assert (await srv.post(rpc("ping", None, 3), session=sid)).status == 200
        r = await srv.post(rpc("tools/list", None, 4), session=sid)
        assert_refused(r, 429, -32029, MESSAGE, 4)
        assert r.headers["Retry-After"] == RETRY
        # A new session is refused too, and none is opened.
        again = await srv.post(rpc("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}, 5))
        assert_refused(again, 429, -32029, MESSAGE, 5)
        assert len(srv.transport.sessions) == 1


async def test_batch_entries_over_the_limit_are_error_entries() -> None:
    async with running(example_server(), rate_limit_per_principal=LIMIT) as srv:
        sid = await srv.initialize("2025-03-26")
        r = await srv.post([rpc("ping", None, i) for i in (1, 2, 3)], session=sid,
                           version="2025-03-26")
        assert r.status == 200
        assert [("result" in m, m["id"]) for m in r.json] == [(True, 1), (True, 2), (False, 3)]
        assert r.json[2]["error"]["code"] == -32029


class PerUser(MCPHandler):
    """The endpoint behind a host application's login (here: a trusted test header)."""

    def prepare(self) -> None:
        self.principal = Principal.of(self.request.headers["X-User"])
        super().prepare()


async def test_each_principal_has_its_own_bucket_and_changes_apply_live() -> None:
    server = example_server()
    transport = Transport(server, rate_limit_per_principal=1)

    def routes(t: Transport) -> list[Any]:
        return [tornado.web.url("/mcp2", PerUser, {"transport": t})]

    async with running(server, transport=transport, extra_routes=routes) as srv:
        srv.url = srv.url + "2"
        for user in ("alice", "bob"):
            assert (await srv.modern("tools/list", headers={"X-User": user})).status == 200
        assert (await srv.modern("tools/list", headers={"X-User": "alice"})).status == 429
        assert len(transport.rate_limit) == 2
        transport.options.update({"rate_limit_per_principal": None})  # off, at once
        for _ in range(5):
            assert (await srv.modern("tools/list", headers={"X-User": "alice"})).status == 200
        transport.options.update({"rate_limit_per_principal": 1})  # on again, at once
        assert (await srv.modern("tools/list", headers={"X-User": "carol"})).status == 200
        assert (await srv.modern("tools/list", headers={"X-User": "carol"})).status == 429


@pytest.mark.parametrize("callers", [3, 4], ids=["at-bound", "one-over"])
def test_bucket_table_is_bounded(callers: int) -> None:
    now = [0.0]
    limiter = RateLimit(Options(rate_limit_per_principal=1), max_buckets=3,
                        clock=lambda: now[0])
    answers = [limiter.take(f"user:{i}") for i in range(callers)]
    assert len(limiter) == 3
    # At the bound every caller has its bucket; one over, every bucket is still refilling
    # (none can be dropped without freeing its caller early), so the new caller waits
    # until the first is full again, 60 s on.
    assert answers == [None] * 3 + [pytest.approx(60.0)] * (callers - 3)
    assert limiter.take("user:0") == pytest.approx(60.0)  # still limited
    now[0] = 60.0  # user:0 is full again: its bucket makes room for the new caller
    assert limiter.take("user:3") is None
    assert len(limiter) == 3


@pytest.mark.parametrize("churn", [MAX_RATE_BUCKETS - 1, MAX_RATE_BUCKETS + 50],
                         ids=["at-bound", "over"])
def test_churn_never_frees_a_limited_caller_early(churn: int) -> None:
    """Up to 10,050 requests from other new callers while one caller is limited: its
    bucket is never dropped (the callers over the table wait instead), and the table
    never holds more than its bound."""
    now = [0.0]
    limiter = RateLimit(Options(rate_limit_per_principal=2), clock=lambda: now[0])
    assert limiter.take("victim") is None and limiter.take("victim") is None
    answers = []
    for i in range(churn):
        now[0] += 1e-5
        answers.append(limiter.take(f"address:{i}"))
    fitting = MAX_RATE_BUCKETS - 1
    assert answers[:fitting] == [None] * min(churn, fitting)
    # over the table: nobody's bucket is full, so nobody's is dropped; the first other
    # caller's is full again 30 s after its one request
    assert answers[fitting:] == [pytest.approx(30.0 - now[0], abs=0.2)] * (churn - fitting)
    assert len(limiter) == MAX_RATE_BUCKETS
    wait = limiter.take("victim")
    assert wait is not None and wait > 29.0  # still limited, as before the churn


async def test_a_limited_caller_stays_limited_through_churn_over_the_table() -> None:
    """Over real HTTP, with the table lowered to 50: 49 other callers fill it, the 50th is
    refused while every bucket refills; once theirs are full, 49 new callers take their
    places, never the limited caller's, and the next new one waits again."""
    server = example_server()
    transport = Transport(server, rate_limit_per_principal=2)
    now = [1000.0]
    transport.rate_limit.clock = lambda: now[0]
    transport.rate_limit.max_buckets = 50

    def routes(t: Transport) -> list[Any]:
        return [tornado.web.url("/mcp2", PerUser, {"transport": t})]

    async def status(user: str) -> int:
        return (await srv.modern("tools/list", headers={"X-User": user})).status

    async with running(server, transport=transport, extra_routes=routes) as srv:
        srv.url = srv.url + "2"
        assert [await status("victim") for _ in range(3)] == [200, 200, 429]
        assert [await status(f"other-{i}") for i in range(49)] == [200] * 49  # at the bound
        assert len(transport.rate_limit) == 50
        assert await status("other-49") == 429  # over it: nobody's bucket is full yet
        assert await status("victim") == 429
        now[0] += 31  # the others are full again; the victim has a little over one token
        assert [await status(f"new-{i}") for i in range(49)] == [200] * 49
        assert await status("new-49") == 429  # only the victim's bucket is left to drop
        assert len(transport.rate_limit) == 50
        assert [await status("victim") for _ in range(2)] == [200, 429]
def test_bucket_refills_at_the_rate() -> None:
    now = [100.0]
    limiter = RateLimit(Options(rate_limit_per_principal=60), clock=lambda: now[0])
    for _ in range(60):
        assert limiter.take("k") is None
    assert limiter.take("k") == pytest.approx(1.0)
    now[0] += 0.5
    assert limiter.take("k") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.take("k") is None


async def test_refusals_show_on_the_dashboard_and_in_metrics() -> None:
    async with running_admin(rate_limit_per_principal=1) as srv, \
            httpx.AsyncClient(timeout=10) as client:
        statuses = [(await initialize(client, srv.mcp)).status_code for _ in range(2)]
        assert statuses == [200, 429]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        metrics = (await client.get(f"{srv.admin}/metrics", headers=auth)).text
        assert 'tornado_mcp_refusals_total{bound="rate_limit_per_principal"} 1.0' in metrics
        assert "tornado_mcp_option_rate_limit_per_principal 1.0" in metrics
        overview = (await client.get(f"{srv.admin}/api/overview", headers=auth)).json()
        assert overview["refusals"]["rate_limit_per_principal"] == 1
        page = await client.get(f"{srv.admin}/", headers=auth)
        assert page.status_code == 200
        assert 'data-refusal="rate_limit_per_principal"' in page.text
        limits = (await client.get(f"{srv.admin}/api/limits", headers=auth)).json()
        assert limits["limits"]["rate_limit_per_principal"] == 1
        assert limits["fixed"]["sync_handler_threads"] == 4
        assert limits["fixed"]["cors_allowed_origins"] == []


# -- anonymous callers over IPv6: one bucket per /64 ----------------------------------------
ONE_NET = [f"2001:db8:1:2:{i:x}::{i + 1}" for i in range(8)]  # 8 addresses of one /64


async def test_ipv6_addresses_of_one_64_share_one_bucket() -> None:
    """Tornado's xheaders: the client's address is the trusted proxy's X-Real-Ip."""
    async with running(example_server(), rate_limit_per_principal=LIMIT,
                       http_options={"xheaders": True}) as srv:
        statuses = [(await srv.modern("tools/list", request_id=i,
                                      headers={"X-Real-Ip": ip})).status
                    for i, ip in enumerate(ONE_NET)]
        assert statuses == [200] * LIMIT + [429] * (len(ONE_NET) - LIMIT)
        # another /64 has its own budget, an IPv4 address (and its mapped form) its own
        for ip in ("2001:db8:1:3::1", "192.0.2.7", "::ffff:192.0.2.8"):
            assert (await srv.modern("tools/list", headers={"X-Real-Ip": ip})).status == 200
        assert (await srv.modern("tools/list", headers={"X-Real-Ip": "::ffff:192.0.2.7"})
                ).status == 200  # the same caller as 192.0.2.7, its second of three
