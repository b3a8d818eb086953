"""DPoP against callers who bend it, over real HTTP: the replay cache keeps each caller's
proofs in that caller's share, so one caller (rate-limited or not, however many proofs it
sends) never locks another out; a proof's key is bounded (RSA size and exponent, EC and
OKP curves) before anything is verified; and proofs are verified on a thread, never on
the IOLoop."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc.jwk import RSAKey
from oauth_support import Holder, oauth_setup
from test_dpop import OUT_OF_BOUNDS, bound_token, call

from tornado_mcp.auth import DPoP
from tornado_mcp.auth.dpop import (
    MAX_RSA_BITS,
    MAX_RSA_EXPONENT_BITS,
    MIN_RSA_BITS,
    check_key_bounds,
)

pytestmark = pytest.mark.timeout(90)


def b64int(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def rsa_jwk(bits: int, e: int = 65537) -> dict[str, Any]:
    """A public RSA JWK with a modulus of exactly ``bits`` bits (made up: only its size
    matters, nothing can verify against it)."""
    n = (1 << (bits - 1)) | 1 | (0x5A5A5A5A << (bits // 2))
    return {"kty": "RSA", "n": b64int(n), "e": b64int(e)}


class RSAHolder(Holder):
    def __init__(self, bits: int) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        self.alg = "RS256"
        self.key = RSAKey.import_key(key)
        self.jkt = self.key.thumbprint()


# -- one caller cannot deny another -----------------------------------------------------
async def test_a_caller_filling_its_share_does_not_touch_another_caller() -> None:
    dpop = DPoP(replay_cache_size=50, replay_cache_per_caller=5)
    async with oauth_setup(dpop=dpop) as s:
        alice, bob = Holder(), Holder()
        a_token, b_token = bound_token(s, alice, sub="alice"), bound_token(s, bob, sub="bob")
        for _ in range(5):  # at the share: accepted
            r = await call(s.srv, f"DPoP {a_token}", [alice.proof(s.srv.url, a_token)])
            assert r.status == 200, r.body
        over = await call(s.srv, f"DPoP {a_token}", [alice.proof(s.srv.url, a_token)])
        assert over.status == 401
        assert over.json["error"]["message"] == \
            "Unauthorized: too many recent DPoP proofs: retry shortly"
        for _ in range(5):  # bob has his own share, whole
            r = await call(s.srv, f"DPoP {b_token}", [bob.proof(s.srv.url, b_token)])
            assert r.status == 200, r.body
        assert dpop.replays.held_by("bearer:user:alice") == 5
        assert dpop.replays.held_by("bearer:user:bob") == 5
        assert len(dpop.replays) == 10


async def test_a_rate_limited_caller_sending_many_proofs_leaves_others_their_place() -> None:
    """The issue's attack, scaled down: a rate-limited caller keeps sending fresh proofs
    (answered 429, then refused as over its share); another caller's proof is taken."""
    dpop = DPoP(replay_cache_size=40, replay_cache_per_caller=10)
    async with oauth_setup(dpop=dpop, rate_limit_per_principal=3) as s:
        mallory, carol = Holder(), Holder()
        m_token = bound_token(s, mallory, sub="mallory")
        statuses = [(await call(s.srv, f"DPoP {m_token}",
                                [mallory.proof(s.srv.url, m_token)])).status
                    for _ in range(60)]
        assert statuses[:3] == [200] * 3 and set(statuses[3:]) <= {429, 401}
        assert dpop.replays.held_by("bearer:user:mallory") == 10
        c_token = bound_token(s, carol, sub="carol")
        r = await call(s.srv, f"DPoP {c_token}", [carol.proof(s.srv.url, c_token)])
        assert r.status == 200, r.body
        assert s.srv.transport.snapshot().refusals["rate_limit_per_principal"] >= 7


# -- the proof key's bounds, checked before verifying ------------------------------------
def test_key_bounds_at_and_over() -> None:
    for bits in (MIN_RSA_BITS, 3072, MAX_RSA_BITS):
        check_key_bounds(rsa_jwk(bits), "RS256")
    for bits in (MIN_RSA_BITS - 1, 1024, MAX_RSA_BITS + 1, 16384):
        with pytest.raises(ValueError):
            check_key_bounds(rsa_jwk(bits), "PS256")
    check_key_bounds(rsa_jwk(2048, 3), "RS256")
    check_key_bounds(rsa_jwk(2048, (1 << MAX_RSA_EXPONENT_BITS) - 1), "RS256")
    for e in (1, 2, 65536, (1 << MAX_RSA_EXPONENT_BITS) + 1, (1 << 3071) + 1):
        with pytest.raises(ValueError):
            check_key_bounds(rsa_jwk(2048, e), "RS256")
    ec = Holder("ES256").key.as_dict(private=False)
    check_key_bounds(ec, "ES256")
    for alg in ("ES384", "ES512", "RS256", "EdDSA"):
        with pytest.raises(ValueError):
            check_key_bounds(ec, alg)
    with pytest.raises(ValueError):
        check_key_bounds({**ec, "x": ec["x"] + "AA"}, "ES256")
    ed = Holder("EdDSA").key.as_dict(private=False)
    check_key_bounds(ed, "EdDSA")
    with pytest.raises(ValueError):
        check_key_bounds({**ed, "crv": "X25519"}, "EdDSA")


@pytest.mark.parametrize(("jwk", "verdict"), [
    (rsa_jwk(3072, (1 << 3071) + 1), "bounds"),  # the 9-12.5 ms key
    (rsa_jwk(MIN_RSA_BITS - 1), "bounds"),
    (rsa_jwk(MAX_RSA_BITS + 1), "bounds"),
    (rsa_jwk(2048, (1 << MAX_RSA_EXPONENT_BITS) + 1), "bounds"),
    (rsa_jwk(2048, (1 << MAX_RSA_EXPONENT_BITS) - 1), "verified"),  # in bounds: checked
    (rsa_jwk(MAX_RSA_BITS), "verified"),
])
async def test_a_key_outside_the_bounds_is_refused_before_verifying(
        jwk: dict[str, Any], verdict: str) -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = RSAHolder(2048)
        token = bound_token(s, holder)
        proof = holder.proof(s.srv.url, token, header={"jwk": jwk})
        r = await call(s.srv, f"DPoP {token}", [proof])
        assert r.status == 401
        message = r.json["error"]["message"]
        assert message == (f"Unauthorized: {OUT_OF_BOUNDS}" if verdict == "bounds"
                           else "Unauthorized: DPoP proof signature does not verify")


@pytest.mark.parametrize("bits", [MIN_RSA_BITS, MAX_RSA_BITS])
async def test_real_rsa_keys_at_the_bounds_are_accepted(bits: int) -> None:
    async with oauth_setup(dpop=DPoP()) as s:
        holder = RSAHolder(bits)
        token = bound_token(s, holder)
        r = await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)])
        assert r.status == 200, r.body


async def test_proofs_are_verified_off_the_ioloop() -> None:
    dpop = DPoP()
    threads: list[str] = []
    check = dpop.check_proof

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return check(*args)

    dpop.check_proof = spy  # type: ignore[method-assign]
    async with oauth_setup(dpop=dpop) as s:
        holder = Holder()
        token = bound_token(s, holder)
        started = time.perf_counter()
        assert (await call(s.srv, f"DPoP {token}", [holder.proof(s.srv.url, token)])
                ).status == 200
        assert time.perf_counter() - started < 5
    assert len(threads) == 1 and threads[0].startswith("dpop-verify")
    assert threads[0] != threading.main_thread().name
