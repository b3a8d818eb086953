"""Attacks on the sign-in, each refused: a redirect URI the client did not register, a code
replayed or used by another client, PKCE missing or ``plain``, a code for another
resource, a refresh token used again after rotation, a forged or foreign consent form,
open redirects through ``next``, scopes the user may not grant, and bad input anywhere:
never a 5xx, never a traceback, never an ERROR line in the log."""

from __future__ import annotations

import logging
import re
from urllib.parse import urlencode

import httpx
import pytest
from signin_support import REDIRECT, App, query_of, serving

import tornado_mcp.issuer.consent as consent_module

pytestmark = pytest.mark.timeout(60)


def assert_error_page(r: httpx.Response, error: str, status: int = 400) -> None:
    """A refusal shown to the user, never a redirect to anywhere."""
    assert r.status_code == status, r.text
    assert "location" not in r.headers
    assert f"<code>{error}</code>" in r.text and "Traceback" not in r.text


def assert_redirected_error(app: App, r: httpx.Response, error: str, state: str) -> None:
    assert r.status_code == 302, r.text
    assert r.headers["location"].startswith(REDIRECT)
    query = query_of(r.headers["location"])
    assert query["error"] == error and query["state"] == state and query["iss"] == app.base
    assert "code" not in query


@pytest.mark.parametrize("redirect_uri", [
    "http://127.0.0.1:9/elsewhere",          # the client's host, another path
    "http://127.0.0.1:9/callback?x=1",       # another query
    "https://evil.example/callback",         # another site
    "http://evil.example/callback",
    "http://127.0.0.1:9/callback#frag",
    'http://127.0.0.1:9/callback"><script>',  # characters an error may not carry
])
async def test_a_redirect_uri_the_client_did_not_register_gets_a_page_not_a_redirect(
        redirect_uri: str) -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register(), redirect_uri=redirect_uri)
        assert_error_page(await app.consent(browser, flow), "invalid_request")


async def test_a_loopback_redirect_may_take_any_port_but_nothing_else_may_differ() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        client = await app.register(redirect_uris=["http://127.0.0.1:33418/"])
        flow = app.flow(client, redirect_uri="http://127.0.0.1:59656/")  # VS Code does this
        assert await app.code(browser, flow)
        flow = app.flow(client, redirect_uri="http://localhost:59656/")  # another host name
        assert_error_page(await app.consent(browser, flow), "invalid_request")


async def test_registration_keeps_only_acceptable_redirect_uris() -> None:
    async with serving() as app:
        r = await app.http().post(app.url("register"), json={
            "redirect_uris": ["https://evil.example/cb"], "token_endpoint_auth_method": "none"})
        assert r.status_code == 400 and r.json()["error"] == "invalid_redirect_uri"
        for bad in ("javascript:alert(1)", "data:text/html,x", "file:///etc/passwd",
                    "http://10.0.0.1/cb", "https://claude.ai.evil.example/cb"):
            r = await app.http().post(app.url("register"), json={"redirect_uris": [bad]})
            assert r.status_code == 400, bad
        # Cursor registers three at once: the two it may use are kept
        client = await app.register(redirect_uris=[
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "https://unknown.example/cb", "http://localhost:8787/callback"])
        assert client["redirect_uris"] == [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback"]


async def test_a_replayed_code_is_refused_and_ends_what_it_was_traded_for() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register())
        code = await app.code(browser, flow)
        first = await app.token(flow, code)
        assert first.status_code == 200
        assert (await app.call(first.json()["access_token"])).status_code == 200
        again = await app.token(flow, code)
        assert again.status_code == 400
        assert again.json() == {"error": "invalid_grant",
                                "error_description": "authorization code was already used"}
        assert (await app.call(first.json()["access_token"])).status_code == 401
        dead = await app.refresh(flow, first.json()["refresh_token"])
        assert dead.status_code == 400 and dead.json()["error"] == "invalid_grant"


async def test_a_code_presented_by_another_client_is_refused_and_not_spent() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register())
        code = await app.code(browser, flow)
        thief = app.flow(await app.register())
        thief.verifier = flow.verifier  # even with the right verifier
        stolen = await app.token(thief, code)
        assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant"
        assert (await app.token(flow, code)).status_code == 200  # the rightful client


@pytest.mark.parametrize(("change", "description"), [
    ({"code_challenge": None, "code_challenge_method": None}, "PKCE is required"),
    ({"code_challenge_method": "plain"}, "code_challenge_method must be S256"),
    ({"code_challenge_method": None}, "code_challenge_method must be S256"),
    ({"code_challenge": "short"}, "Invalid 'code_challenge'"),
])
async def test_pkce_is_required_and_s256_only(change: dict[str, str | None],
                                              description: str) -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register(), **change)  # type: ignore[arg-type]
        r = await app.consent(browser, flow)
        assert_redirected_error(app, r, "invalid_request", flow.params["state"])
        assert query_of(r.headers["location"])["error_description"].startswith(description)


