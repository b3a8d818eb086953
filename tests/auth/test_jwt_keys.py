"""The JWT verifier's keys and token types over real HTTP, against the real authorization
server: a key the issuer removed stops verifying within ``max_key_age`` (tokens verified
with it are forgotten too), ``typ`` must be an access token's, and a token whose ``alg``
does not fit its key is a quiet 401, never an exception or a log flood."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest
from authz_server import authorization_server
from cryptography.hazmat.primitives.asymmetric import ec
from mcp_http import Running, loopback_sockets, running
from oauth_support import TOOLS, OAuthSetup, mint, protected_server

from tornado_mcp.auth import OAuthResource
from tornado_mcp.auth.jwt_verifier import JWTVerifier

pytestmark = pytest.mark.timeout(60)


@contextlib.asynccontextmanager
async def jwt_setup(**verifier_options: Any) -> AsyncIterator[OAuthSetup]:
    async with authorization_server() as authz:
        sockets = loopback_sockets()
        url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/mcp"
        oauth = OAuthResource.jwt(authz.issuer, authz.issuer + "/jwks", audience=url,
                                  required_scopes=[TOOLS], **verifier_options)
        async with running(protected_server(), oauth=oauth, sockets=sockets) as srv:
            yield OAuthSetup(authz, srv)


def verifier_of(srv: Running) -> JWTVerifier:
    assert srv.transport.oauth is not None
    verifier = srv.transport.oauth.verifier
    assert isinstance(verifier, JWTVerifier)
    return verifier


async def whoami(srv: Running, token: str) -> Any:
    return await srv.modern("tools/call", {"name": "whoami", "arguments": {}},
                            headers={"Authorization": f"Bearer {token}", "Mcp-Name": "whoami"})


def age_keys(verifier: JWTVerifier) -> None:
    """As if ``max_key_age`` seconds had passed since the keys were fetched."""
    assert verifier._fetched_at is not None
    verifier._fetched_at -= verifier.max_key_age


async def test_a_removed_key_is_refused_within_max_key_age() -> None:
    async with jwt_setup(max_key_age=30.0) as s:
        verifier = verifier_of(s.srv)
        old = s.authz.signing_key
        remembered = mint(s.authz, s.srv.url)
        assert (await whoami(s.srv, remembered)).status == 200
        assert verifier.fetches == 1
        s.authz.rotate()
        s.authz.keys.remove(old)  # the issuer retires the old key
        fresh_with_old = mint(s.authz, s.srv.url, key=old)
        # within max_key_age of the last fetch the old key is still known (no fetch)
        assert (await whoami(s.srv, fresh_with_old)).status == 200
        assert verifier.fetches == 1
        age_keys(verifier)
        for token in (fresh_with_old, remembered):  # remembered ones are forgotten too
            r = await whoami(s.srv, token)
            assert r.status == 401, r.body
            assert r.json["error"]["message"] == "Unauthorized: token signing key is unknown"
        assert verifier.fetches == 2  # one scheduled fetch; the kid miss waits its interval
        assert (await whoami(s.srv, mint(s.authz, s.srv.url))).status == 200  # the new key


async def test_keys_are_fetched_again_when_old_even_for_remembered_tokens() -> None:
    async with jwt_setup(max_key_age=30.0) as s:
        verifier = verifier_of(s.srv)
        token = mint(s.authz, s.srv.url)
        for _ in range(3):
            assert (await whoami(s.srv, token)).status == 200
        assert verifier.fetches == 1
        age_keys(verifier)
        assert (await whoami(s.srv, token)).status == 200  # the key is still published
        assert verifier.fetches == 2
        assert verifier.cached == 1  # nothing was removed: the cache was kept


def test_max_key_age_is_bounded() -> None:
    for age in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="max_key_age"):
            JWTVerifier("https://as", "https://as/jwks", max_key_age=age)


@pytest.mark.parametrize(("typ", "status"), [("at+jwt", 200), ("application/at+jwt", 200),
                                             ("AT+JWT", 200), ("JWT", 200), ("id_token", 401),
                                             ("dpop+jwt", 401)])
async def test_only_access_token_types_are_accepted(typ: str, status: int) -> None:
    """RFC 9068's types and the plain JWT that Keycloak, Entra ID and Auth0 give their
    access tokens (tests/auth/test_provider_tokens.py has their shapes)."""
    async with jwt_setup() as s:
        r = await whoami(s.srv, mint(s.authz, s.srv.url, headers={"typ": typ}))
        assert r.status == status, r.body
        if status == 401:
            assert r.json["error"]["message"] == \
                "Unauthorized: token type (typ) is not an access token's"


def untyped(token: str, authz: Any) -> str:
    claims = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode(claims, authz.signing_key.as_pem(private=True), algorithm="RS256",
                      headers={"kid": authz.signing_key.kid, "typ": None})


async def test_a_missing_typ_is_accepted_unless_required() -> None:
    async with jwt_setup() as s:
        token = untyped(mint(s.authz, s.srv.url), s.authz)
        assert "typ" not in jwt.get_unverified_header(token)
        assert (await whoami(s.srv, token)).status == 200
    async with jwt_setup(require_typ=True) as s:
        r = await whoami(s.srv, untyped(mint(s.authz, s.srv.url), s.authz))
        assert r.status == 401
        assert r.json["error"]["message"] == "Unauthorized: token type (typ) is missing"
    async with jwt_setup(token_types=["at+jwt"]) as s:
        assert (await whoami(s.srv, mint(s.authz, s.srv.url, headers={"typ": "JWT"}))
                ).status == 401


async def test_an_es256_token_naming_an_rsa_key_is_a_quiet_401(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with jwt_setup() as s:
        forger = ec.generate_private_key(ec.SECP256R1())
        claims = jwt.decode(mint(s.authz, s.srv.url), options={"verify_signature": False})
        forged = [jwt.encode({**claims, "jti": str(i)}, forger, algorithm="ES256",
                             headers={"kid": s.authz.signing_key.kid, "typ": "at+jwt"})
                  for i in range(20)]
        for token in forged:
            r = await whoami(s.srv, token)
            assert r.status == 401, r.body
            assert r.json["error"]["message"] == \
                "Unauthorized: token algorithm does not fit its signing key"
            assert 'error="invalid_token"' in r.headers["Www-Authenticate"]
    mine = [r for r in caplog.records if r.name == "tornado_mcp.auth"]
    assert not [r for r in mine if r.levelno >= logging.ERROR]
    assert len([r for r in mine if "refused a token whose alg" in r.getMessage()]) == 1


async def test_a_raising_verifier_is_logged_once_a_minute(
        caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        async def verify(self, token: str, resource: str) -> Any:
            raise TypeError(f"bug while looking at {token}")

    oauth = OAuthResource(Broken(), authorization_servers=["http://127.0.0.1:1"],
                          resource="http://127.0.0.1:1/mcp")
    async with running(protected_server(), oauth=oauth) as srv:
        for i in range(10):
            assert (await whoami(srv, f"token-{i}")).status == 401
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == ["token verifier Broken raised TypeError"]
