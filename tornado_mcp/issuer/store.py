"""Where the authorization server keeps what it issued: the :class:`IssuerStore` interface
and :class:`MemoryStore`, the in-process one (the default; one process).

A cluster shares one store so that any process validates, refreshes and revokes what
another issued: :class:`~tornado_mcp.issuer.redis_store.RedisStore`.  Every method is a
coroutine; the steps that must not race between processes (taking a code, rotating a
refresh token, adding a key, admitting a client under the cap) are one atomic step of the
store.

Everything kept is bounded: clients by ``max_clients`` (a live option), codes by
:data:`MAX_CODES` and their short lifetime, grants per user and client by
:data:`MAX_GRANTS_PER_CONSENT`, the refresh tokens a grant remembers as used by
:data:`USED_REFRESH_KEPT`, revocations by their expiry (an access token's lifetime).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Protocol

from .records import Client, Code, Grant, SigningKey

#: Authorization codes waiting to be traded in, at most (a new one over it is refused).
MAX_CODES = 10_000
#: Live grants one user may have given one client; a new one past it ends the oldest.
MAX_GRANTS_PER_CONSENT = 16
#: Rotated refresh tokens a grant remembers, so that presenting one again (a stolen copy,
#: or the client's own after rotation) ends the grant.
USED_REFRESH_KEPT = 8
#: Rate-limit buckets kept (addresses), least recently used first out.
MAX_BUCKETS = 10_000
#: The outcomes of :meth:`IssuerStore.rotate_refresh`.
ROTATED, REUSED, UNKNOWN = "rotated", "reused", "unknown"


class StoreUnavailable(Exception):
    """The store cannot be reached now (Redis is down): the authorization server answers
    503 and tries again on the next request; nothing is lost or half written."""


class IssuerStore(Protocol):
    """What the authorization server needs of a store: a Protocol for its two
    implementations, :class:`MemoryStore` and the cluster's
    :class:`~tornado_mcp.issuer.redis_store.RedisStore`."""

    #: 32 secret bytes this server (every process of it) signs consent forms with.
    @property
    def secret(self) -> bytes: ...

    #: How stale a process's list of revoked grants may be, in seconds: 0 for a store of
    #: this process alone (every revocation is made here and noted at once: it is never
    #: read back), else how often the list is read again.
    @property
    def poll_interval(self) -> float: ...

    # -- clients --------------------------------------------------------------------------
    async def add_client(self, client: Client, max_clients: int | None) -> bool:
        """Keep ``client``; at ``max_clients``, first forget the oldest client nobody ever
        authorized, and refuse (``False``) when every one was."""
        ...

    async def client(self, client_id: str) -> Client | None: ...

    async def clients(self) -> list[Client]: ...

    async def client_used(self, client_id: str, when: int) -> None: ...

    async def remove_client(self, client_id: str) -> bool: ...

    # -- authorization codes --------------------------------------------------------------
    async def add_code(self, key: str, code: Code) -> bool:
        """Keep ``code`` under ``key`` until it expires; ``False`` at :data:`MAX_CODES`."""
        ...

    async def code(self, key: str) -> Code | None: ...

    async def take_code(self, key: str, grant_id: str, mark_ttl: float) -> bool:
        """Atomically forget the code and remember, for ``mark_ttl`` seconds, that it was
        used for ``grant_id``; ``False`` when someone took it first."""
        ...

    async def code_replayed(self, key: str) -> str | None:
        """The grant an already used code went to, or ``None``."""
        ...

    # -- grants and refresh tokens --------------------------------------------------------
    async def add_grant(self, grant: Grant) -> list[str]:
        """Keep ``grant``, forgetting the oldest grants of the same user and client past
        :data:`MAX_GRANTS_PER_CONSENT`; their ids, which the caller then revokes (so their
        access tokens are refused too)."""
        ...

    async def grant(self, grant_id: str) -> Grant | None: ...

    async def grants(self) -> list[Grant]: ...

    async def rotate_refresh(self, grant_id: str, old_hash: str, new_hash: str,
                             expires: int, scopes: tuple[str, ...]) -> str:
        """One refresh: :data:`ROTATED` when ``old_hash`` is the grant's current token (it
        becomes ``new_hash``), :data:`REUSED` when it is one already rotated, :data:`UNKNOWN`
        otherwise.  An empty ``new_hash`` only asks which (nothing rotates)."""
        ...

    async def revoke(self, grant_ids: list[str], until: float) -> None:
        """End these grants: forget them and their refresh tokens, and list them as
        revoked until ``until`` (when the last access token they had expires)."""
        ...

    async def revocations(self, cursor: str | None) -> tuple[dict[str, float], str | None]:
        """Grants revoked since ``cursor`` (``None``: all still listed), with the time
        each stays listed, and the cursor to ask from next."""
        ...

    # -- signing keys ---------------------------------------------------------------------
    async def signing_keys(self) -> list[SigningKey]:
        """The ring, oldest first; the last one signs."""
        ...

    async def add_signing_key(self, key: SigningKey, after: str | None,
                              drop: list[str]) -> bool:
        """Append ``key`` to the ring and drop ``drop``, only if the newest key is still
        ``after`` (so that two processes rotating at once add one key, not two)."""
        ...

    # -- rate limits ----------------------------------------------------------------------
    async def hit(self, bucket: str, window: float) -> int:
        """Count one event in ``bucket``; the events counted since the bucket's window
        opened, which its first event does, for ``window`` seconds."""
        ...


def derive(secret: bytes, purpose: str) -> bytes:
    """32 bytes for ``purpose`` from a store's master secret."""
    return hmac.new(secret, purpose.encode(), hashlib.sha256).digest()


