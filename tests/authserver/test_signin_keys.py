"""The signing keys: the first signs at once; a new one is published before it signs and
the old one keeps verifying until every token it signed has expired, then is dropped and
its tokens refused; keys rotate by themselves after ``rotate_after``."""

from __future__ import annotations

import asyncio

import pytest

from tornado_mcp.issuer import keys
from tornado_mcp.issuer.keys import KeyRing
from tornado_mcp.issuer.store import MemoryStore
from tornado_mcp.issuer.tokens import IssuedTokens, claims_for, sign
from tornado_mcp.protocol.auth_errors import InvalidToken

ISSUER = "http://127.0.0.1:1"
RESOURCE = ISSUER + "/mcp"
pytestmark = pytest.mark.timeout(60)


async def token(ring: KeyRing) -> tuple[str, str]:
    kid, key = await ring.signer()
    return kid, sign(claims_for(ISSUER, "ada", "c", ["notes"], RESOURCE, "g", 60), kid, key)


@pytest.mark.parametrize("algorithm", ["RS256", "PS256", "ES256"])
async def test_each_algorithm_signs_and_verifies(algorithm: str) -> None:
    store = MemoryStore()
    ring = KeyRing(store, algorithm)
    _kid, t = await token(ring)
    principal = await IssuedTokens(ISSUER, ring, store).verify(t, RESOURCE)
    assert principal.subject == "ada" and principal.scopes == frozenset({"notes"})
    assert ring.jwks()["keys"][0]["alg"] == algorithm


async def test_a_new_key_is_published_before_it_signs_and_the_old_one_verifies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "PUBLISH_DELAY", 0.3)
    store = MemoryStore()
    ring = KeyRing(store)
    verifier = IssuedTokens(ISSUER, ring, store)
    first, old = await token(ring)  # the first key signs at once
    new = await ring.rotate()
    assert [k["kid"] for k in ring.jwks()["keys"]] == [first, new]  # published
    assert (await token(ring))[0] == first  # ... but not signing yet
    await asyncio.sleep(0.3)  # its publication is a time, not an event
    kid, fresh = await token(ring)
    assert kid == new
    for t in (old, fresh):
        assert (await verifier.verify(t, RESOURCE)).subject == "ada"


async def test_a_key_is_dropped_once_its_tokens_expired_and_its_tokens_are_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "PUBLISH_DELAY", 0.0)
    store = MemoryStore()
    age = [3600.0]
    ring = KeyRing(store, max_token_age=lambda: age[0])
    verifier = IssuedTokens(ISSUER, ring, store, cache_size=0)
    first, old = await token(ring)
    await ring.rotate()
    await ring.rotate()
    assert len(ring.kids) == 3  # tokens live an hour: nothing expired, nothing dropped
    age[0] = 0.0  # as if an hour had passed since the second key replaced the first
    await ring.rotate()
    assert first not in ring.kids and len(ring.kids) == 2
    with pytest.raises(InvalidToken, match="signing key is unknown"):
        await verifier.verify(old, RESOURCE)
    assert (await verifier.verify((await token(ring))[1], RESOURCE)).subject == "ada"


async def test_keys_rotate_by_themselves_after_rotate_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys, "PUBLISH_DELAY", 0.0)
    ring = KeyRing(MemoryStore(), rotate_after=0.2)
    first, _ = await token(ring)
    assert (await token(ring))[0] == first
    await asyncio.sleep(0.25)  # the key's age is a time, not an event
    second, _ = await token(ring)
    assert second != first and ring.kids == [first, second]


async def test_the_verifier_refuses_what_is_not_one_of_its_tokens() -> None:
    store = MemoryStore()
    ring = KeyRing(store)
    verifier = IssuedTokens(ISSUER, ring, store)
    kid, key = await ring.signer()

    def signed(**claims: object) -> str:
        body = claims_for(ISSUER, "ada", "c", ["notes"], RESOURCE, "g", 60)
        body.update(claims)
        return sign({k: v for k, v in body.items() if v is not None}, kid, key)

    cases = {
        signed(iss="http://elsewhere"): "issuer is not trusted",
        signed(aud="http://127.0.0.1:1/other"): "audience is not this resource",
        signed(exp=1): "token expired",
        signed(iat=2**40): "not yet valid",
        signed(sub=None): "sub claim",
        signed(gid=None): "gid claim",
        signed(client_id=""): "client_id claim",
        "not.a.token": "malformed",
        "x": "malformed",
    }
    for t, why in cases.items():
        with pytest.raises(InvalidToken, match=why):
            await verifier.verify(t, RESOURCE)
