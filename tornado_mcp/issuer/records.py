"""What the authorization server keeps: clients, authorization codes, grants, signing keys.

Plain dataclasses, each with ``as_dict``/``of`` for a JSON-shaped copy, so a store in
another process (Redis) keeps exactly what the in-process one does.  Secrets are never
kept: a client secret, an authorization code and a refresh token are known to the store
only by a SHA-256 of their value (:func:`digest`), so a copy of the store hands out
nothing a client could present.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")

#: Where a client came from: registered with RFC 7591, or described by the Client ID
#: Metadata Document its ``client_id`` (an https URL) points at.
REGISTERED = "registered"
METADATA_DOCUMENT = "metadata_document"


def digest(value: str) -> str:
    """The key a secret value is kept under: a SHA-256, hex."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret(nbytes: int = 32) -> str:
    """A fresh random value for a code, a refresh token or a client secret."""
    return secrets.token_urlsafe(nbytes)


def now() -> int:
    return int(time.time())


def _of(cls: type[T], data: dict[str, Any]) -> T:
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    values = {k: v for k, v in data.items() if k in names}
    for key in ("scopes", "redirect_uris"):
        if isinstance(values.get(key), list):
            values[key] = tuple(values[key])
    return cls(**values)


@dataclass
class Client:
    """A client the server knows: its RFC 7591 metadata, and how it authenticates."""

    client_id: str
    #: The registered metadata (``redirect_uris``, ``client_name``, ``grant_types``,
    #: ``token_endpoint_auth_method``, ...), as validated at registration.
    metadata: dict[str, Any]
    #: The SHA-256 of its secret, or ``None`` for a public client (PKCE only).
    secret_hash: str | None = None
    issued_at: int = field(default_factory=now)
    source: str = REGISTERED
    #: When a user last authorized it (``None``: never, so it may make room for others).
    used_at: int | None = None

    @property
    def name(self) -> str:
        value = self.metadata.get("client_name")
        return value if isinstance(value, str) and value else self.client_id

    @property
    def redirect_uris(self) -> tuple[str, ...]:
        return tuple(u for u in self.metadata.get("redirect_uris") or () if isinstance(u, str))

    @property
    def auth_method(self) -> str:
        return str(self.metadata.get("token_endpoint_auth_method") or "client_secret_basic")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Client:
        return _of(cls, data)

    def public(self) -> dict[str, Any]:
        """What an operator sees: everything but the secret's hash."""
        return {"client_id": self.client_id, "client_name": self.name, "source": self.source,
                "redirect_uris": list(self.redirect_uris), "auth_method": self.auth_method,
                "issued_at": self.issued_at, "used_at": self.used_at}


@dataclass
class Code:
    """An authorization code, from the user's consent until the client trades it in."""

    client_id: str
    redirect_uri: str
    subject: str
    scopes: tuple[str, ...]
    resource: str
    code_challenge: str
    code_challenge_method: str
    expires: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Code:
        return _of(cls, data)


@dataclass
class Grant:
    """What one consent gave one client: a family of tokens, refreshed (and rotated)
    until it expires or is revoked.  Every access token names its grant (``gid``), so
    revoking the grant stops them all."""

    grant_id: str
    subject: str
    client_id: str
    scopes: tuple[str, ...]
    resource: str
    created: int
    #: When the current refresh token stops working.
    expires: int
    #: The SHA-256 of the current refresh token.
    refresh_hash: str = ""
    refreshed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Grant:
        return _of(cls, data)

    def public(self) -> dict[str, Any]:
        """What an operator sees (never the refresh token's hash)."""
        d = self.as_dict()
        d.pop("refresh_hash")
        d["scopes"] = list(self.scopes)
        return d


@dataclass
class SigningKey:
    """A key of the server's ring: the newest signs, the others still verify what they
    signed until it expires."""

    kid: str
    #: The private JWK (a dict joserfc reads).
    jwk: dict[str, Any]
    created: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, data: dict[str, Any]) -> SigningKey:
        return _of(cls, data)
