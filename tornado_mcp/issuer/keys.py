"""The authorization server's signing keys: one signs, the ones before it still verify.

:class:`KeyRing` keeps the ring in the store, so every process of a cluster signs with
the same key and verifies what any other signed.  A key signs for ``rotate_after``
seconds; the next token signed after that makes a new key (one process adds it: the
store's compare-and-set), which is published :data:`PUBLISH_DELAY` seconds before it signs
(so a process meeting its first token can already read it) while the old one keeps
signing, then verifying.  A key is dropped once every
token it signed has expired: ``max_token_age`` seconds (the access-token lifetime plus
the leeway) after the key that replaced it was made.  :meth:`KeyRing.rotate` rotates at
once (a key that may have leaked: it verifies for ``max_token_age`` more seconds, then
never again; restart with a new store to end its tokens at once).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from typing import Any

from joserfc.jwk import ECKey, KeySet, RSAKey

from .records import SigningKey
from .shared import Shared
from .store import IssuerStore, StoreUnavailable

#: The algorithms a ring can sign with, and the keys they need.
ALGORITHMS = ("RS256", "PS256", "ES256")
#: The fewest seconds between two reads of the ring for a ``kid`` this process does not
#: know (another process rotated), so made-up ``kid`` values cannot make it read in a loop.
RELOAD_INTERVAL = 1.0
#: How old this process's copy of the ring may get before signing reads it again.
SIGNER_REFRESH = 30.0
#: Seconds a new key is published before it signs (the first key excepted): every process
#: that meets its ``kid`` may then read the ring again (:data:`RELOAD_INTERVAL`) and find it.
PUBLISH_DELAY = 2 * RELOAD_INTERVAL

Key = RSAKey | ECKey


def generate(algorithm: str) -> SigningKey:
    """A new private key for ``algorithm`` with a random ``kid``."""
    kid = secrets.token_urlsafe(9)
    params: Any = {"kid": kid, "use": "sig", "alg": algorithm}
    key: Key
    if algorithm == "ES256":
        key = ECKey.generate_key("P-256", parameters=params)
    elif algorithm in ("RS256", "PS256"):
        key = RSAKey.generate_key(2048, parameters=params)
    else:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, not {algorithm!r}")
    return SigningKey(kid, key.as_dict(private=True), time.time())


def _import(record: SigningKey) -> Key:
    jwk = record.jwk
    return ECKey.import_key(jwk) if jwk.get("kty") == "EC" else RSAKey.import_key(jwk)


class KeyRing:
    """The ring of signing keys in ``store``.

    ``max_token_age``: a callable giving how long a token lives (the access-token lifetime
    plus the leeway), read when a key is dropped, so a live change is honoured."""

    def __init__(self, store: IssuerStore, algorithm: str = "RS256",
                 rotate_after: float = 30 * 86400.0,
                 max_token_age: Callable[[], float] = lambda: 3600.0) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, "
                             f"not {algorithm!r}")
        if not rotate_after > 0:
            raise ValueError("rotate_after must be a positive number of seconds")
        self.store = store
        self.algorithm = algorithm
        self.rotate_after = rotate_after
        self.max_token_age = max_token_age
        self._records: list[SigningKey] = []
        self._keys: dict[str, Key] = {}
        self._loaded_at: float | None = None
        #: Read the ring from the store (concurrent callers share one read).
        self.load = Shared(self._load)
        #: Reads of the ring from the store so far (for tests and the curious).
        self.loads = 0

    # -- reading ----------------------------------------------------------------------------
    async def _load(self) -> None:
        self._loaded_at = time.monotonic()
        self.loads += 1
        try:
            records = await self.store.signing_keys()
        except StoreUnavailable:
            if not self._records:
                raise  # no key at all yet: nothing to sign or verify with
            return  # keep the keys we have
        self._keys = {r.kid: self._keys.get(r.kid) or _import(r) for r in records}
        self._records = records

    async def key(self, kid: str) -> Key | None:
        """The key ``kid`` names, reading the ring again (at most once per
        :data:`RELOAD_INTERVAL`) for one this process does not know yet."""
        found = self._keys.get(kid)
        if found is None and (self._loaded_at is None
                              or time.monotonic() - self._loaded_at >= RELOAD_INTERVAL):
            await self.load()
            found = self._keys.get(kid)
        return found

    def known(self, kid: str) -> Key | None:
        """The key ``kid`` names if this process has it, without reading the store."""
        return self._keys.get(kid)

    def jwks(self) -> dict[str, Any]:
        """The public keys (RFC 7517), for ``jwks_uri``."""
        return dict(KeySet([self._keys[r.kid] for r in self._records]).as_dict(private=False))

    # -- signing ----------------------------------------------------------------------------
    async def signer(self) -> tuple[str, Key]:
        """The key to sign with now (``kid``, key), rotating first when it is due."""
        if self._loaded_at is None or time.monotonic() - self._loaded_at >= SIGNER_REFRESH:
            await self.load()
        newest = self._records[-1] if self._records else None
        if newest is None or time.time() - newest.created >= self.rotate_after:
            await self._rotate(newest.kid if newest else None)
        current = self._signing(time.time())
        return current.kid, self._keys[current.kid]

    def _signing(self, t: float) -> SigningKey:
        """The key that signs at ``t``: the newest one published for :data:`PUBLISH_DELAY`
        (a newer one is only verified until then), else the oldest (the first key)."""
        published = [r for r in self._records if r.created + PUBLISH_DELAY <= t]
        return published[-1] if published else self._records[0]

    async def rotate(self) -> str:
        """Make a new signing key now, keeping the current one for verification; the new
        key's ``kid`` (or, when another process rotated at the same moment, its key's)."""
        await self.load()
        return await self._rotate(self._records[-1].kid if self._records else None)

    async def _rotate(self, expected: str | None) -> str:
        """Add a new key if the newest is still ``expected`` (another process may have
        rotated already: then its key is used), dropping the expired ones."""
        loop = asyncio.get_running_loop()  # an RSA key takes a while: not on the IOLoop
        record = await loop.run_in_executor(None, generate, self.algorithm)
        if await self.store.add_signing_key(record, expected, self._expired(time.time())):
            self._keys[record.kid] = _import(record)
        await self.load()
        return self._records[-1].kid

    def _expired(self, t: float) -> list[str]:
        """The keys every token of which has expired: replaced more than
        ``max_token_age`` ago (the newest key, about to be replaced, is never one)."""
        age = self.max_token_age()
        return [r.kid for r, nxt in zip(self._records, self._records[1:], strict=False)
                if nxt.created + age < t]

    @property
    def kids(self) -> list[str]:
        """The ``kid`` of every key this process knows, oldest first."""
        return [r.kid for r in self._records]
