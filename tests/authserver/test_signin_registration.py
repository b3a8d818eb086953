"""Registration floods are bounded (RFC 7591 registration is open, as MCP clients expect):
the live options ``oauth_max_client_metadata_bytes``, ``oauth_max_redirect_uris``,
``oauth_max_clients`` and ``oauth_registrations_per_minute``, each at its bound and one
over, counted as refusals, and tuned while the server runs."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest
from signin_support import REDIRECT, App, serving

pytestmark = pytest.mark.timeout(60)


def body_of(size: int, **metadata: Any) -> bytes:
    """A registration exactly ``size`` bytes long (padded with a field nobody keeps)."""
    base = {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata,
            "padding": ""}
    raw = json.dumps(base).encode()
    assert len(raw) <= size
    base["padding"] = "x" * (size - len(raw))
    raw = json.dumps(base).encode()
    assert len(raw) == size
    return raw


async def post(app: App, body: bytes, **kw: Any) -> httpx.Response:
    return await app.http(**kw).post(app.url("register"), content=body,
                                     headers={"Content-Type": "application/json"})


async def test_metadata_bytes_at_the_bound_and_one_over() -> None:
    async with serving(oauth_max_client_metadata_bytes=1000) as app:
        assert (await post(app, body_of(1000))).status_code == 201
        over = await post(app, body_of(1001))
        assert over.status_code == 413  # its declared length: refused before it is read
        assert over.json()["error"] == "invalid_request"
        assert app.refusals["oauth_max_client_metadata_bytes"] == 1

        async def chunks() -> Any:  # no declared length: refused as it grows past the bound
            yield body_of(1001)[:600]
            yield body_of(1001)[600:]

        chunked = await app.http().post(app.url("register"), content=chunks(),
                                        headers={"Content-Type": "application/json"})
        assert chunked.status_code == 413
        assert app.refusals["oauth_max_client_metadata_bytes"] == 2
        app.transport.options.update({"oauth_max_client_metadata_bytes": 2000})  # live
        assert (await post(app, body_of(2000))).status_code == 201
        assert (await post(app, body_of(2001))).status_code == 413


async def test_redirect_uris_at_the_bound_and_one_over() -> None:
    async with serving(oauth_max_redirect_uris=3) as app:
        uris = [f"http://127.0.0.1:{9000 + n}/cb" for n in range(4)]
        ok = await post(app, json.dumps({"redirect_uris": uris[:3]}).encode())
        assert ok.status_code == 201 and len(ok.json()["redirect_uris"]) == 3
        over = await post(app, json.dumps({"redirect_uris": uris}).encode())
        assert over.status_code == 400 and over.json()["error"] == "invalid_redirect_uri"
        assert app.refusals["oauth_max_redirect_uris"] == 1
        app.transport.options.update({"oauth_max_redirect_uris": 4})
        assert (await post(app, json.dumps({"redirect_uris": uris}).encode())).status_code == 201


async def test_clients_kept_at_the_bound_an_unused_one_makes_room_and_then_none_does() -> None:
    async with serving(oauth_max_clients=3, oauth_registrations_per_minute=None) as app:
        browser = await app.signed_in()
        first = await app.register(client_name="first")
        second = await app.register(client_name="second")
        third = await app.register(client_name="third")
        # full: the oldest client nobody authorized makes room
        fourth = await app.register(client_name="fourth")
        kept = {c["client_name"] for c in await app.signin.clients()}
        assert kept == {"second", "third", "fourth"}
        gone = await app.consent(browser, app.flow(first))
        assert gone.status_code == 400 and "invalid_client" in gone.text
        # once every kept client was authorized by someone, nothing makes room
        for client in (second, third, fourth):
            flow = app.flow(client)
            assert (await app.token(flow, await app.code(browser, flow))).status_code == 200
        refused = await app.http().post(app.url("register"),
                                        json={"redirect_uris": [REDIRECT]})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "3600"
        assert refused.json()["error"] == "temporarily_unavailable"
        assert app.refusals["oauth_max_clients"] == 1
        assert len(await app.signin.clients()) == 3
        app.transport.options.update({"oauth_max_clients": 4})  # live
        assert len([await app.register()]) == 1 and len(await app.signin.clients()) == 4


def _from(address: str) -> httpx.AsyncHTTPTransport:
    return httpx.AsyncHTTPTransport(local_address=address)


async def test_registrations_per_address_at_the_bound_and_one_over() -> None:
    try:  # a second loopback address to register from
        probe = socket.socket()
        probe.bind(("127.0.0.2", 0))
        probe.close()
    except OSError:
        pytest.skip("127.0.0.2 is not usable here")
    async with serving(oauth_registrations_per_minute=3) as app:
        body = json.dumps({"redirect_uris": [REDIRECT]}).encode()
        for _ in range(3):
            assert (await post(app, body)).status_code == 201
        over = await post(app, body)
        assert over.status_code == 429 and over.headers["retry-after"] == "60"
        assert over.json()["error"] == "too_many_requests"
        assert app.refusals["oauth_registrations_per_minute"] == 1
        other = await post(app, body, transport=_from("127.0.0.2"))  # another address
        assert other.status_code == 201
        app.transport.options.update({"oauth_registrations_per_minute": 5})  # live
        assert (await post(app, body)).status_code == 201
        app.transport.options.update({"oauth_registrations_per_minute": None})
        for _ in range(5):
            assert (await post(app, body)).status_code == 201
