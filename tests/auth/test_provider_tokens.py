"""Access tokens shaped as the identity providers people run issue them (header and claims
as each provider documents them), signed by the real test authorization server's key and
presented over real HTTP to a resource configured as docs/auth.md says for that provider:
each is accepted with the defaults, with the subject and scopes the docs promise.  The
provider's ID token is refused (its audience is the client's id), and the refusals of
earlier rounds (alg none, key confusion, expired, wrong audience or issuer, a removed key)
still hold for tokens typed ``JWT`` or untyped.  ``strict_rfc9068`` keeps the RFC 9068
check: ``at+jwt`` only, required."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from typing import Any

import jwt
import pytest
from authz_server import AuthorizationServer, authorization_server
from inspector_cli import inspector
from joserfc.jwk import RSAKey
from mcp_http import Running, loopback_sockets, running
from oauth_support import ADMIN, TOOLS, protected_server
from test_jwt_keys import jwt_setup

from tornado_mcp.auth import OAuthResource
from tornado_mcp.auth.jwt_verifier import JWTVerifier

pytestmark = pytest.mark.timeout(60)

CLIENT_ID = "0f9c2a6e-6c1f-4a8e-9b7e-3d2c1b0a9f8e"  # the MCP client's id at the provider
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
USER_OID = "00000000-0000-0000-66f3-3332eca7ea81"


def sign(authz: AuthorizationServer, claims: dict[str, Any], headers: dict[str, Any],
         key: RSAKey | None = None) -> str:
    signer = key or authz.signing_key
    return jwt.encode(claims, signer.as_pem(private=True), algorithm="RS256",
                      headers={"kid": signer.kid, **headers})


def base(authz: AuthorizationServer, aud: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": authz.issuer, "aud": aud, "iat": now, "nbf": now, "exp": now + 300,
            "jti": uuid.uuid4().hex}


# Each provider: the resource's configuration (as docs/auth.md gives it), its access token
# (header, claims) for resource URL ``url``, its ID token, and who the principal must be.
def keycloak(authz: AuthorizationServer, url: str) -> dict[str, Any]:
    sub = "f7a1c2d3-0000-4000-8000-000000000001"
    access = {**base(authz, [url, "account"]), "sub": sub, "typ": "Bearer",
              "azp": "mcp-client", "sid": uuid.uuid4().hex, "acr": "1",
              "scope": f"openid profile email {TOOLS}", "preferred_username": "alice",
              "realm_access": {"roles": ["offline_access"]}}
    id_token = {**base(authz, "mcp-client"), "sub": sub, "typ": "ID", "azp": "mcp-client",
                "nonce": "n-0S6_WzA2Mj", "preferred_username": "alice"}
    return {"config": {}, "header": {"typ": "JWT"}, "access": access, "id": id_token,
            "id_header": {"typ": "JWT"}, "subject": sub,
            "scopes": {"openid", "profile", "email", TOOLS}}


def entra(authz: AuthorizationServer, url: str) -> dict[str, Any]:
    access = {**base(authz, url), "ver": "2.0",
              "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ", "oid": USER_OID,
              "tid": TENANT, "azp": CLIENT_ID, "azpacr": "0", "scp": f"{TOOLS} {ADMIN}",
              "name": "Alice", "preferred_username": "alice@contoso.com",
              "uti": "AbCdEf", "rh": "0.AAAA"}
    id_token = {**base(authz, CLIENT_ID), "ver": "2.0", "sub": access["sub"], "oid": USER_OID,
                "tid": TENANT, "nonce": "abc", "name": "Alice"}
    return {"config": {"subject_claim": "oid"},
            "header": {"typ": "JWT", "x5t": "nOo3ZDrODXEK1jKWhXslHR_KXEg"}, "access": access,
            "id": id_token, "id_header": {"typ": "JWT"}, "subject": USER_OID,
            "scopes": {TOOLS, ADMIN}}


def auth0(authz: AuthorizationServer, url: str) -> dict[str, Any]:
    access = {**base(authz, [url, "https://tenant.eu.auth0.com/userinfo"]),
              "sub": "auth0|64f1a2b3c4d5e6f708192a3b", "azp": CLIENT_ID,
              "scope": f"openid profile {TOOLS}", "permissions": [TOOLS, ADMIN]}
    id_token = {**base(authz, CLIENT_ID), "sub": access["sub"], "nonce": "n", "name": "alice",
                "sid": "s"}
    return {"config": {"scope_claims": ("scope", "permissions")}, "header": {"typ": "JWT"},
            "access": access, "id": id_token, "id_header": {"typ": "JWT"},
            "subject": access["sub"], "scopes": {"openid", "profile", TOOLS, ADMIN}}


def auth0_rfc9068(authz: AuthorizationServer, url: str) -> dict[str, Any]:
    access = {**base(authz, url), "sub": "auth0|64f1a2b3c4d5e6f708192a3b",
              "client_id": CLIENT_ID, "scope": TOOLS}
    id_token = {**base(authz, CLIENT_ID), "sub": access["sub"], "nonce": "n"}
    return {"config": {}, "header": {"typ": "at+jwt"}, "access": access, "id": id_token,
            "id_header": {"typ": "JWT"}, "subject": access["sub"], "scopes": {TOOLS}}


def okta(authz: AuthorizationServer, url: str) -> dict[str, Any]:
    access = {**base(authz, url), "ver": 1, "sub": "alice@example.com",
              "cid": "0oa1b2c3d4e5f6g7h8i9", "uid": "00u1a2b3c4d5e6f7g8h9",
              "scp": [TOOLS, "openid"], "auth_time": int(time.time())}
    id_token = {**base(authz, "0oa1b2c3d4e5f6g7h8i9"), "ver": 1, "sub": "00u1a2b3c4d5e6f7g8h9",
                "nonce": "n", "amr": ["pwd"], "idp": "00o1", "auth_time": int(time.time())}
    return {"config": {}, "header": {}, "access": access, "id": id_token,
            "id_header": {}, "subject": "alice@example.com", "scopes": {TOOLS, "openid"}}


PROVIDERS = {"keycloak": keycloak, "entra-v2": entra, "auth0": auth0,
             "auth0-rfc9068": auth0_rfc9068, "okta": okta}


provider_setup = jwt_setup  # the real authorization server, our endpoint trusting it


async def call(srv: Running, token: str, name: str = "whoami") -> Any:
    return await srv.modern("tools/call", {"name": name, "arguments": {}},
                            headers={"Authorization": f"Bearer {token}"})


def no_typ(headers: dict[str, Any]) -> dict[str, Any]:
    """PyJWT writes ``typ: JWT`` unless told ``typ: None``."""
    return {"typ": None, **headers}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_the_providers_access_token_is_accepted_with_its_documented_config(
        provider: str) -> None:
    async with authorization_server() as probe:
        config = PROVIDERS[provider](probe, "http://x/mcp")["config"]
    async with provider_setup(**config) as s:
        shape = PROVIDERS[provider](s.authz, s.srv.url)
        token = sign(s.authz, shape["access"], no_typ(shape["header"]))
        assert jwt.get_unverified_header(token).get("typ") == shape["header"].get("typ")
        r = await call(s.srv, token)
        assert r.status == 200, r.body
        me = r.json["result"]["structuredContent"]
        assert me["subject"] == shape["subject"] and me["method"] == "bearer"
        assert set(me["scopes"]) == shape["scopes"]
        admin = await call(s.srv, token, "admin_only")
        assert admin.status == (200 if ADMIN in shape["scopes"] else 403), admin.body


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
async def test_the_providers_id_token_is_refused(provider: str) -> None:
    async with authorization_server() as probe:
        config = PROVIDERS[provider](probe, "http://x/mcp")["config"]
    async with provider_setup(**config) as s:
        shape = PROVIDERS[provider](s.authz, s.srv.url)
        r = await call(s.srv, sign(s.authz, shape["id"], no_typ(shape["id_header"])))
        assert r.status == 401, r.body
        assert r.json["error"]["message"] == \
            "Unauthorized: token audience is not this resource"


async def test_an_id_token_is_refused_even_when_its_audience_is_configured() -> None:
    """A resource configured with the client's id as its audience (a mistake) still
    refuses Keycloak's ID token, by its payload typ."""
    async with authorization_server() as authz:
        sockets = loopback_sockets()
        url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
        oauth = OAuthResource.jwt(authz.issuer, authz.issuer + "/jwks",
                                  audience=["mcp-client", url], resource=url)
        async with running(protected_server(), oauth=oauth, sockets=sockets) as srv:
            shape = keycloak(authz, url)
            r = await call(srv, sign(authz, shape["id"], {"typ": "JWT"}))
            assert r.status == 401
            assert r.json["error"]["message"] == \
                "Unauthorized: token is not an access token (its typ claim is 'ID')"
            refresh = {**shape["access"], "typ": "Refresh"}
            assert (await call(srv, sign(authz, refresh, {"typ": "JWT"}))).status == 401
            assert (await call(srv, sign(authz, shape["access"], {"typ": "JWT"}))
                    ).status == 200


