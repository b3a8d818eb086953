"""Verifying JWT access tokens (RFC 9068) against the issuer's JWKS, with PyJWT.

Needs the ``oauth`` extra (``pip install 'tornado-mcp[oauth]'``).  A token is accepted when

* it is at most ``max_token_bytes`` long and parses as a JWS;
* its ``alg`` is in the allow-list (``none`` and the HMAC family can never be in it: an
  HMAC "signed" with a public key is the classic key-confusion forgery);
* its ``kid`` names a key of the issuer's JWKS (one refresh of the set is tried for an
  unknown ``kid``, at most once per ``refresh_interval``, so key rotation works and a
  stream of made-up ``kid`` values cannot turn into a stream of fetches);
* the signature verifies, ``iss`` is the issuer, ``aud`` holds the audience (the
  endpoint's own URL by default: RFC 8707, a token for another resource is refused, never
  passed on), ``exp`` is in the future and ``nbf``/``iat`` are not (``leeway`` seconds of
  clock skew allowed).

The JWKS is fetched with Tornado's :class:`~tornado.httpclient.AsyncHTTPClient` (never
blocking the IOLoop), bounded in bytes and in keys kept.

A client sends the same token with every request until it expires, so verified tokens are
remembered: at most ``cache_size`` of them (least recently used first out), keyed by a
SHA-256 of the token and the audience (the cache holds no token), each until its ``exp``
and at most ``cache_ttl`` seconds.  A repeat costs a hash and a lookup instead of a
signature check.  ``cache_size=0`` turns this off.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import jwt
from tornado.httpclient import HTTPClientError, HTTPRequest

from ..identity import Principal
from .errors import InvalidToken
from .http import fetch
from .verifier import principal_of

log = logging.getLogger("tornado_mcp.auth")

#: Signature algorithms accepted unless told otherwise: asymmetric only.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                      "ES256", "ES384", "ES512", "EdDSA")
#: Algorithms that are never allowed, whatever the configuration says.
FORBIDDEN_ALGORITHMS = frozenset({"none", "HS256", "HS384", "HS512"})


class JWTVerifier:
    """A :class:`~tornado_mcp.auth.TokenVerifier` for JWTs signed by ``issuer``.

    ``audience``: what ``aud`` must hold; ``None`` (the default) means the endpoint's own
    canonical URL.  ``max_keys`` bounds the keys kept from the JWKS; ``refresh_interval``
    is the least time between two fetches of it.
    """

    def __init__(self, issuer: str, jwks_url: str, *, audience: str | Sequence[str] | None = None,
                 algorithms: Iterable[str] = DEFAULT_ALGORITHMS, leeway: float = 30.0,
                 max_keys: int = 32, max_jwks_bytes: int = 256 * 1024,
                 refresh_interval: float = 60.0, fetch_timeout: float = 10.0,
                 cache_size: int = 1024, cache_ttl: float = 300.0) -> None:
        algs = tuple(algorithms)
        bad = sorted(a for a in algs if a in FORBIDDEN_ALGORITHMS or a.lower() == "none")
        if bad or not algs:
            raise ValueError(f"algorithms may not include {bad or 'nothing'}: "
                             "only asymmetric signatures are verifiable against a JWKS")
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.audience = (audience,) if isinstance(audience, str) else \
            (tuple(audience) if audience is not None else None)
        self.algorithms = algs
        self.leeway = leeway
        self.max_keys = max_keys
        self.max_jwks_bytes = max_jwks_bytes
        self.refresh_interval = refresh_interval
        self.fetch_timeout = fetch_timeout
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at: float | None = None  # monotonic time of the last fetch attempt
        self._fetching: asyncio.Future[None] | None = None
        #: JWKS fetches so far (successful or not), for tests and the curious.
        self.fetches = 0
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        # sha256(token, audience) -> (monotonic expiry, principal)
        self._verified: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()

    @property
    def cached(self) -> int:
        """Verified tokens remembered right now."""
        return len(self._verified)

    async def verify(self, token: str, resource: str) -> Principal:
        """The principal of a JWT signed by a key of the JWKS, unexpired, for its audience
        (this resource unless ``audience`` is set) and from ``issuer``;
        :class:`InvalidToken` (saying why) for any other."""
        key = hashlib.sha256(f"{resource}\0{token}".encode()).digest()
        hit = self._verified.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                self._verified.move_to_end(key)
                return hit[1]
            del self._verified[key]
        principal, exp = await self._verify(token, resource)
        ttl = min(self.cache_ttl, exp - time.time())
        if ttl > 0 and self.cache_size > 0:
            self._verified[key] = (time.monotonic() + ttl, principal)
            while len(self._verified) > self.cache_size:
                self._verified.popitem(last=False)
        return principal

    async def _verify(self, token: str, resource: str) -> tuple[Principal, float]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidToken("malformed token") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("token algorithm not allowed")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("malformed token")
        key = await self._key(kid)
        audience = list(self.audience) if self.audience is not None else [resource]
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key.key, algorithms=[alg], audience=audience, issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise InvalidToken("token expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("token not yet valid") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("token audience is not this resource") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("token issuer is not trusted") from None
        except jwt.MissingRequiredClaimError as exc:
            raise InvalidToken(f"token lacks the {exc.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("token signature does not verify") from None
        except jwt.PyJWTError:
            raise InvalidToken("invalid token") from None
        return principal_of(claims), float(claims["exp"])

    # -- keys -----------------------------------------------------------------------------
    async def _key(self, kid: str | None) -> jwt.PyJWK:
        key = self._find(kid)
        if key is not None:
            return key
        now = time.monotonic()
        if self._fetched_at is None or now - self._fetched_at >= self.refresh_interval:
            await self.refresh()
            key = self._find(kid)
            if key is not None:
                return key
        raise InvalidToken("token signing key is unknown")

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:  # no kid: only unambiguous with a single key
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def refresh(self) -> None:
        """Fetch the JWKS now (concurrent callers share one fetch)."""
        if self._fetching is None:
            self._fetching = asyncio.ensure_future(self._fetch())
        fut = self._fetching
        try:
            await asyncio.shield(fut)
        finally:
            if self._fetching is fut and fut.done():
                self._fetching = None

    async def _fetch(self) -> None:
        self._fetched_at = time.monotonic()
        self.fetches += 1
        req = HTTPRequest(self.jwks_url, headers={"Accept": "application/json"},
                          connect_timeout=self.fetch_timeout,
                          request_timeout=self.fetch_timeout)
        try:
            resp = await fetch(req, self.max_jwks_bytes)
            data = json.loads(resp.body)
            keys = data["keys"] if isinstance(data, dict) else None
            if not isinstance(keys, list):
                raise ValueError("no keys")
        except (HTTPClientError, OSError, ValueError, KeyError) as exc:
            log.warning("could not fetch the JWKS at %s: %s", self.jwks_url, exc)
            return  # keep the keys we have
        fresh: dict[str | None, jwt.PyJWK] = {}
        for jwk in keys:
            if len(fresh) >= self.max_keys:
                break
            if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(jwk)
            except jwt.PyJWTError:
                continue  # a key type or algorithm we cannot use
            fresh[key.key_id] = key
        self._keys = fresh
