"""The app's own login as the authorization server, step by step over HTTP: discovery from
the endpoint's 401, registration, the app's login page and back, the consent page, the
code, the token (checked here with PyJWT against the published keys, independently of the
endpoint), tools called with it in both protocol eras, refresh, revocation, and the
scopes a user may grant."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
from authlib.oauth2 import rfc8414, rfc9207
from signin_support import REDIRECT, query_of, serving, structured

pytestmark = pytest.mark.timeout(60)


async def test_metadata_is_rfc8414_and_names_the_issuer_the_endpoint_points_at() -> None:
    async with serving() as app:
        http = app.http()
        refused = await app.call(None)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        prm_url = challenge.split('resource_metadata="')[1].split('"')[0]
        prm = (await http.get(prm_url)).json()
        assert prm["resource"] == app.mcp and prm["authorization_servers"] == [app.base]
        assert prm["scopes_supported"] == ["notes", "notes:admin"]
        r = await http.get(app.base + "/.well-known/oauth-authorization-server")
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.headers["access-control-allow-origin"] == "*"
        meta = r.json()
        rfc8414.AuthorizationServerMetadata(meta).validate(
            metadata_classes=[rfc9207.AuthorizationServerMetadata])
        assert meta["issuer"] == app.base
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert meta["client_id_metadata_document_supported"] is True
        assert meta["authorization_response_iss_parameter_supported"] is True
        assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
        assert {meta[k] for k in ("authorization_endpoint", "token_endpoint",
                                  "registration_endpoint", "revocation_endpoint",
                                  "jwks_uri")} == {app.url(n) for n in (
                                      "authorize", "token", "register", "revoke", "jwks")}
        preflight = await http.options(app.url("register"), headers={
            "Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 204
        assert "POST" in preflight.headers["access-control-allow-methods"]


async def test_login_consent_code_token_and_the_tools_see_the_user() -> None:
    async with serving() as app:
        client = await app.register(client_name="Notes helper")
        assert "client_secret" not in client  # a public client: PKCE only
        flow = app.flow(client)
        browser = app.http()
        # not logged in: off to the app's own login page, with next back to this request
        r = await app.consent(browser, flow)
        assert r.status_code == 302
        login = r.headers["location"]
        assert login.startswith("/login?next=")
        back = parse_qs(urlsplit(login).query)["next"][0]
        assert back.startswith("/oauth/authorize?") and "code_challenge=" in back
        browser = await app.signed_in("ada")
        page = await app.consent(browser, flow)
        assert page.status_code == 200
        assert "Allow Notes helper?" in page.text and "<strong>ada</strong>" in page.text
        assert 'data-scope="notes"' in page.text and "127.0.0.1:9" in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer"
        code = await app.code(browser, flow)
        r = await app.token(flow, code)
        assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
        tokens = r.json()
        assert tokens["token_type"] == "Bearer" and tokens["scope"] == "notes"
        assert tokens["expires_in"] == app.signin.policy.access_token_ttl
        # the token, checked independently of the endpoint: PyJWT against the JWKS
        keys = (await app.http().get(app.url("jwks"))).json()
        header = jwt.get_unverified_header(tokens["access_token"])
        assert header["typ"] == "at+jwt" and header["alg"] == "RS256"
        key = next(jwt.PyJWK(k) for k in keys["keys"] if k["kid"] == header["kid"])
        claims = jwt.decode(tokens["access_token"], key.key, algorithms=["RS256"],
                            audience=app.mcp, issuer=app.base)
        assert claims["sub"] == "ada" and claims["client_id"] == flow.client_id
        assert claims["scope"] == "notes"
        assert all("d" not in k and "p" not in k for k in keys["keys"])  # public keys only
        me = structured(await app.call(tokens["access_token"]))
        assert me == {"subject": "ada", "scopes": ["notes"], "method": "bearer",
                      "authenticated": True}
        added = await app.call(tokens["access_token"], "add_note", {"text": "from Claude"})
        assert added.status_code == 200
        assert app.example.NOTES == {"ada": ["from Claude"]}


async def test_the_legacy_era_takes_the_same_token() -> None:
    async with serving() as app:
        _flow, tokens = await app.tokens()
        http = app.http(headers={"Authorization": "Bearer " + tokens["access_token"],
                                 "Accept": "application/json, text/event-stream"})
        init = await http.post(app.mcp, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        assert init.status_code == 200, init.text
        sid = init.headers["mcp-session-id"]
        headers = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        await http.post(app.mcp, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers=headers)
        r = await http.post(app.mcp, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                           "params": {"name": "whoami", "arguments": {}}},
                            headers=headers)
        assert r.status_code == 200
        body = r.text
        data = json.loads(body.split("data:", 1)[1].strip().splitlines()[0]) \
            if body.startswith(("event:", "data:", "id:", ":")) else r.json()
        assert data["result"]["structuredContent"]["subject"] == "ada"


async def test_deny_sends_access_denied_back_with_state_and_issuer() -> None:
    async with serving() as app:
        browser = await app.signed_in()
        flow = app.flow(await app.register())
        r = await app.decide(browser, await app.consent(browser, flow), "deny")
        assert r.status_code == 302
        query = query_of(r.headers["location"])
        assert r.headers["location"].startswith(REDIRECT)
        assert query.pop("error_description")
        assert query == {"error": "access_denied", "state": flow.params["state"],
                         "iss": app.base}


@pytest.mark.parametrize(("user", "asked", "granted"), [
    ("ada", "notes notes:admin", "notes"),       # ada may not grant notes:admin
    ("root", "notes notes:admin", "notes notes:admin"),
    ("ada", None, "notes"),                      # no scope asked: what the user may grant
    ("root", None, "notes notes:admin"),
    ("ada", "notes offline_access openid", "notes"),  # unknown scopes left out, not refused
])
async def test_a_token_never_carries_more_than_the_user_may_grant(
        user: str, asked: str | None, granted: str) -> None:
    async with serving() as app:
        browser = await app.signed_in(user)
        flow = app.flow(await app.register(), scope=asked)  # type: ignore[arg-type]
        page = await app.consent(browser, flow)
        if user == "ada" and asked and "notes:admin" in asked:
            assert 'data-withheld="notes:admin"' in page.text
        r = await app.token(flow, await app.code(browser, flow))
        assert r.json()["scope"] == granted
        admin = await app.call(r.json()["access_token"], "delete_all_notes")
        # Without the scope the tool is hidden (the example hides what a caller may not
        # call), and a hidden name answers as an unknown one.
        assert admin.status_code == (200 if "notes:admin" in granted else 400)
        if "notes:admin" not in granted:
            assert "Unknown tool" in admin.json()["error"]["message"]


async def test_refresh_rotates_and_drops_what_the_user_may_no_longer_grant() -> None:
    async with serving() as app:
        flow, tokens = await app.tokens("root", "notes notes:admin")
        r = await app.refresh(flow, tokens["refresh_token"])
        assert r.status_code == 200, r.text
        fresh = r.json()
        assert fresh["refresh_token"] != tokens["refresh_token"]
        assert fresh["scope"] == "notes notes:admin"
        app.example.USERS["root"] = (app.example.USERS["root"][0], ["notes"])  # demoted
        r = await app.refresh(flow, fresh["refresh_token"])
        assert r.status_code == 200 and r.json()["scope"] == "notes"
        hidden = await app.call(r.json()["access_token"], "delete_all_notes")
        assert hidden.status_code == 400 and "Unknown tool" in hidden.json()["error"]["message"]
        # asking for less is allowed, for more than the grant is not
        r2 = await app.refresh(flow, r.json()["refresh_token"], scope="notes notes:admin")
        assert r2.status_code == 400 and r2.json()["error"] == "invalid_scope"


@pytest.mark.parametrize("method", ["client_secret_post", "client_secret_basic"])
async def test_a_confidential_client_authenticates_with_its_secret(method: str) -> None:
    async with serving() as app:
        browser = await app.signed_in()
        client = await app.register(token_endpoint_auth_method=method)
        assert client["client_secret"] and client["client_secret_expires_at"] == 0
        flow = app.flow(client)
        code = await app.code(browser, flow)
        if method == "client_secret_basic":
            flow.secret = None
            wrong = await app.http().post(app.url("token"), auth=(flow.client_id, "nope"),
                                          data={"grant_type": "authorization_code",
                                                "code": code, "redirect_uri": REDIRECT,
                                                "code_verifier": flow.verifier})
            assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
            r = await app.http().post(app.url("token"), auth=(flow.client_id,
                                                              client["client_secret"]),
                                      data={"grant_type": "authorization_code", "code": code,
                                            "redirect_uri": REDIRECT,
                                            "code_verifier": flow.verifier})
        else:
            wrong = await app.token(flow, code, client_secret="nope")
            assert wrong.status_code in (400, 401) and wrong.json()["error"] == "invalid_client"
            r = await app.token(flow, code)
        assert r.status_code == 200, r.text
        # without its secret, the confidential client is refused
        assert (await app.refresh(flow, r.json()["refresh_token"])).status_code in (400, 401)


@pytest.mark.parametrize("which", ["refresh_token", "access_token"])
async def test_revocation_ends_the_grant_and_the_endpoint_refuses_its_token_at_once(
        which: str) -> None:
    async with serving() as app:
        flow, tokens = await app.tokens()
        assert (await app.call(tokens["access_token"])).status_code == 200
        r = await app.http().post(app.url("revoke"), data={
            "token": tokens[which], "token_type_hint": which, "client_id": flow.client_id})
        assert r.status_code == 200 and r.json() == {}
        refused = await app.call(tokens["access_token"])
        assert refused.status_code == 401
        assert 'error_description="token revoked"' in refused.headers["www-authenticate"]
        again = await app.refresh(flow, tokens["refresh_token"])
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        # an unknown token is no error (RFC 7009 §2.2)
        r = await app.http().post(app.url("revoke"), data={"token": "nothing",
                                                            "client_id": flow.client_id})
        assert r.status_code == 200


async def test_another_client_cannot_revoke_a_token() -> None:
    async with serving() as app:
        _flow, tokens = await app.tokens()
        other = await app.register()
        r = await app.http().post(app.url("revoke"), data={
            "token": tokens["refresh_token"], "client_id": other["client_id"]})
        assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
        assert (await app.call(tokens["access_token"])).status_code == 200


async def test_two_endpoints_one_server_and_a_token_works_only_where_it_is_meant() -> None:
    async with serving() as app:
        other = app.signin.protect("/other")
        assert other.resource == app.base + "/other"
        browser = await app.signed_in()
        flow = app.flow(await app.register(), resource=app.base + "/other")
        r = await app.token(flow, await app.code(browser, flow), resource=app.base + "/other")
        assert r.status_code == 200, r.text
        refused = await app.call(r.json()["access_token"])  # meant for /other, not /mcp
        assert refused.status_code == 401
        assert "audience" in refused.headers["www-authenticate"]