class MemoryStore:
    """An :class:`IssuerStore` in this process's memory: right for one process (and one
    :class:`~tornado_mcp.authserver.SignIn`), and lost when it stops (clients register
    again and users sign in again; nothing else breaks)."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._clients: dict[str, Client] = {}
        self._codes: dict[str, Code] = {}
        self._used_codes: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._grants: dict[str, Grant] = {}
        self._used_refresh: dict[str, list[str]] = {}
        self._revoked: dict[str, float] = {}
        self._revoked_log: list[tuple[int, str]] = []
        self._revoked_seq = 0
        self._keys: list[SigningKey] = []
        self._buckets: OrderedDict[str, tuple[float, int]] = OrderedDict()

    @property
    def secret(self) -> bytes:
        return self._secret

    @property
    def poll_interval(self) -> float:
        return 0.0

    # -- clients --------------------------------------------------------------------------
    async def add_client(self, client: Client, max_clients: int | None) -> bool:
        if max_clients is not None and len(self._clients) >= max_clients:
            unused = [c for c in self._clients.values() if c.used_at is None]
            if not unused:
                return False
            del self._clients[min(unused, key=lambda c: c.issued_at).client_id]
        self._clients[client.client_id] = client
        return True

    async def client(self, client_id: str) -> Client | None:
        return self._clients.get(client_id)

    async def clients(self) -> list[Client]:
        return sorted(self._clients.values(), key=lambda c: c.issued_at)

    async def client_used(self, client_id: str, when: int) -> None:
        found = self._clients.get(client_id)
        if found is not None:
            found.used_at = when

    async def remove_client(self, client_id: str) -> bool:
        return self._clients.pop(client_id, None) is not None

    # -- codes ----------------------------------------------------------------------------
    async def add_code(self, key: str, code: Code) -> bool:
        if len(self._codes) >= MAX_CODES:
            t = time.time()
            for k in [k for k, c in self._codes.items() if c.expires <= t]:
                del self._codes[k]
            if len(self._codes) >= MAX_CODES:
                return False
        self._codes[key] = code
        return True

    async def code(self, key: str) -> Code | None:
        found = self._codes.get(key)
        if found is not None and found.expires <= time.time():
            del self._codes[key]
            return None
        return found

    async def take_code(self, key: str, grant_id: str, mark_ttl: float) -> bool:
        if self._codes.pop(key, None) is None:
            return False
        self._used_codes[key] = (grant_id, time.monotonic() + mark_ttl)
        while len(self._used_codes) > MAX_CODES:
            self._used_codes.popitem(last=False)
        return True

    async def code_replayed(self, key: str) -> str | None:
        found = self._used_codes.get(key)
        if found is None:
            return None
        if found[1] <= time.monotonic():
            del self._used_codes[key]
            return None
        return found[0]

    # -- grants ---------------------------------------------------------------------------
    async def add_grant(self, grant: Grant) -> list[str]:
        self._purge_grants()
        same = sorted((g for g in self._grants.values() if g.subject == grant.subject
                       and g.client_id == grant.client_id), key=lambda g: g.created)
        pushed = [g.grant_id for g in same[:max(0, len(same) - MAX_GRANTS_PER_CONSENT + 1)]]
        for gid in pushed:
            del self._grants[gid]
            self._used_refresh.pop(gid, None)
        self._grants[grant.grant_id] = grant
        return pushed

    def _purge_grants(self) -> None:
        t = time.time()
        for gid in [gid for gid, g in self._grants.items() if g.expires <= t]:
            del self._grants[gid]
            self._used_refresh.pop(gid, None)

    async def grant(self, grant_id: str) -> Grant | None:
        found = self._grants.get(grant_id)
        return None if found is None or found.expires <= time.time() else found

    async def grants(self) -> list[Grant]:
        self._purge_grants()
        return sorted(self._grants.values(), key=lambda g: g.created)

    async def rotate_refresh(self, grant_id: str, old_hash: str, new_hash: str,
                             expires: int, scopes: tuple[str, ...]) -> str:
        grant = await self.grant(grant_id)
        if grant is None:
            return UNKNOWN
        used = self._used_refresh.setdefault(grant_id, [])
        if new_hash and hmac.compare_digest(grant.refresh_hash, old_hash):
            used.append(old_hash)
            del used[:-USED_REFRESH_KEPT]
            self._grants[grant_id] = replace(grant, refresh_hash=new_hash, expires=expires,
                                             scopes=scopes, refreshed=int(time.time()))
            return ROTATED
        if old_hash in used:
            return REUSED
        return UNKNOWN

    async def revoke(self, grant_ids: list[str], until: float) -> None:
        for gid in grant_ids:
            self._grants.pop(gid, None)
            self._used_refresh.pop(gid, None)
            self._revoked[gid] = max(until, self._revoked.get(gid, 0.0))
            self._revoked_seq += 1
            self._revoked_log.append((self._revoked_seq, gid))
        t = time.time()
        for gid in [gid for gid, u in self._revoked.items() if u <= t]:
            del self._revoked[gid]
        live = set(self._revoked)
        self._revoked_log = [(n, g) for n, g in self._revoked_log if g in live]

    async def revocations(self, cursor: str | None) -> tuple[dict[str, float], str | None]:
        since = int(cursor) if cursor else 0
        found = {g: self._revoked[g] for n, g in self._revoked_log
                 if n > since and g in self._revoked}
        return found, str(self._revoked_seq)

    # -- keys -----------------------------------------------------------------------------
    async def signing_keys(self) -> list[SigningKey]:
        return list(self._keys)

    async def add_signing_key(self, key: SigningKey, after: str | None,
                              drop: list[str]) -> bool:
        newest = self._keys[-1].kid if self._keys else None
        if newest != after:
            return False
        self._keys = [k for k in self._keys if k.kid not in drop] + [key]
        return True

    # -- rate limits ----------------------------------------------------------------------
    async def hit(self, bucket: str, window: float) -> int:
        t = time.monotonic()
        start, count = self._buckets.get(bucket, (t, 0))
        if t - start >= window:
            start, count = t, 0
        count += 1
        self._buckets[bucket] = (start, count)
        self._buckets.move_to_end(bucket)
        while len(self._buckets) > MAX_BUCKETS:
            self._buckets.popitem(last=False)
        return count
