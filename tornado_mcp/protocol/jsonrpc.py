"""JSON-RPC messages: their kinds, their ids, and error responses.

Shared by every transport (HTTP, stdio); nothing here knows how a message travels.
"""

from __future__ import annotations

import enum
from typing import Any

from . import Refusal, jsonio


class Kind(enum.Enum):
    """What a parsed JSON-RPC message is."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    INVALID = "invalid"


def classify(message: dict[str, Any]) -> Kind:
    has_method = isinstance(message.get("method"), str)
    if has_method and "id" in message:
        return Kind.REQUEST
    if has_method:
        return Kind.NOTIFICATION
    if "id" in message and ("result" in message or "error" in message):
        return Kind.RESPONSE
    return Kind.INVALID


def valid_id(value: Any) -> bool:
    """A request id the server can answer: a string or an integer (never a boolean)."""
    kind = type(value)
    if kind is str or kind is int:  # what parsed JSON holds: no subclass checks needed
        return True
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def safe_id(value: Any) -> Any:
    """``value`` when it is a valid id, else ``None`` (what an error answer carries)."""
    return value if valid_id(value) else None


def error_body(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": err}


class Reply(Exception):
    """Stop handling this request and answer it with ``status`` and a JSON-RPC error.

    ``status`` is the HTTP status where the transport has one (stdio sends the error
    alone); ``refusal`` names the bound that refused it, counted in the refusals.
    """

    def __init__(self, status: int, code: int, message: str, request_id: Any = None,
                 data: Any = None, refusal: Refusal | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.request_id, self.data, self.refusal = request_id, data, refusal
        #: HTTP headers of the answer, where the transport has them (e.g. Retry-After).
        self.headers = headers or {}

    def error_body(self) -> dict[str, Any]:
        return error_body(self.request_id, self.code, self.message, self.data)

    def body(self) -> bytes:
        return jsonio.dumps(self.error_body())
