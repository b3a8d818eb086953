"""The logic of the built-in authorization server, without the web: what it issues (codes,
JWT access tokens, rotating refresh tokens), what it keeps (:mod:`.store`: in-process or
Redis), its signing keys (:mod:`.keys`), the host's rules (:mod:`.policy`), client
registration and metadata documents (:mod:`.registration`, :mod:`.cimd`), and the flows,
authlib's (:mod:`.glue`, :mod:`.server`).

Needs the ``authserver`` extra (``pip install '.[authserver]'``).  The Tornado
side, and the one object an application makes, is :class:`tornado_mcp.authserver.SignIn`;
``docs/auth.md`` ("Let your users' assistants in") walks through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .keys import KeyRing
from .policy import KNOWN_CLIENT_HOSTS, KNOWN_CLIENT_SCHEMES, Policy
from .records import Client, Grant
from .store import IssuerStore, MemoryStore, StoreUnavailable
from .tokens import IssuedTokens

if TYPE_CHECKING:
    from .redis_store import RedisStore

__all__ = ["KNOWN_CLIENT_HOSTS", "KNOWN_CLIENT_SCHEMES", "Client", "Grant", "IssuedTokens",
           "IssuerStore", "KeyRing", "MemoryStore", "Policy", "RedisStore", "StoreUnavailable"]


def __getattr__(name: str) -> Any:
    """``RedisStore`` is imported on first use: it needs redis-py (the ``redis`` extra)."""
    if name == "RedisStore":
        from .redis_store import RedisStore
        return RedisStore
    raise AttributeError(name)
