"""JSON-RPC messages: their kinds, their ids, and error responses.

Shared by every transport (HTTP, stdio); nothing here knows how a message travels.
"""

from __future__ import annotations

import enum
from typing import Any


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