@pytest.mark.parametrize(("typ", "status"), [
    ("at+jwt", 200), ("application/at+jwt", 200), ("JWT", 401), (None, 401)])
async def test_strict_rfc9068_accepts_only_at_jwt(typ: str | None, status: int) -> None:
    async with provider_setup(strict_rfc9068=True) as s:
        shape = auth0_rfc9068(s.authz, s.srv.url)
        r = await call(s.srv, sign(s.authz, shape["access"], {"typ": typ}))
        assert r.status == status, r.body


@pytest.mark.parametrize(("typ", "status"), [
    ("JWT", 200), ("jwt", 200), ("application/jwt", 200), ("at+jwt", 200), (None, 200),
    ("id_token", 401), ("dpop+jwt", 401), ("logout+jwt", 401)])
async def test_default_typ_list(typ: str | None, status: int) -> None:
    async with provider_setup() as s:
        r = await call(s.srv, sign(s.authz, keycloak(s.authz, s.srv.url)["access"],
                                   {"typ": typ}))
        assert r.status == status, r.body


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(authz: AuthorizationServer, claims: dict[str, Any], header: dict[str, Any],
           alg: str) -> str:
    head = b64(json.dumps({"alg": alg, "kid": authz.signing_key.kid, **header}).encode())
    signing_input = f"{head}.{b64(json.dumps(claims).encode())}"
    if alg == "none":
        return f"{signing_input}."
    mac = hmac.new(authz.signing_key.as_pem(private=False), signing_input.encode(),
                   hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


@pytest.mark.parametrize("typ", ["JWT", None])
@pytest.mark.parametrize(("case", "message"), [
    ("alg_none", "token algorithm not allowed"),
    ("key_confusion", "token algorithm not allowed"),
    ("expired", "token expired"),
    ("wrong_audience", "token audience is not this resource"),
    ("wrong_issuer", "token issuer is not trusted"),
    ("unknown_key", "token signing key is unknown"),
])
async def test_earlier_refusals_hold_for_jwt_typed_and_untyped_tokens(
        case: str, message: str, typ: str | None) -> None:
    async with provider_setup() as s:
        claims = keycloak(s.authz, s.srv.url)["access"]
        header = {"typ": typ} if typ else {}
        token = {
            "alg_none": lambda: forged(s.authz, claims, header, "none"),
            "key_confusion": lambda: forged(s.authz, claims, header, "HS256"),
            "expired": lambda: sign(s.authz, {**claims, "exp": 1_000_000_000,
                                              "iat": 999_999_000, "nbf": 999_999_000},
                                    {"typ": typ}),
            "wrong_audience": lambda: sign(s.authz, {**claims, "aud": "http://127.0.0.1:1/x"},
                                           {"typ": typ}),
            "wrong_issuer": lambda: sign(s.authz, {**claims, "iss": "http://127.0.0.1:1"},
                                         {"typ": typ}),
            "unknown_key": lambda: sign(s.authz, claims, {"typ": typ},
                                        key=RSAKey.generate_key(2048,
                                                                parameters={"kid": "x"})),
        }[case]()
        r = await call(s.srv, token)
        assert r.status == 401, r.body
        assert r.json["error"]["message"] == f"Unauthorized: {message}"


async def test_a_removed_key_is_refused_for_a_jwt_typed_token() -> None:
    async with provider_setup(max_key_age=30.0) as s:
        assert s.srv.transport.oauth is not None
        verifier = s.srv.transport.oauth.verifier
        assert isinstance(verifier, JWTVerifier)
        old = s.authz.signing_key
        token = sign(s.authz, keycloak(s.authz, s.srv.url)["access"], {"typ": "JWT"})
        assert (await call(s.srv, token)).status == 200
        s.authz.rotate()
        s.authz.keys.remove(old)
        assert verifier._fetched_at is not None
        verifier._fetched_at -= verifier.max_key_age  # as if max_key_age had passed
        r = await call(s.srv, token)
        assert r.status == 401
        assert r.json["error"]["message"] == "Unauthorized: token signing key is unknown"


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_inspector_cli_presents_a_keycloak_token(era: str) -> None:
    """The Inspector's CLI with the token as a header (``--header``), in both eras."""
    async with provider_setup() as s:
        token = sign(s.authz, keycloak(s.authz, s.srv.url)["access"], {"typ": "JWT"})
        got = await inspector("--header", f"Authorization: Bearer {token}",  # variadic:
                              "--protocol-era", era, "--method", "tools/call",  # first
                              "--tool-name", "whoami", s.srv.url)
    assert "error" not in got, got
    assert got["result"]["structuredContent"]["subject"] == \
        "f7a1c2d3-0000-4000-8000-000000000001"