async def test_a_wrong_or_missing_verifier_is_refused_and_spends_nothing() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register())
        code = await app.code(browser, flow)
        wrong = await app.token(flow, code, code_verifier="x" * 64)
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        missing = await app.token(flow, code, code_verifier=None)
        assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
        assert (await app.token(flow, code)).status_code == 200


async def test_a_code_or_grant_for_one_resource_is_not_traded_for_another() -> None:
    async with serving() as app:
        app.signin.protect("/other")  # the server serves two endpoints
        browser = await app.signed_in()
        flow = app.flow(await app.register())  # for /mcp
        code = await app.code(browser, flow)
        for resource in (app.base + "/other", "https://evil.example/mcp"):
            r = await app.token(flow, code, resource=resource)
            assert r.status_code == 400 and r.json()["error"] == "invalid_target", resource
        tokens = (await app.token(flow, code, resource=app.mcp + "/")).json()  # the same one
        r = await app.refresh(flow, tokens["refresh_token"], resource=app.base + "/other")
        assert r.status_code == 400 and r.json()["error"] == "invalid_target"
        # a resource this server does not serve is refused at the authorization endpoint
        for resource in ("https://evil.example/mcp", app.mcp + "//", app.mcp + "x"):
            flow = app.flow(await app.register(), resource=resource)
            assert_redirected_error(app, await app.consent(browser, flow), "invalid_target",
                                    flow.params["state"])


async def test_a_refresh_token_used_again_after_rotation_ends_the_grant() -> None:
    async with serving() as app:
        flow, tokens = await app.tokens()
        rotated = await app.refresh(flow, tokens["refresh_token"])
        assert rotated.status_code == 200
        newest = rotated.json()
        assert (await app.call(newest["access_token"])).status_code == 200
        replay = await app.refresh(flow, tokens["refresh_token"])  # a stolen copy, say
        assert replay.status_code == 400
        assert replay.json()["error_description"] == "refresh token was already used"
        # the whole family is gone: the newest refresh token and access token too
        assert (await app.refresh(flow, newest["refresh_token"])).status_code == 400
        assert (await app.call(newest["access_token"])).status_code == 401
        assert (await app.call(tokens["access_token"])).status_code == 401
        # a made-up refresh token naming the grant is just unknown
        made_up = await app.refresh(flow, newest["refresh_token"].split(".")[0] + ".x")
        assert made_up.status_code == 400


