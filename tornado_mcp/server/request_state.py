"""Sealed ``requestState``: what a server hands a 2026-07-28 client to bring back.

``requestState`` comes back from the client, so treat it as attacker-controlled:
:class:`RequestStateCodec` seals it with AES-GCM (authenticated encryption: the client can
neither read nor alter it), bound to the method, a digest of the params and an expiry, and
refuses anything else with -32602.  Several processes behind one endpoint share a key
ring, so a retry that reaches another process opens the state sealed by the first::

    server.request_state = RequestStateCodec(keys=[new_key, old_key])  # new_key seals
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from collections.abc import Sequence
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..protocol import INVALID_PARAMS, jsonio
from ..protocol.errors import MCPError

_PARAMS_NOT_BOUND = frozenset({"_meta", "inputResponses", "requestState"})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


#: The version prefix of a sealed ``requestState``.
SEALED_PREFIX = "s1."
#: A key of the ring must have at least this many bytes (of secret, random material).
MIN_KEY_BYTES = 16
#: A ``requestState`` longer than this is refused unopened.
MAX_STATE_CHARS = 65536
_NONCE_BYTES = 12
_KEY_ID_BYTES = 4
_AAD = b"tornado-mcp requestState v1"


def _derive(key: bytes) -> tuple[bytes, bytes]:
    """The AES-256 key and the public key id derived from one secret of the ring."""
    okm = HKDF(hashes.SHA256(), 32 + _KEY_ID_BYTES, salt=None,
               info=b"tornado-mcp requestState").derive(key)
    return okm[:32], okm[32:]


def _key_bytes(key: bytes | str) -> bytes:
    raw = key.encode() if isinstance(key, str) else key
    if not isinstance(raw, bytes) or len(raw) < MIN_KEY_BYTES:
        raise ValueError(f"a requestState key needs at least {MIN_KEY_BYTES} bytes")
    return raw


class RequestStateCodec:
    """Seal and open ``requestState`` values with AES-256-GCM and a key ring.

    ``keys`` is the ring: the first key seals, every key opens, so a key is rotated by
    putting a new one first and dropping the old one once the states it sealed have
    expired (``ttl`` seconds).  ``key=`` is a ring of one; with neither, a random key
    is made (fine for one process, useless across several).  Keys are secrets of at
    least 16 bytes (``secrets.token_bytes(32)``); each is stretched with HKDF.

    The sealed value carries the data, the method, a digest of the request's params
    (without ``_meta``, ``inputResponses`` and ``requestState``) and an expiry, all
    encrypted; the client sees an opaque token.
    """

    def __init__(self, key: bytes | str | None = None, ttl: float = 600.0, *,
                 keys: Sequence[bytes | str] | None = None) -> None:
        if key is not None and keys is not None:
            raise TypeError("pass key= or keys=, not both")
        ring = [key] if key is not None else list(keys) if keys is not None else []
        if keys is not None and not ring:
            raise ValueError("keys= needs at least one key")
        self.keys: list[bytes] = [_key_bytes(k) for k in ring] or [secrets.token_bytes(32)]
        self.ttl = ttl
        derived = [_derive(k) for k in self.keys]
        self._sealer = (derived[0][1], AESGCM(derived[0][0]))
        self._openers: dict[bytes, list[AESGCM]] = {}
        for aes_key, key_id in derived:
            self._openers.setdefault(key_id, []).append(AESGCM(aes_key))

    @property
    def key(self) -> bytes:
        """The key that seals (the first of the ring)."""
        return self.keys[0]

    @staticmethod
    def _digest(method: str, params: dict[str, Any], caller: str) -> str:
        # Canonical JSON (sorted keys): a client may re-serialise its params in any order.
        bound = json.dumps({k: v for k, v in params.items() if k not in _PARAMS_NOT_BOUND},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        material = b"\0".join((method.encode(), caller.encode(), bound.encode()))
        return _b64(hashlib.sha256(material).digest()[:16])

    def seal(self, data: Any, method: str, params: dict[str, Any], caller: str = "") -> str:
        """Seal ``data`` for this ``method`` and ``params`` and, when given, this
        ``caller`` (another caller's retry cannot open it)."""
        payload = jsonio.dumps({"d": data, "m": method, "p": self._digest(method, params,
                                                                            caller),
                                "e": int(time.time() + self.ttl)})
        key_id, aead = self._sealer
        nonce = secrets.token_bytes(_NONCE_BYTES)
        return SEALED_PREFIX + _b64(key_id + nonce + aead.encrypt(nonce, payload, _AAD))

    def open(self, token: Any, method: str, params: dict[str, Any], caller: str = "") -> Any:
        """Return the sealed data; raise -32602 when the state was tampered with, sealed
        with a key not in the ring, expired, or sealed for another request."""
        try:
            if not isinstance(token, str) or len(token) > MAX_STATE_CHARS \
                    or not token.startswith(SEALED_PREFIX):
                raise ValueError
            raw = _unb64(token[len(SEALED_PREFIX):])
            key_id, nonce = raw[:_KEY_ID_BYTES], raw[_KEY_ID_BYTES:_KEY_ID_BYTES + _NONCE_BYTES]
            sealed = raw[_KEY_ID_BYTES + _NONCE_BYTES:]
            payload = None
            for aead in self._openers.get(key_id, ()):
                try:
                    payload = aead.decrypt(nonce, sealed, _AAD)
                    break
                except InvalidTag:
                    continue
            if payload is None:
                raise ValueError
            state = jsonio.loads(payload)
            if not isinstance(state, dict):
                raise ValueError
        except (ValueError, TypeError):
            raise MCPError(INVALID_PARAMS, "Invalid requestState: integrity check failed") from None
        if state.get("m") != method or state.get("p") != self._digest(method, params, caller):
            raise MCPError(INVALID_PARAMS, "Invalid requestState: it belongs to another request")
        if not isinstance(state.get("e"), int) or state["e"] < time.time():
            raise MCPError(INVALID_PARAMS, "Invalid requestState: expired")
        return state.get("d")
