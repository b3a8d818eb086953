"""Opaque cursors for the four list methods.

A cursor is the base64 of a position; clients must treat it as opaque, and the server
refuses one it did not mint with -32602 ("Invalid cursor").
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, TypeVar

from . import INVALID_PARAMS
from .errors import MCPError

T = TypeVar("T")
_PREFIX = b"tmcp:"


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(_PREFIX + str(offset).encode()).decode().rstrip("=")


def decode_cursor(cursor: Any) -> int:
    if cursor is None or cursor == "":
        return 0
    if not isinstance(cursor, str) or len(cursor) > 64:
        raise MCPError(INVALID_PARAMS, "Invalid cursor")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError):
        raise MCPError(INVALID_PARAMS, "Invalid cursor") from None
    if not raw.startswith(_PREFIX) or not raw[len(_PREFIX):].isdigit():
        raise MCPError(INVALID_PARAMS, "Invalid cursor")
    return int(raw[len(_PREFIX):])


def paginate(items: Sequence[T], cursor: Any,
             page_size: int | None) -> tuple[Sequence[T], str | None]:
    """Return one page of ``items`` and the cursor of the next page (``None`` at the end)."""
    start = decode_cursor(cursor)
    if start > len(items):
        raise MCPError(INVALID_PARAMS, "Invalid cursor")
    if page_size is None:
        return items[start:], None
    end = start + page_size
    return items[start:end], (encode_cursor(end) if end < len(items) else None)
