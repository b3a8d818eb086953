"""Client ID Metadata Documents: a client id that is an https URL is fetched, checked and
cached; never from a private, loopback or link-local address (the server's own network),
unless the host allows it; bounded in bytes; no redirects; refusals cached too."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web
from signin_support import REDIRECT, App, serving

from tornado_mcp.authserver import SignIn

pytestmark = pytest.mark.timeout(60)


class Documents:
    """A web server publishing metadata documents, counting what it is asked."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.hits: list[str] = []
        self.base = ""

    def url(self, path: str) -> str:
        return f"{self.base}/{path}"

    def put(self, path: str, doc: dict[str, Any] | bytes, status: int = 200,
            **headers: str) -> str:
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        self.docs["/" + path] = (status, body, headers)
        return self.url(path)

    def client(self, path: str, **fields: Any) -> str:
        url = self.url(path)
        return self.put(path, {"client_id": url, "client_name": "Doc Client",
                               "redirect_uris": [REDIRECT], **fields})


@contextlib.asynccontextmanager
async def documents() -> AsyncIterator[Documents]:
    docs = Documents()

    class Handler(tornado.web.RequestHandler):
        def get(self) -> None:
            docs.hits.append(self.request.path)
            status, body, headers = docs.docs.get(self.request.path, (404, b"{}", {}))
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            for k, v in headers.items():
                self.set_header(k.replace("_", "-"), v)
            self.finish(body)

    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    docs.base = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    http = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/.*", Handler)]))
    http.add_sockets(sockets)
    try:
        yield docs
    finally:
        http.stop()
        await http.close_all_connections()


def allow_private(signin: SignIn) -> None:
    signin.policy.metadata_document_private_addresses = True


async def authorize(app: App, client_id: str, **params: str) -> Any:
    browser = await app.signed_in()
    flow = app.flow({"client_id": client_id}, **params)
    return browser, flow, await app.consent(browser, flow)


@pytest.mark.parametrize("client_id", [
    "https://127.0.0.1:{port}/client.json", "https://localhost:{port}/client.json",
    "https://[::1]:{port}/client.json", "https://10.0.0.1/client.json",
    "https://169.254.169.254/latest/meta-data/client.json",  # a cloud's metadata service
    "https://[::ffff:127.0.0.1]:{port}/client.json", "https://0.0.0.0:{port}/client.json",
    "https://100.64.0.1/client.json"])
async def test_a_document_on_a_private_address_is_never_fetched(client_id: str) -> None:
    async with documents() as docs, serving() as app:
        port = docs.base.rsplit(":", 1)[1]
        url = client_id.format(port=port)
        _b, _f, page = await authorize(app, url)
        assert page.status_code == 400 and "invalid_client" in page.text
        assert "public address" in page.text or "fetched" in page.text
        assert docs.hits == []
        r = await app.http().post(app.url("token"), data={
            "grant_type": "authorization_code", "code": "x", "client_id": url})
        assert r.status_code == 400 and r.json()["error"] == "invalid_client"


@pytest.mark.parametrize(("client_id", "why"), [
    ("http://example.com/client.json", "must use https"),
    ("https://example.com", "needs a path"), ("https://example.com/", "needs a path"),
    ("https://example.com/a/../client.json", "needs a path"),
    ("https://user:pw@example.com/client.json", "no user info"),
])
async def test_a_client_id_url_that_cannot_be_one_is_refused_unfetched(client_id: str,
                                                                       why: str) -> None:
    async with serving() as app:
        _b, _f, page = await authorize(app, client_id)
        assert page.status_code == 400 and why in page.text


async def test_a_document_signs_a_client_in_and_is_fetched_once() -> None:
    async with documents() as docs, serving(allow_private) as app:
        url = docs.client("client.json", client_uri="https://app.example",
                          grant_types=["authorization_code", "refresh_token"])
        browser, flow, page = await authorize(app, url)
        assert page.status_code == 200, page.text
        assert "Allow Doc Client?" in page.text and "its metadata document" in page.text
        code = await app.code(browser, flow)
        r = await app.token(flow, code)
        assert r.status_code == 200, r.text
        assert (await app.call(r.json()["access_token"])).status_code == 200
        refreshed = await app.refresh(flow, r.json()["refresh_token"])
        assert refreshed.status_code == 200
        assert docs.hits == ["/client.json"]  # cached since
        assert await app.signin.clients() == []  # never registered: it describes itself


@pytest.mark.parametrize(("doc", "why"), [
    ({"client_id": "https://elsewhere.example/client.json", "redirect_uris": [REDIRECT]},
     "client_id is not its own URL"),
    ({"client_secret": "s", "redirect_uris": [REDIRECT]}, "may not carry a secret"),
    ({"token_endpoint_auth_method": "client_secret_basic", "redirect_uris": [REDIRECT]},
     "token_endpoint_auth_method must be one of none"),
    ({"redirect_uris": ["https://evil.example/cb"]}, "not accepted"),
    ({}, "redirect_uris must be"),
])
async def test_a_document_that_will_not_do_is_refused_and_the_refusal_cached(
        doc: dict[str, Any], why: str) -> None:
    async with documents() as docs, serving(allow_private) as app:
        url = docs.url("client.json")
        docs.put("client.json", {"client_id": url, **doc})
        for _ in range(2):
            _b, _f, page = await authorize(app, url)
            assert page.status_code == 400 and why in page.text, page.text
        assert docs.hits == ["/client.json"]  # asked once a minute, however often it comes


async def test_a_document_over_the_byte_bound_a_redirect_and_an_error_are_refused(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with documents() as docs, serving(allow_private,
                                            oauth_max_client_metadata_bytes=2000) as app:
        url = docs.url("big.json")
        docs.put("big.json", {"client_id": url, "redirect_uris": [REDIRECT],
                              "client_name": "x" * 3000})
        _b, _f, page = await authorize(app, url)
        assert page.status_code == 400 and "exceeds 2000 bytes" in page.text
        assert app.refusals["oauth_max_client_metadata_bytes"] == 1
        at = docs.url("at.json")
        doc = {"client_id": at, "redirect_uris": [REDIRECT], "client_name": ""}
        doc["client_name"] = "x" * (2000 - len(json.dumps(doc)))
        docs.put("at.json", doc)
        _b, _f, page = await authorize(app, at)
        assert page.status_code == 200, page.text  # exactly at the bound
        moved = docs.put("moved.json", b"{}", 302, Location=docs.client("real.json"))
        _b, _f, page = await authorize(app, moved)
        assert page.status_code == 400 and "answered 302" in page.text
        assert "/real.json" not in docs.hits
        _b, _f, page = await authorize(app, docs.url("missing.json"))
        assert page.status_code == 400 and "answered 404" in page.text
    # cutting a document off is no error of ours: nothing at ERROR, no traceback
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []
