"""The access tokens the authorization server issues, and the endpoint's check of them.

An access token is a JWT (RFC 9068, ``typ: at+jwt``) signed by a key of the server's
:class:`~tornado_mcp.issuer.keys.KeyRing`: ``iss`` the server, ``sub`` the user, ``aud``
the endpoint it was asked for (RFC 8707), ``client_id``, ``scope`` (what the user granted,
never more than the host allows them), ``iat``/``exp`` and ``gid``, the grant it belongs to.

:class:`IssuedTokens` is the endpoint's :class:`~tornado_mcp.auth.TokenVerifier` for them.
It verifies in-process, against the ring (no network call per request): the signature
with the key ``kid`` names, ``iss``, ``aud``, ``exp``, and that the grant was not revoked.
Revocations are read from the store: at once in one process, every
:attr:`~tornado_mcp.issuer.store.IssuerStore.poll_interval` seconds (one read shared by
every request) in a cluster.  A verified token is remembered until it expires (at most
``cache_size`` of them, keyed by a SHA-256: the cache holds no token), so a client's
every request after its first costs a hash and a lookup; a revoked grant is refused even
from the cache.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import JoseError

from ..auth.quietlog import Throttled
from ..auth.verifier import principal_of
from ..protocol.auth_errors import InvalidToken, VerifierBusy
from ..protocol.identity import Principal
from .keys import Key, KeyRing
from .records import new_secret
from .shared import Shared
from .store import IssuerStore, StoreUnavailable

#: The ``typ`` of the server's access tokens (RFC 9068 §2.1).
ACCESS_TOKEN_TYPE = "at+jwt"
#: The claim naming the grant a token belongs to (revoking it ends the token).
GRANT_CLAIM = "gid"


def claims_for(issuer: str, subject: str, client_id: str, scopes: Iterable[str],
               resource: str, grant_id: str, ttl: int) -> dict[str, Any]:
    """The claims of one access token, issued now for ``ttl`` seconds."""
    t = int(time.time())
    return {"iss": issuer, "sub": subject, "aud": resource, "client_id": client_id,
            "scope": " ".join(scopes), "iat": t, "exp": t + ttl,
            "jti": new_secret(12), GRANT_CLAIM: grant_id}


def sign(claims: dict[str, Any], kid: str, key: Key) -> str:
    """``claims`` as a JWT access token signed by ``key``."""
    alg = str(key.as_dict(private=False).get("alg") or "RS256")
    return jwt.encode({"alg": alg, "typ": ACCESS_TOKEN_TYPE, "kid": kid}, claims, key,
                      algorithms=[alg])


class Revocations:
    """This process's copy of the grants revoked and not yet expired."""

    def __init__(self, store: IssuerStore) -> None:
        self.store = store
        self.revoked: dict[str, float] = {}
        self._cursor: str | None = None
        self._synced_at: float | None = None
        #: Read the revocations since the last read (concurrent callers share one read);
        #: a store that cannot be read keeps the copy it has.
        self.sync = Shared(self._sync)
        self._outage = Throttled(logging.getLogger("tornado_mcp.authserver"))

    def note(self, grant_ids: Iterable[str], until: float) -> None:
        """Grants this process revoked itself: refused at once, before the next read."""
        for gid in grant_ids:
            self.revoked[gid] = max(until, self.revoked.get(gid, 0.0))

    @property
    def due(self) -> bool:
        """Whether the store should be read again: never for a store of this process's own
        (``poll_interval`` 0: every revocation is made here and noted at once), else once
        ``poll_interval`` seconds have passed since the last read."""
        poll = self.store.poll_interval
        return poll > 0 and (self._synced_at is None
                             or time.monotonic() - self._synced_at >= poll)

    async def _sync(self) -> None:
        self._synced_at = time.monotonic()
        try:
            found, self._cursor = await self.store.revocations(self._cursor)
        except StoreUnavailable as exc:  # keep what we have; try again next time
            self._outage.log(logging.WARNING, "could not read revoked grants (%s); "
                             "checking against the ones known so far", exc)
            return
        self.revoked.update(found)
        t = time.time()
        if len(self.revoked) > 64 or found:
            for gid in [g for g, until in self.revoked.items() if until <= t]:
                del self.revoked[gid]

    def __contains__(self, grant_id: object) -> bool:
        until = self.revoked.get(grant_id) if isinstance(grant_id, str) else None
        return until is not None and until > time.time()


