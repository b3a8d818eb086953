"""Input-required results (2026-07-28 multi round-trip requests) and sealed request state.

A tool, prompt or resource handler that needs something from the user returns
:class:`InputRequired`; the client asks the user and retries the same call with
``inputResponses`` (and the ``requestState``), which the handler reads from its context::

    @server.tool()
    async def book(city: str, ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("confirm")
        if answer is None:
            return InputRequired(
                {"confirm": elicitation(f"Book a room in {city}?", {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}})},
                request_state=ctx.seal_state({"city": city}),
            )
        return "booked" if answer.get("action") == "accept" else "cancelled"

:meth:`Context.sample <tornado_mcp.Context.sample>`, ``elicit`` and ``list_roots`` build on
the same rounds at 2026-07-28 (see :class:`NeedsInput`), so a handler can simply await them.

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
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..protocol import INVALID_PARAMS, jsonio
from ..protocol.errors import MCPError

#: The client capability each kind of input request needs.
INPUT_KIND_CAPABILITY = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}

_PARAMS_NOT_BOUND = frozenset({"_meta", "inputResponses", "requestState"})

#: Methods whose handlers may ask for input (and whose retries carry ``inputResponses``).
INPUT_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Input requests one 2026-07-28 call may make through ``ctx.sample`` / ``ctx.elicit`` /
#: ``ctx.list_roots`` before it is ended (the official clients give up after ten rounds).
MAX_INPUT_ROUNDS = 8
#: The key under which the answers of earlier rounds travel in the sealed ``requestState``.
STATE_INPUTS_KEY = "tornado_mcp/inputs"

#: Property types an elicitation form may use: the spec's primitive schemas.
_PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})


class ElicitationSchemaError(ValueError):
    """An elicitation ``requestedSchema`` that MCP does not allow (raised when it is built,
    so the developer sees it in the server log rather than a client refusing it)."""


def check_elicitation_schema(schema: Any) -> None:
    """Raise :class:`ElicitationSchemaError` unless ``schema`` is what the MCP spec allows
    for a form: ``{"type": "object", "properties": {...}, "required": [...]}`` whose
    properties are flat primitives (string, number, integer, boolean, or a string enum, or
    an array of enum strings for multi-select).  Nested objects are not allowed."""
    def fail(why: str) -> None:
        raise ElicitationSchemaError(f"Invalid elicitation requestedSchema: {why}")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        fail('it must be an object schema, {"type": "object", "properties": {...}}')
    props = schema.get("properties")
    if not isinstance(props, dict):
        fail('"properties" is required and must map field names to primitive schemas')
    for name, prop in props.items():
        if not isinstance(prop, dict):
            fail(f"property {name!r} must be a schema object")
        kind = prop.get("type")
        if kind == "array":
            items = prop.get("items")
            if not isinstance(items, dict) or not ("enum" in items or "anyOf" in items):
                fail(f"property {name!r}: an array must be a multi-select with enum items")
        elif kind not in _PRIMITIVE_TYPES:
            fail(f"property {name!r} has type {kind!r}; forms allow only flat primitive "
                 "properties (string, number, integer, boolean, enums)")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(r in props for r in required):
        fail('"required" must list names of declared properties')


class NeedsInput(BaseException):
    """Raised by ``ctx.sample`` / ``ctx.elicit`` / ``ctx.list_roots`` at 2026-07-28 when the
    answer is not in the request yet: the server answers with :attr:`input_required` and
    the client retries the call, which runs the handler again from the start.

    A ``BaseException``, so a handler's own ``except Exception`` does not swallow it."""

    def __init__(self, input_required: InputRequired) -> None:
        super().__init__("input required")
        self.input_required = input_required


@dataclass
class InputRequired:
    """Return this from a handler to ask the client for input before completing."""

    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    request_state: str | None = None

    def to_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"resultType": "input_required"}
        if self.input_requests:
            result["inputRequests"] = self.input_requests
        if self.request_state is not None:
            result["requestState"] = self.request_state
        return result


def elicitation(message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create`` input request in form mode; the schema is checked with
    :func:`check_elicitation_schema`."""
    check_elicitation_schema(requested_schema)
    return {"method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": requested_schema}}


def sampling(messages: list[dict[str, Any]], max_tokens: int, **extra: Any) -> dict[str, Any]:
    """A ``sampling/createMessage`` input request."""
    return {"method": "sampling/createMessage",
            "params": {"messages": messages, "maxTokens": max_tokens, **extra}}


def roots() -> dict[str, Any]:
    """A ``roots/list`` input request."""
    return {"method": "roots/list", "params": {}}


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
