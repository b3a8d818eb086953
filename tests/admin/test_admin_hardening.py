"""The dashboard against a token-guessing, cookie-planting attacker, over real HTTP.

Wrong tokens (login form and bearer header, on the API and on ``metrics``) are throttled
per address and overall, with 429 and ``Retry-After``, and a throttled address recovers;
churning through other addresses does not free it.  Client addresses are real: the test
clients bind their own loopback source address (127.0.0.2, 127.0.0.3, ...).  The login
cookie is ``Secure`` behind a TLS proxy when the server honours ``X-Forwarded-Proto``
(``xheaders=True``), and only then.  Changes made with the login cookie need the XSRF token
of that login: a planted ``_xsrf`` cookie with a matching header, or another login's token,
is refused.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator

import httpx
import pytest
from admin_support import (
    BEARER,
    TOKEN,
    log_in,
    open_session,
    page_xsrf,
    running_admin,
    wait_until,
)

from admin_ui import FailureLimits
from admin_ui.auth import COOKIE_NAME
from admin_ui.throttle import FailureThrottle, address_key

WRONG = {"Authorization": "Bearer not-the-token"}
#: Slow refill (one a minute): nothing recovers during a test unless it waits for it.
SLOW = {"address_per_minute": 1.0, "overall_per_minute": 1.0}


@contextlib.asynccontextmanager
async def client_at(address: str = "127.0.0.1") -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose connections come from ``address`` (any 127.0.0.0/8 one)."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        yield client


def assert_throttled(resp: httpx.Response) -> None:
    assert resp.status_code == 429, (resp.status_code, resp.text)
    assert int(resp.headers["Retry-After"]) >= 1


# -- throttling wrong tokens -----------------------------------------------------------------


async def test_wrong_login_tokens_are_refused_then_throttled_at_the_burst() -> None:
    limits = FailureLimits(address_burst=3, overall_burst=100, **SLOW)
    async with running_admin(failure_limits=limits) as srv, client_at() as client:
        for _ in range(3):  # exactly at the burst: each one is judged
            resp = await log_in(client, srv.admin, token="guess")
            assert resp.status_code == 401
            assert "not right" in resp.text
        over = await log_in(client, srv.admin)  # the right token, but not even compared
        assert_throttled(over)
        assert int(over.headers["Retry-After"]) <= 60
        assert "Too many wrong tokens" in over.text
        assert COOKIE_NAME not in client.cookies


@pytest.mark.parametrize("path", ["api/overview", "metrics"])
async def test_wrong_bearer_tokens_are_throttled_on_the_api_and_metrics(path: str) -> None:
    limits = FailureLimits(address_burst=3, overall_burst=100, **SLOW)
    async with running_admin(failure_limits=limits) as srv, client_at() as client:
        for _ in range(3):
            resp = await client.get(f"{srv.admin}/{path}", headers=WRONG)
            assert resp.status_code == 401
        over = await client.get(f"{srv.admin}/{path}", headers=BEARER)
        assert_throttled(over)
        assert over.json()["error"].startswith("Too many wrong tokens")
        # One address's wrong tokens count on every route: the login form is closed too.
        assert_throttled(await log_in(client, srv.admin))


async def test_a_correct_token_costs_nothing_and_never_throttles() -> None:
    limits = FailureLimits(address_burst=2, overall_burst=2, **SLOW)
    async with running_admin(failure_limits=limits) as srv, client_at() as client:
        for _ in range(50):
            resp = await client.get(f"{srv.admin}/metrics", headers=BEARER)
            assert resp.status_code == 200
        assert (await log_in(client, srv.admin)).status_code == 303


async def test_one_address_being_throttled_leaves_another_alone() -> None:
    limits = FailureLimits(address_burst=2, overall_burst=100, **SLOW)
    async with running_admin(failure_limits=limits) as srv, \
            client_at("127.0.0.2") as attacker, client_at("127.0.0.3") as operator:
        for _ in range(2):
            assert (await attacker.get(f"{srv.admin}/api/overview",
                                       headers=WRONG)).status_code == 401
        assert_throttled(await attacker.get(f"{srv.admin}/api/overview", headers=BEARER))
        ok = await operator.get(f"{srv.admin}/api/overview", headers=BEARER)
        assert ok.status_code == 200
        assert (await log_in(operator, srv.admin)).status_code == 303


async def test_the_overall_limit_spans_addresses() -> None:
    limits = FailureLimits(address_burst=3, overall_burst=5, **SLOW)
    async with running_admin(failure_limits=limits) as srv:
        for address, wrong in (("127.0.0.2", 3), ("127.0.0.3", 2)):
            async with client_at(address) as client:
                for _ in range(wrong):
                    resp = await client.get(f"{srv.admin}/metrics", headers=WRONG)
                    assert resp.status_code == 401
        async with client_at("127.0.0.4") as fresh:  # never sent a wrong token
            assert_throttled(await fresh.get(f"{srv.admin}/metrics", headers=BEARER))
            assert_throttled(await log_in(fresh, srv.admin))


async def test_a_throttled_address_recovers_and_hammering_does_not_delay_it() -> None:
    limits = FailureLimits(address_burst=2, address_per_minute=60.0, overall_burst=100)
    async with running_admin(failure_limits=limits) as srv, client_at() as client:
        started = time.monotonic()
        for _ in range(2):
            assert (await client.get(f"{srv.admin}/metrics", headers=WRONG)).status_code == 401
        for _ in range(20):  # refused unread: they take nothing from the bucket
            over = await client.get(f"{srv.admin}/metrics", headers=WRONG)
            if time.monotonic() - started < 0.9:
                assert_throttled(over)
                assert over.headers["Retry-After"] == "1"

        async def correct_token_works() -> bool:
            resp = await client.get(f"{srv.admin}/metrics", headers=BEARER)
            assert resp.status_code in (200, 429)
            return resp.status_code == 200

        await wait_until(correct_token_works, timeout=5.0, what="the penalty to pass")
        assert time.monotonic() - started < 5.0


async def test_churn_of_other_addresses_does_not_free_a_throttled_one() -> None:
    limits = FailureLimits(address_burst=2, overall_burst=1000, max_addresses=4, **SLOW)
    async with running_admin(failure_limits=limits) as srv, \
            client_at("127.0.0.2") as attacker:
        for _ in range(2):
            assert (await log_in(attacker, srv.admin, token="guess")).status_code == 401
        assert_throttled(await log_in(attacker, srv.admin))
        for n in range(10, 40):  # 30 other addresses, each one wrong token
            async with client_at(f"127.0.0.{n}") as other:
                resp = await other.get(f"{srv.admin}/api/overview", headers=WRONG)
                assert resp.status_code == 401
        assert_throttled(await log_in(attacker, srv.admin))
        assert_throttled(await attacker.get(f"{srv.admin}/metrics", headers=BEARER))


def test_the_buckets_at_and_over_their_rate_with_a_clock() -> None:
    now = [1000.0]
    throttle = FailureThrottle(FailureLimits(address_burst=3, address_per_minute=60.0,
                                             overall_burst=5, overall_per_minute=30.0),
                               clock=lambda: now[0])
    for _ in range(3):
        assert throttle.retry_after("10.0.0.1") is None
        throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == pytest.approx(1.0)  # one a second
    now[0] += 0.5
    assert throttle.retry_after("10.0.0.1") == pytest.approx(0.5)
    now[0] += 0.5
    assert throttle.retry_after("10.0.0.1") is None
    throttle.failed("10.0.0.2")
    assert throttle.retry_after("10.0.0.3") is None  # overall: 5 - 4 + 0.5 refilled
    throttle.failed("10.0.0.3")
    wait = throttle.retry_after("10.0.0.4")  # overall below one token: everyone waits
    assert wait is not None and 0 < wait <= 2.0
    now[0] += 600
    assert throttle.retry_after("10.0.0.1") is None  # the lockout always decays


def test_memory_stays_bounded_and_throttled_addresses_are_kept() -> None:
    now = [0.0]
    throttle = FailureThrottle(FailureLimits(address_burst=1, address_per_minute=1.0,
                                             overall_burst=10_000, max_addresses=3),
                               clock=lambda: now[0])
    for n in range(3):
        throttle.failed(f"10.0.0.{n}")  # each one now throttled
    throttle.failed("10.0.1.1")  # full of throttled addresses: the newcomer is not kept
    assert len(throttle) == 3
    assert all(throttle.retry_after(f"10.0.0.{n}") is not None for n in range(3))
    assert throttle.retry_after("10.0.1.1") is None
    now[0] += 60  # every bucket refilled: the least throttled is forgotten for a newcomer
    throttle.failed("10.0.1.2")
    assert len(throttle) == 3
    assert throttle.retry_after("10.0.1.2") is not None


def test_ipv6_addresses_count_per_64_network() -> None:
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::2")
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:192.0.2.7") == "192.0.2.7"


@pytest.mark.parametrize("bad", [
    {"address_burst": 0}, {"overall_burst": True}, {"max_addresses": 1.5},
    {"address_per_minute": 0}, {"overall_per_minute": float("inf")},
])
def test_nonsense_limits_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        FailureLimits(**bad)  # type: ignore[arg-type]


# -- Secure behind a TLS proxy ---------------------------------------------------------------


def login_cookie_header(resp: httpx.Response) -> str:
    return next(h for h in resp.headers.get_list("set-cookie")
                if h.startswith(COOKIE_NAME + "=")).lower()


async def test_login_cookie_is_secure_when_a_trusted_proxy_says_https() -> None:
    proxied = {"X-Forwarded-Proto": "https"}
    async with running_admin(xheaders=True) as srv, client_at() as client:
        resp = await client.post(f"{srv.admin}/login", data={"token": TOKEN}, headers=proxied)
        assert resp.status_code == 303
        assert "; secure" in login_cookie_header(resp)
        plain = await client.post(f"{srv.admin}/login", data={"token": TOKEN})
        assert "; secure" not in login_cookie_header(plain)


async def test_the_proxy_header_is_ignored_without_xheaders() -> None:
    async with running_admin() as srv, client_at() as client:
        resp = await client.post(f"{srv.admin}/login", data={"token": TOKEN},
                                 headers={"X-Forwarded-Proto": "https"})
        assert resp.status_code == 303
        assert "secure" not in login_cookie_header(resp)


async def test_the_dashboard_sets_no_other_cookie() -> None:
    async with running_admin() as srv, client_at() as client:
        resp = await log_in(client, srv.admin)
        page = await client.get(f"{srv.admin}/")
        names = [h.partition("=")[0] for r in (resp, page)
                 for h in r.headers.get_list("set-cookie")]
        assert names == [COOKIE_NAME]


# -- XSRF bound to the login ----------------------------------------------------------------

#: A well-formed Tornado XSRF token: as cookie and header it passes a double-submit check.
PLANTED = "2|00000000|" + "ab" * 16 + "|1700000000"
APP_SETTINGS = [{}, {"xsrf_cookies": True, "cookie_secret": "app-secret"}]


@pytest.mark.parametrize("settings", APP_SETTINGS, ids=["plain", "app-xsrf"])
async def test_a_planted_xsrf_cookie_with_a_matching_header_is_refused(
        settings: dict[str, object]) -> None:
    async with running_admin(app_settings=settings) as srv, client_at() as client:
        sid = await open_session(client, srv.mcp, "victim")
        assert (await log_in(client, srv.admin)).status_code == 303
        client.cookies.set("_xsrf", PLANTED, domain="127.0.0.1")
        forged = {"X-XSRFToken": PLANTED}
        for method, path, body in (("PATCH", "api/limits", {"max_sessions": 3}),
                                   ("DELETE", f"api/sessions/{sid}", None),
                                   ("DELETE", "api/streams/some-stream", None)):
            resp = await client.request(method, f"{srv.admin}/{path}", json=body,
                                        headers=forged)
            assert resp.status_code == 403, (method, path, resp.text)
            assert "XSRF" in resp.json()["error"]
        form = await client.post(f"{srv.admin}/logout", data={"_xsrf": PLANTED})
        assert form.status_code == 403
        assert srv.transport.options.max_sessions != 3
        assert [s.id for s in srv.transport.snapshot().sessions] == [sid]


async def test_the_logins_own_token_works_on_every_change() -> None:
    async with running_admin() as srv, client_at() as client:
        sid = await open_session(client, srv.mcp, "victim")
        assert (await log_in(client, srv.admin)).status_code == 303
        token = {"X-XSRFToken": await page_xsrf(client, srv.admin)}
        changed = await client.patch(f"{srv.admin}/api/limits", json={"max_sessions": 3},
                                     headers=token)
        assert changed.status_code == 200, changed.text
        ended = await client.delete(f"{srv.admin}/api/sessions/{sid}", headers=token)
        assert ended.status_code == 200 and ended.json()["ended"] is True
        missing = await client.delete(f"{srv.admin}/api/streams/none", headers=token)
        assert missing.status_code == 404  # past the XSRF check: there is no such stream


async def test_a_token_from_another_login_is_refused() -> None:
    async with running_admin() as srv, client_at() as alice, client_at() as bob:
        assert (await log_in(alice, srv.admin, "alice")).status_code == 303
        assert (await log_in(bob, srv.admin, "bob")).status_code == 303
        alices, bobs = await page_xsrf(alice, srv.admin), await page_xsrf(bob, srv.admin)
        assert alices != bobs
        url = f"{srv.admin}/api/limits"
        refused = await alice.patch(url, json={"max_sessions": 4},
                                    headers={"X-XSRFToken": bobs})
        assert refused.status_code == 403
        # Alice's token dies with her login: a new login has a new token.
        assert (await alice.post(f"{srv.admin}/logout", data={"_xsrf": alices})).status_code \
            == 303
        assert (await log_in(alice, srv.admin, "alice")).status_code == 303
        stale = await alice.patch(url, json={"max_sessions": 4},
                                  headers={"X-XSRFToken": alices})
        assert stale.status_code == 403
        fresh = await alice.patch(url, json={"max_sessions": 4},
                                  headers={"X-XSRFToken": await page_xsrf(alice, srv.admin)})
        assert fresh.status_code == 200


async def test_a_change_from_another_sites_page_is_refused_even_with_the_token() -> None:
    async with running_admin() as srv, client_at() as client:
        assert (await log_in(client, srv.admin)).status_code == 303
        token = await page_xsrf(client, srv.admin)
        url = f"{srv.admin}/api/limits"
        for header in ({"Origin": "https://sibling.example"}, {"Origin": "null"},
                       {"Referer": "https://sibling.example/x"}):
            resp = await client.patch(url, json={"max_sessions": 5},
                                      headers={"X-XSRFToken": token, **header})
            assert resp.status_code == 403, header
            assert "not this dashboard's" in resp.json()["error"]
        own = {"Origin": srv.base, "X-XSRFToken": token}
        assert (await client.patch(url, json={"max_sessions": 5}, headers=own)).status_code \
            == 200
        # Bearer callers carry no ambient credential: no token, no Origin rule.
        scripted = await client.patch(url, json={"max_sessions": 6},
                                      headers={**BEARER, "Origin": "https://elsewhere.example"})
        assert scripted.status_code == 200