class IssuedTokens:
    """A :class:`~tornado_mcp.auth.TokenVerifier` for the access tokens ``issuer`` signs
    with ``ring``.  ``leeway``: seconds of clock skew allowed on ``exp`` and ``iat``."""

    def __init__(self, issuer: str, ring: KeyRing, store: IssuerStore, *,
                 leeway: float = 30.0, cache_size: int = 4096) -> None:
        self.issuer = issuer
        self.ring = ring
        self.revocations = Revocations(store)
        self.leeway = leeway
        self.cache_size = cache_size
        # sha256(resource, token) -> (monotonic expiry, principal, grant id)
        self._verified: OrderedDict[bytes, tuple[float, Principal, str]] = OrderedDict()

    async def verify(self, token: str, resource: str) -> Principal:
        """The principal of a token this server issued for ``resource``, unexpired and of a
        grant still live; :class:`InvalidToken` saying why for any other."""
        if self.revocations.due:
            await self.revocations.sync()
        key = hashlib.sha256(f"{resource}\0{token}".encode()).digest()
        hit = self._verified.get(key)
        if hit is not None:
            if hit[0] > time.monotonic():
                if hit[2] in self.revocations:
                    raise InvalidToken("token revoked")
                self._verified.move_to_end(key)
                return hit[1]
            del self._verified[key]
        claims = await self.claims(token)
        self._check(claims, resource)
        grant_id = claims[GRANT_CLAIM]
        if grant_id in self.revocations:
            raise InvalidToken("token revoked")
        principal = principal_of(claims)
        ttl = float(claims["exp"]) - time.time()
        if ttl > 0 and self.cache_size > 0:
            self._verified[key] = (time.monotonic() + ttl, principal, grant_id)
            while len(self._verified) > self.cache_size:
                self._verified.popitem(last=False)
        return principal

    async def claims(self, token: str) -> dict[str, Any]:
        """The claims of a token signed by a key of the ring (its signature, ``typ`` and
        ``alg`` checked, nothing else), or :class:`InvalidToken`."""
        try:
            header = jws.extract_compact(token.encode("ascii")).headers()
        except (JoseError, ValueError, TypeError, UnicodeError):
            raise InvalidToken("malformed token") from None
        if header.get("typ") != ACCESS_TOKEN_TYPE:
            raise InvalidToken("token type (typ) is not an access token's")
        alg, kid = header.get("alg"), header.get("kid")
        if alg != self.ring.algorithm or not isinstance(kid, str):
            raise InvalidToken("token algorithm not allowed")
        try:
            key = await self.ring.key(kid)
        except StoreUnavailable:  # no key known yet, and none to be read: not judged
            raise VerifierBusy("the sign-in store cannot be reached; retry shortly") from None
        if key is None:
            raise InvalidToken("token signing key is unknown")
        try:
            claims: dict[str, Any] = jwt.decode(token, key, algorithms=[alg]).claims
        except (JoseError, ValueError, TypeError):
            raise InvalidToken("token signature does not verify") from None
        return claims

    def _check(self, claims: dict[str, Any], resource: str) -> None:
        if claims.get("iss") != self.issuer:
            raise InvalidToken("token issuer is not trusted")
        aud = claims.get("aud")
        if not (aud == resource or (isinstance(aud, list) and resource in aud)):
            raise InvalidToken("token audience is not this resource")
        t = time.time()
        exp, iat = claims.get("exp"), claims.get("iat")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise InvalidToken("token lacks the exp claim")
        if exp + self.leeway <= t:
            raise InvalidToken("token expired")
        if isinstance(iat, int | float) and iat - self.leeway > t:
            raise InvalidToken("token not yet valid")
        for claim in ("sub", "client_id", GRANT_CLAIM):
            if not isinstance(claims.get(claim), str) or not claims[claim]:
                raise InvalidToken(f"token {claim} claim is not a non-empty string")

    @property
    def cached(self) -> int:
        """Verified tokens remembered right now."""
        return len(self._verified)
