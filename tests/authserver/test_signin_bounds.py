"""The sign-in's fixed bounds, each at its bound and one over: a token or revocation form
(16 KiB), the consent form (32 KiB), an authorization request's query (8 KiB), the codes
waiting to be traded in (``MAX_CODES``, counted as ``oauth_pending_codes``), the metadata
documents cached (``CACHE_SIZE``) and fetched at once (``MAX_CONCURRENT_FETCHES``), and the
registration counters kept (``MAX_BUCKETS``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from urllib.parse import urlencode

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web
from signin_support import REDIRECT, serving
from test_signin_cimd import allow_private, authorize, documents

from tornado_mcp.authserver import handlers, pages
from tornado_mcp.issuer import cimd, store
from tornado_mcp.issuer.store import MemoryStore

pytestmark = pytest.mark.timeout(60)


def form_of(size: int) -> bytes:
    """An urlencoded token request exactly ``size`` bytes long."""
    head = "grant_type=refresh_token&refresh_token=x&padding="
    return (head + "p" * (size - len(head))).encode()


@pytest.mark.parametrize("endpoint", ["token", "revoke"])
async def test_a_form_at_its_bound_is_read_and_one_byte_over_is_refused_unread(
        endpoint: str) -> None:
    async with serving() as app:
        http = app.http()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        at = await http.post(app.url(endpoint), content=form_of(handlers.MAX_FORM_BYTES),
                             headers=headers)
        assert at.status_code in (400, 401)  # read and judged: no such client
        over = await http.post(app.url(endpoint),
                               content=form_of(handlers.MAX_FORM_BYTES + 1), headers=headers)
        assert over.status_code == 413
        assert over.json()["error_description"] == "the body exceeds 16384 bytes"


async def test_the_consent_form_and_the_authorization_query_at_and_over_their_bounds() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        client = await app.register()
        flow = app.flow(client)
        base = urlencode(flow.params) + "&padding="
        at = await browser.get(app.url("authorize") + "?" + base
                               + "p" * (pages.MAX_QUERY_BYTES - len(base)))
        assert at.status_code == 200  # the consent page
        over = await browser.get(app.url("authorize") + "?" + base
                                 + "p" * (pages.MAX_QUERY_BYTES + 1 - len(base)))
        assert over.status_code == 414 and "too long" in over.text
        xsrf = browser.cookies["_xsrf"]
        head = urlencode({"_xsrf": xsrf, "decision": "approve", "ticket": "t"}) + "&p="
        for size, status in ((pages.MAX_CONSENT_FORM_BYTES, 400),
                             (pages.MAX_CONSENT_FORM_BYTES + 1, 413)):
            r = await browser.post(app.url("authorize"),
                                   content=(head + "p" * (size - len(head))).encode(),
                                   headers={"Content-Type":
                                            "application/x-www-form-urlencoded"})
            assert r.status_code == status, (size, r.text)


async def test_codes_waiting_at_the_bound_and_one_over(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    monkeypatch.setattr(store, "MAX_CODES", 2)
    async with serving() as app:
        browser = await app.signed_in()
        client = await app.register()
        codes = [await app.code(browser, app.flow(client)) for _ in range(2)]
        flow = app.flow(client)
        r = await app.decide(browser, await app.consent(browser, flow))
        assert r.status_code == 302
        location = r.headers["location"]
        assert location.startswith(REDIRECT) and "error=temporarily_unavailable" in location
        assert app.refusals["oauth_pending_codes"] == 1
        assert len(codes) == 2


async def test_metadata_documents_cached_at_the_bound_and_one_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cimd, "CACHE_SIZE", 2)
    async with documents() as docs, serving(allow_private) as app:
        urls = [docs.client(f"c{n}.json") for n in range(3)]
        for url in urls[:2] * 2:  # two documents: each fetched once
            assert (await authorize(app, url))[2].status_code == 200
        assert sorted(docs.hits) == ["/c0.json", "/c1.json"]
        await authorize(app, urls[2])  # a third pushes the least recently used out
        await authorize(app, urls[0])
        assert docs.hits.count("/c0.json") == 2 and docs.hits.count("/c1.json") == 1


@contextlib.asynccontextmanager
async def held_documents(gate: asyncio.Event) -> AsyncIterator[tuple[str, list[str]]]:
    """Documents whose server answers only once ``gate`` is set."""
    hits: list[str] = []
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"

    class Held(tornado.web.RequestHandler):
        async def get(self) -> None:
            hits.append(self.request.path)
            await gate.wait()
            url = base + self.request.path
            self.finish(json.dumps({"client_id": url, "redirect_uris": [REDIRECT]}))

    http = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/.*", Held)]))
    http.add_sockets(sockets)
    try:
        yield base, hits
    finally:
        gate.set()
        http.stop()
        await http.close_all_connections()


async def test_metadata_documents_fetched_at_once_at_the_bound_and_one_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cimd, "MAX_CONCURRENT_FETCHES", 2)
    gate = asyncio.Event()
    async with held_documents(gate) as (base, hits), serving(allow_private) as app:
        browser = await app.signed_in()
        pages_ = [asyncio.ensure_future(app.consent(browser, app.flow(
            {"client_id": f"{base}/c{n}.json"}))) for n in range(3)]
        for _ in range(200):  # the server's own progress: no event reaches the test
            if len(hits) >= 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        assert len(hits) == 2  # the third waits for a slot
        gate.set()
        answers = await asyncio.gather(*pages_)
        assert [a.status_code for a in answers] == [200, 200, 200] and len(hits) == 3


async def test_registration_counters_kept_at_the_bound_and_one_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "MAX_BUCKETS", 2)
    kept = MemoryStore()
    assert [await kept.hit(b, 60.0) for b in ("a", "a", "b")] == [1, 2, 1]
    assert await kept.hit("c", 60.0) == 1  # a third address: the least recent one goes
    assert await kept.hit("b", 60.0) == 2 and await kept.hit("a", 60.0) == 1
