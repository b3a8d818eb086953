"""The two token verifiers against the real authorization server: JWT with its JWKS (key
rotation, the refresh rate limit, the bound on keys kept) and RFC 7662 introspection (the
cache, its bound and TTL)."""

from __future__ import annotations

import pytest
from authz_server import authorization_server
from joserfc.jwk import RSAKey
from oauth_support import TOOLS, mint

from tornado_mcp.auth import IntrospectionVerifier, InvalidToken
from tornado_mcp.auth.jwt_verifier import JWTVerifier

pytestmark = pytest.mark.timeout(60)
AUD = "http://127.0.0.1:8000/mcp"


async def test_jwks_rotation_is_picked_up_and_unknown_kids_do_not_cause_fetches() -> None:
    async with authorization_server() as authz:
        verifier = JWTVerifier(authz.issuer, authz.issuer + "/jwks", refresh_interval=3600)
        p = await verifier.verify(mint(authz, AUD), AUD)
        assert (p.subject, p.scopes, p.method) == ("alice", frozenset({TOOLS}), "bearer")
        assert p.claims["client_id"] == "test-client"
        assert verifier.fetches == 1
        await verifier.verify(mint(authz, AUD), AUD)
        assert verifier.fetches == 1  # keys are cached
        # the server rotates: the first token with the new kid refreshes the set once
        verifier.refresh_interval = 0.0
        authz.rotate()
        assert (await verifier.verify(mint(authz, AUD), AUD)).subject == "alice"
        assert verifier.fetches == 2
        # made-up kids: at most one fetch per refresh_interval
        verifier.refresh_interval = 3600
        stranger = RSAKey.generate_key(2048, parameters={"kid": "made-up"})
        for _ in range(5):
            with pytest.raises(InvalidToken, match="token signing key is unknown"):
                await verifier.verify(mint(authz, AUD, key=stranger), AUD)
        assert verifier.fetches == 2


async def test_keys_kept_are_bounded_exactly() -> None:
    async with authorization_server() as authz:
        first = authz.signing_key
        authz.rotate()
        second = authz.signing_key
        verifier = JWTVerifier(authz.issuer, authz.issuer + "/jwks", max_keys=1)
        assert (await verifier.verify(mint(authz, AUD, key=first), AUD)).subject == "alice"
        with pytest.raises(InvalidToken, match="unknown"):  # the second key was not kept
            await verifier.verify(mint(authz, AUD, key=second), AUD)
        both = JWTVerifier(authz.issuer, authz.issuer + "/jwks", max_keys=2)
        await both.verify(mint(authz, AUD, key=first), AUD)
        await both.verify(mint(authz, AUD, key=second), AUD)
        assert both.fetches == 1


async def test_verified_tokens_are_remembered_per_audience_within_a_bound() -> None:
    async with authorization_server() as authz:
        verifier = JWTVerifier(authz.issuer, authz.issuer + "/jwks", cache_size=1)
        token_a, token_b = mint(authz, AUD, sub="a"), mint(authz, AUD, sub="b")
        assert (await verifier.verify(token_a, AUD)).subject == "a"
        assert verifier.cached == 1  # at the bound
        # the same token presented to another resource is judged anew, and refused
        with pytest.raises(InvalidToken, match="audience"):
            await verifier.verify(token_a, "http://127.0.0.1:1/other")
        assert (await verifier.verify(token_b, AUD)).subject == "b"
        assert verifier.cached == 1  # over it: a went
        # a remembered token still answers after the keys are gone (no work is redone)
        verifier._keys.clear()
        verifier.refresh_interval = 3600
        assert (await verifier.verify(token_b, AUD)).subject == "b"
        with pytest.raises(InvalidToken, match="unknown"):
            await verifier.verify(token_a, AUD)
        # an expired token is never remembered
        off = JWTVerifier(authz.issuer, authz.issuer + "/jwks")
        with pytest.raises(InvalidToken, match="expired"):
            await off.verify(mint(authz, AUD, exp=1_000_000_000, iat=999_999_000), AUD)
        assert off.cached == 0


def test_none_and_hmac_can_never_be_allowed() -> None:
    for algs in (["none"], ["RS256", "HS256"], ["NONE"], []):
        with pytest.raises(ValueError, match="algorithms may not include"):
            JWTVerifier("https://as", "https://as/jwks", algorithms=algs)


async def test_an_unreachable_jwks_refuses_tokens_without_raising() -> None:
    async with authorization_server() as authz:
        verifier = JWTVerifier(authz.issuer, "http://127.0.0.1:9/jwks", fetch_timeout=2.0)
        with pytest.raises(InvalidToken, match="token signing key is unknown"):
            await verifier.verify(mint(authz, AUD), AUD)


async def test_introspection_accepts_caches_and_bounds() -> None:
    async with authorization_server() as authz:
        authz.add_resource_server("rs", "rs-secret")
        token_a, token_b, token_c = (authz.store_token(AUD, "alice"),
                                     authz.store_token(AUD, "bob"),
                                     authz.store_token("http://elsewhere/mcp", "carol"))
        verifier = IntrospectionVerifier(authz.issuer + "/introspect", "rs", "rs-secret",
                                         issuer=authz.issuer, cache_size=2)
        assert "rs-secret" not in repr(verifier)
        p = await verifier.verify(token_a, AUD)
        assert (p.subject, p.scopes, p.method) == ("alice", frozenset({TOOLS}), "bearer")
        await verifier.verify(token_a, AUD)
        assert (verifier.requests, verifier.cached) == (1, 1)  # answered from the cache
        assert (await verifier.verify(token_b, AUD)).subject == "bob"
        assert (verifier.requests, verifier.cached) == (2, 2)  # at the bound
        with pytest.raises(InvalidToken, match="token audience is not this resource"):
            await verifier.verify(token_c, AUD)
        assert (verifier.requests, verifier.cached) == (3, 2)  # over it: the oldest went
        await verifier.verify(token_b, AUD)
        assert verifier.requests == 3
        await verifier.verify(token_a, AUD)
        assert verifier.requests == 4  # alice's answer had been evicted
        with pytest.raises(InvalidToken, match="token is not active"):
            await verifier.verify("never-issued", AUD)
        wrong = IntrospectionVerifier(authz.issuer + "/introspect", "rs", "wrong")
        with pytest.raises(InvalidToken, match="token could not be verified"):
            await wrong.verify(token_a, AUD)


async def test_introspection_ttl_zero_asks_every_time() -> None:
    async with authorization_server() as authz:
        authz.add_resource_server("rs", "rs-secret")
        token = authz.store_token(AUD, "alice")
        verifier = IntrospectionVerifier(authz.issuer + "/introspect", "rs", "rs-secret",
                                         cache_ttl=0)
        await verifier.verify(token, AUD)
        await verifier.verify(token, AUD)
        assert (verifier.requests, verifier.cached) == (2, 0)


async def test_an_introspected_token_is_judged_per_resource_it_is_presented_at() -> None:
    async with authorization_server() as authz:
        authz.add_resource_server("rs", "rs-secret")
        token = authz.store_token(AUD, "alice")
        verifier = IntrospectionVerifier(authz.issuer + "/introspect", "rs", "rs-secret")
        assert (await verifier.verify(token, AUD)).subject == "alice"
        # accepted at its own resource, and remembered: still refused at another one
        with pytest.raises(InvalidToken, match="token audience is not this resource"):
            await verifier.verify(token, "http://elsewhere/mcp")
        assert (await verifier.verify(token, AUD)).subject == "alice"
        assert verifier.requests == 2  # one answer per resource, each from the cache after
