"""Verifying JWT access tokens (RFC 9068) against the issuer's JWKS, with PyJWT.

Needs the ``oauth`` extra (``pip install '.[oauth]'`` in a clone).  A token is accepted when

* it is at most ``max_token_bytes`` long and parses as a JWS;
* its ``typ`` is one the identity providers in use give their access tokens: RFC 9068's
  ``at+jwt`` (or ``application/at+jwt``: Auth0's RFC 9068 profile), ``JWT`` (Keycloak,
  Microsoft Entra ID, Auth0's default profile), or none at all (Okta), unless
  ``strict_rfc9068`` (only ``at+jwt``, and required) or ``token_types`` / ``require_typ``
  say otherwise.  What keeps an ID token out is its audience (the client's id, never this
  resource) and, for Keycloak, its payload ``typ`` (``ID``), refused whatever the header
  says;
* its ``alg`` is in the allow-list (``none`` and the HMAC family can never be in it: an
  HMAC "signed" with a public key is the classic key-confusion forgery) and fits the key
  its ``kid`` names (an ``ES256`` header naming an RSA key is refused, not tried);
* its ``kid`` names a key of the issuer's JWKS;
* the signature verifies, ``iss`` is the issuer, ``aud`` holds the audience (the
  configured resource URL by default: RFC 8707, a token for another resource is refused,
  never passed on), ``exp`` is in the future and ``nbf``/``iat`` are not (``leeway``
  seconds of clock skew allowed).

The JWKS is fetched with Tornado's :class:`~tornado.httpclient.AsyncHTTPClient` (never
blocking the IOLoop), bounded in bytes and in keys kept, and fetched again

* once the keys are ``max_key_age`` seconds old (before the next token is checked), so a
  key the issuer removed is refused within ``max_key_age`` of its removal;
* for a token naming an unknown ``kid``, at most once per ``refresh_interval``, so a new
  key works at once and a stream of made-up ``kid`` values cannot turn into a stream of
  fetches.

A client sends the same token with every request until it expires, so verified tokens are
remembered: at most ``cache_size`` of them (least recently used first out), keyed by a
SHA-256 of the token and the audience (the cache holds no token), each until its ``exp``
and at most ``cache_ttl`` seconds, and forgotten all at once when a fetch finds a key
removed or changed.  A repeat costs a hash and a lookup instead of a signature check.
``cache_size=0`` turns this off.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import jwt
from tornado.httpclient import HTTPClientError, HTTPRequest

from ..protocol.auth_errors import InvalidToken
from ..protocol.identity import Principal
from .http import fetch
from .quietlog import Throttled
from .verifier import principal_of

log = logging.getLogger("tornado_mcp.auth")

#: Signature algorithms accepted unless told otherwise: asymmetric only.
DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                      "ES256", "ES384", "ES512", "EdDSA")
#: PyJWT >= 2.10 checks that ``sub`` is a string (older ones leave it to us).
_InvalidSubject: type[Exception] = getattr(jwt.exceptions, "InvalidSubjectError",
                                           type("_NeverRaised", (Exception,), {}))
#: Algorithms that are never allowed, whatever the configuration says.
FORBIDDEN_ALGORITHMS = frozenset({"none", "HS256", "HS384", "HS512"})
#: The ``typ`` values of an access token (RFC 9068 §2.1), compared case-insensitively.
ACCESS_TOKEN_TYPES = ("at+jwt", "application/at+jwt")
#: The ``typ`` values accepted by default: RFC 9068's, and the plain ``JWT`` that Keycloak,
#: Microsoft Entra ID and Auth0 (its default profile) give their access tokens.
PROVIDER_TOKEN_TYPES = (*ACCESS_TOKEN_TYPES, "jwt", "application/jwt")
#: Payload ``typ`` claims of tokens that are not access tokens (Keycloak's ID, refresh and
#: logout tokens), compared case-insensitively.
NOT_ACCESS_PAYLOAD_TYPES = frozenset({"id", "refresh", "offline", "logout"})
#: The key an algorithm needs: JWK ``kty`` and, for ECDSA, ``crv``.
_KEY_OF = {**{a: ("RSA", None) for a in ("RS256", "RS384", "RS512", "PS256", "PS384",
                                          "PS512")},
           "ES256": ("EC", "P-256"), "ES384": ("EC", "P-384"), "ES512": ("EC", "P-521"),
           "EdDSA": ("OKP", None)}


class _Key(NamedTuple):
    """A key of the JWKS, with what it says about the algorithms it is for."""

    jwk: jwt.PyJWK
    kty: str | None
    crv: str | None
    alg: str | None
    #: Its JWK as canonical JSON (a key whose material changed is another key).
    text: str

    def fits(self, alg: str) -> bool:
        """Whether a signature by ``alg`` can be checked with this key at all."""
        if self.alg is not None and self.alg != alg:
            return False
        need = _KEY_OF.get(alg)
        if need is None:  # no rule for it: left to PyJWT, whose errors are a 401 too
            return True
        return self.kty == need[0] and (need[1] is None or self.crv == need[1])


class JWTVerifier:
    """A :class:`~tornado_mcp.auth.TokenVerifier` for JWTs signed by ``issuer``.

    ``audience``: what ``aud`` must hold; ``None`` (the default) means the resource's
    configured canonical URL.  ``max_keys`` bounds the keys kept from the JWKS;
    ``max_key_age`` is how old they may get before they are fetched again;
    ``refresh_interval`` the least time between two fetches for unknown ``kid`` values.
    ``token_types``: the ``typ`` values accepted (``None``: any); ``require_typ``: refuse a
    token without one; ``strict_rfc9068``: both at their RFC 9068 setting (``at+jwt`` or
    ``application/at+jwt``, required).  ``subject_claim``: the claim naming the user (``sub``;
    ``oid`` for Entra ID's stable object id); ``scope_claims``: the claims whose scopes are
    granted, together (``scope`` then ``scp`` by default, the first present; e.g.
    ``("scope", "permissions")`` for Auth0's RBAC permissions).
    """

    def __init__(self, issuer: str, jwks_url: str, *, audience: str | Sequence[str] | None = None,
                 algorithms: Iterable[str] = DEFAULT_ALGORITHMS, leeway: float = 30.0,
                 max_keys: int = 32, max_jwks_bytes: int = 256 * 1024,
                 refresh_interval: float = 60.0, max_key_age: float = 300.0,
                 fetch_timeout: float = 10.0, cache_size: int = 1024, cache_ttl: float = 300.0,
                 token_types: Iterable[str] | None = PROVIDER_TOKEN_TYPES,
                 require_typ: bool = False, strict_rfc9068: bool = False,
                 subject_claim: str = "sub",
                 scope_claims: Sequence[str] | None = None) -> None:
        algs = tuple(algorithms)
        bad = sorted(a for a in algs if a in FORBIDDEN_ALGORITHMS or a.lower() == "none")
        if bad or not algs:
            raise ValueError(f"algorithms may not include {bad or 'nothing'}: "
                             "only asymmetric signatures are verifiable against a JWKS")
        if not 0 < max_key_age < float("inf") or refresh_interval < 0:
            raise ValueError("max_key_age must be a positive number of seconds and "
                             "refresh_interval may not be negative")
        if strict_rfc9068:
            token_types, require_typ = ACCESS_TOKEN_TYPES, True
        self.token_types = None if token_types is None else \
            frozenset(t.lower() for t in token_types)
        self.require_typ = require_typ
        self.subject_claim = subject_claim
        self.scope_claims = tuple(scope_claims) if scope_claims is not None else None
        self.max_key_age = max_key_age
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
        self._keys: dict[str | None, _Key] = {}
        self._fetched_at: float | None = None  # monotonic time of the last fetch attempt
        self._fetching: asyncio.Future[None] | None = None
        #: JWKS fetches so far (successful or not), for tests and the curious.
        self.fetches = 0
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        # sha256(token, audience) -> (monotonic expiry, principal)
        self._verified: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()
        #: Tokens whose ``alg`` does not fit their key are logged, one line a minute.
        self._misfits = Throttled(log)

    @property
    def cached(self) -> int:
        """Verified tokens remembered right now."""
        return len(self._verified)

    async def verify(self, token: str, resource: str) -> Principal:
        """The principal of a JWT signed by a key of the JWKS, unexpired, for its audience
        (this resource unless ``audience`` is set) and from ``issuer``;
        :class:`InvalidToken` (saying why) for any other."""
        if self._fetched_at is not None and \
                time.monotonic() - self._fetched_at >= self.max_key_age:
            await self.refresh()  # the keys are old: a removed key must stop verifying
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
        typ = header.get("typ")
        if self.token_types is not None:
            if typ is None:
                if self.require_typ:
                    raise InvalidToken("token type (typ) is missing")
            elif not isinstance(typ, str) or typ.lower() not in self.token_types:
                raise InvalidToken("token type (typ) is not an access token's")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("malformed token")
        key = await self._key(kid)
        if not key.fits(alg):
            self._misfits.log(logging.WARNING, "refused a token whose alg %s does not fit "
                              "its key %s (%s)", alg, kid, key.kty)
            raise InvalidToken("token algorithm does not fit its signing key")
        audience = list(self.audience) if self.audience is not None else [resource]
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key.jwk.key, algorithms=[alg], audience=audience, issuer=self.issuer,
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
        except _InvalidSubject:
            raise InvalidToken("token sub claim is not a non-empty string") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("token signature does not verify") from None
        except jwt.PyJWTError:
            raise InvalidToken("invalid token") from None
        except (TypeError, ValueError) as exc:  # a key PyJWT cannot use for this token
            self._misfits.log(logging.WARNING, "refused a token PyJWT could not check "
                              "against key %s: %s", kid, type(exc).__name__)
            raise InvalidToken("token signature does not verify") from None
        payload_typ = claims.get("typ")
        if isinstance(payload_typ, str) and payload_typ.lower() in NOT_ACCESS_PAYLOAD_TYPES:
            raise InvalidToken("token is not an access token (its typ claim is "
                               f"{payload_typ[:16]!r})")
        return principal_of(claims, self.subject_claim, self.scope_claims), \
            float(claims["exp"])

    # -- keys -----------------------------------------------------------------------------
    async def _key(self, kid: str | None) -> _Key:
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

    def _find(self, kid: str | None) -> _Key | None:
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
        fresh: dict[str | None, _Key] = {}
        for jwk in keys:
            if len(fresh) >= self.max_keys:
                break
            if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(jwk)
                text = json.dumps(jwk, sort_keys=True)
            except (jwt.PyJWTError, TypeError, ValueError):
                continue  # a key type or algorithm we cannot use
            fresh[key.key_id] = _Key(key, _str(jwk.get("kty")), _str(jwk.get("crv")),
                                     _str(jwk.get("alg")), text)
        if any(fresh.get(kid, old).text != old.text or kid not in fresh
               for kid, old in self._keys.items()):
            # A key was removed or replaced: what it verified is verified no longer.
            self._verified.clear()
        self._keys = fresh


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
