"""Who is calling: the :class:`Principal` a request was authenticated as.

Every request's :class:`~tornado_mcp.Context` carries one (``ctx.principal``): the
anonymous principal when the endpoint has no authentication, otherwise what the
authentication that admitted the request established: the host application's own login,
or an OAuth bearer token.
"""

from __future__ import annotations

import functools
import ipaddress
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_EMPTY: Mapping[str, Any] = types.MappingProxyType({})


@dataclass(frozen=True)
class Principal:
    """An authenticated caller (or the anonymous one).

    ``subject`` names the caller (a user name, a token's ``sub``); ``scopes`` are what it
    was granted; ``claims`` what its credential said (read-only); ``method`` how it was
    authenticated (``"anonymous"``, ``"bearer"``, ``"host"``, ...); ``namespace``, when the
    credential can name more than one kind of subject, which kind this one is (a bearer
    token's ``"user"``, its ``sub``, or ``"client"``, a client acting for itself and named
    by its ``client_id``), so that two kinds never make the same caller.
    """

    subject: str | None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    method: str = "anonymous"
    namespace: str = ""

    @classmethod
    def of(cls, subject: str, scopes: Iterable[str] = (), claims: Mapping[str, Any] | None = None,
           method: str = "host", namespace: str = "") -> Principal:
        """A principal with ``scopes`` and a read-only copy of ``claims``."""
        return cls(subject, frozenset(scopes),
                   types.MappingProxyType(dict(claims)) if claims else _EMPTY, method,
                   namespace)

    @property
    def authenticated(self) -> bool:
        return self.subject is not None

    @property
    def caller(self) -> str:
        """Who this is, as one string: the way of authenticating, the namespace if any, and
        the subject (a client that stepped up to more scopes is the same caller); ``""``
        for the anonymous one.  What sessions, tasks, sealed state and rate limits are
        bound to."""
        if self.subject is None:
            return ""
        if self.namespace:
            return f"{self.method}:{self.namespace}:{self.subject}"
        return f"{self.method}:{self.subject}"

    def has_scopes(self, *scopes: str) -> bool:
        """True when every one of ``scopes`` was granted."""
        return all(s in self.scopes for s in scopes)

    def as_dict(self) -> dict[str, Any]:
        """The principal as JSON-ready data (claims are not included: they may be secret)."""
        return {"subject": self.subject, "scopes": sorted(self.scopes),
                "method": self.method, "authenticated": self.authenticated}


ANONYMOUS = Principal(None)
"""The principal of every request on an endpoint without authentication."""


@functools.lru_cache(maxsize=1024)
def address_key(remote_ip: str | None) -> str:
    """The network an anonymous caller at ``remote_ip`` counts as: the address itself for
    IPv4 (and an IPv4-mapped IPv6 address), its ``/64`` for IPv6, the block one host
    usually holds (so the 2**64 addresses of one host are one caller, not 2**64)."""
    if not remote_ip or ":" not in remote_ip:
        return remote_ip or "-"
    try:
        ip = ipaddress.ip_address(remote_ip)
    except ValueError:
        return remote_ip
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def caller_key(principal: Principal, remote_ip: str | None) -> str:
    """Who a request counts against in per-caller limits (rate, concurrency) and
    statistics: the principal's :attr:`~Principal.caller`, else ``address:`` and the
    caller's :func:`address_key`."""
    return principal.caller or _address_caller(remote_ip)


@functools.lru_cache(maxsize=1024)
def _address_caller(remote_ip: str | None) -> str:
    """``address:`` and :func:`address_key`, remembered for the addresses seen lately
    (an IPv6 one is parsed once, not per request)."""
    return f"address:{address_key(remote_ip)}"