async def test_the_consent_form_is_refused_without_the_users_own_live_ticket(
        monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving() as app:
        ada = await app.signed_in("ada")
        root = await app.signed_in("root")
        flow = app.flow(await app.register())
        page = await app.consent(ada, flow)
        ticket = re.search(r'name="ticket" value="([^"]+)"', page.text)
        assert ticket is not None
        # another user's browser made to post ada's form (CSRF with a ticket of hers)
        xsrf = root.cookies["_xsrf"]
        r = await root.post(app.url("authorize"), data={
            "ticket": ticket.group(1), "decision": "approve", "_xsrf": xsrf})
        assert_error_page(r, "invalid_request")
        # a ticket changed in transit (asking for more) does not verify
        body, mac = ticket.group(1).split(".")
        r = await app.decide(ada, page, ticket=body[:-4] + "AAAA." + mac)
        assert_error_page(r, "invalid_request")
        # no XSRF token (the app turns Tornado's check on): refused before anything else
        r = await ada.post(app.url("authorize"), data={"ticket": ticket.group(1),
                                                       "decision": "approve"})
        assert r.status_code == 403 and "location" not in r.headers
        # a ticket past its time
        monkeypatch.setattr(consent_module, "TICKET_TTL", -1)
        stale = await app.consent(ada, flow)
        r = await app.decide(ada, stale)
        assert_error_page(r, "invalid_request")
        # logged out: nobody to decide
        anon = app.http()
        r = await anon.post(app.url("authorize"), data={"ticket": ticket.group(1),
                                                        "decision": "approve"})
        assert r.status_code == 403


async def test_extra_scopes_posted_with_the_form_are_ignored() -> None:
    async with serving() as app:
        ada = await app.signed_in("ada")
        flow = app.flow(await app.register(), scope="notes")
        r = await app.decide(ada, await app.consent(ada, flow), scope="notes notes:admin")
        tokens = (await app.token(flow, query_of(r.headers["location"])["code"])).json()
        assert tokens["scope"] == "notes"
        hidden = await app.call(tokens["access_token"], "delete_all_notes")  # hidden: unknown
        assert hidden.status_code == 400 and "Unknown tool" in hidden.json()["error"]["message"]


@pytest.mark.parametrize("target", [
    "//evil.example/", "https://evil.example/", "/\\evil.example", "/\t/evil.example",
    "http:evil.example", "javascript:alert(1)", ""])
async def test_next_never_leads_off_the_app(target: str) -> None:
    async with serving() as app:
        browser = app.http()
        form = await browser.get(app.base + "/login", params={"next": target})
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
        assert xsrf is not None
        assert 'name="next" value="/"' in form.text
        r = await browser.post(app.base + "/login", data={
            "_xsrf": xsrf.group(1), "name": "ada", "password": "lovelace", "next": target})
        assert r.status_code == 302 and r.headers["location"] == "/"


async def test_next_back_to_the_authorization_request_is_followed() -> None:
    async with serving() as app:
        target = "/oauth/authorize?" + urlencode({"client_id": "x", "state": "s"})
        browser = app.http()
        form = await browser.get(app.base + "/login", params={"next": target})
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
        assert xsrf is not None
        r = await browser.post(app.base + "/login", data={
            "_xsrf": xsrf.group(1), "name": "ada", "password": "lovelace", "next": target})
        assert r.headers["location"] == target


async def test_a_token_signed_by_anyone_else_is_refused() -> None:
    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    async with serving() as app:
        _flow, tokens = await app.tokens()
        header = jwt.get_unverified_header(tokens["access_token"])
        claims = jwt.decode(tokens["access_token"], options={"verify_signature": False})
        claims["scope"] = "notes notes:admin"  # more than ada may grant
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        forged = jwt.encode(claims, pem, algorithm="RS256", headers={
            "kid": header["kid"], "typ": "at+jwt"})
        r = await app.call(forged, "delete_all_notes")
        assert r.status_code == 401 and "signature" in r.headers["www-authenticate"]
        hs = jwt.encode(claims, "secret" * 8, algorithm="HS256", headers={
            "kid": header["kid"], "typ": "at+jwt"})
        assert (await app.call(hs)).status_code == 401


GARBAGE_FORMS = [
    {}, {"grant_type": "password", "username": "ada", "password": "lovelace"},
    {"grant_type": "client_credentials"}, {"grant_type": "authorization_code"},
    {"grant_type": "authorization_code", "code": "x", "client_id": "nobody"},
    {"grant_type": "refresh_token", "refresh_token": "....", "client_id": "x"},
    {"grant_type": "refresh_token", "refresh_token": "a" * 5000},
    {"grant_type": "authorization_code", "code": "\u0000\u00e9", "client_id": "\"\\"},
    {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": "x.y.z"},
    {"grant_type": "authorization_code", "code": "c", "client_id": "https://127.0.0.1/x"},
]


async def test_bad_input_anywhere_is_a_clear_4xx_and_never_logged_as_an_error(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with serving(oauth_registrations_per_minute=None) as app:
        http = app.http()
        answers: list[httpx.Response] = []
        for form in GARBAGE_FORMS:
            answers.append(await http.post(app.url("token"), data=form))
            answers.append(await http.post(app.url("revoke"), data=form))
        for body in (b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe", b'{"redirect_uris": 5}',
                     b'{"redirect_uris": [5]}', b'{"redirect_uris": ["http://127.0.0.1/"],'
                     b' "grant_types": "x"}', b'{"redirect_uris": ["http://127.0.0.1/"], '
                     b'"token_endpoint_auth_method": "private_key_jwt"}',
                     b'{"redirect_uris": ["http://127.0.0.1/"], "client_name": 7}',
                     b'{"redirect_uris": ["http://127.0.0.1/"], "jwks_uri": "x"}'):
            answers.append(await http.post(app.url("register"), content=body,
                                           headers={"Content-Type": "application/json"}))
        answers.append(await http.post(app.url("token"), content=b"{}",
                                       headers={"Content-Type": "application/json"}))
        browser = await app.signed_in()
        for query in ("", "client_id=nobody", "response_type=token&client_id=x",
                      "client_id=https://127.0.0.1/doc", "client_id=%00%ff",
                      "client_id=" + "x" * 3000, "redirect_uri=javascript:x&client_id=y"):
            answers.append(await browser.get(app.url("authorize") + "?" + query))
        client = await app.register()
        for extra in ({"response_type": "token"}, {"response_type": "code token"},
                      {"scope": "\u0000"}, {"state": "\"\\"}, {"resource": "x"},
                      {"client_id": client["client_id"] + "x"}):
            flow = app.flow(client, **extra)
            answers.append(await app.consent(browser, flow))
        answers.append(await browser.post(app.url("authorize"), data={
            "_xsrf": browser.cookies["_xsrf"], "ticket": "x" * 20000, "decision": "approve"}))
        answers.append(await browser.post(app.url("authorize"), data={
            "_xsrf": browser.cookies["_xsrf"], "ticket": "a.b", "decision": "maybe"}))
        for r in answers:
            assert r.status_code < 500, (r.request.url, r.status_code, r.text)
            assert "Traceback" not in r.text
            if r.request.url.path != "/oauth/authorize":
                assert r.headers["content-type"].startswith("application/json"), r.text
                assert "error" in r.json() or r.status_code == 201  # jwks_uri: left out
    errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert errors == []
