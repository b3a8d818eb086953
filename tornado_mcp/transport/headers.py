"""Reading the request headers MCP cares about: media types, ``Accept``, single-valued
headers, and the 2026-07-28 routing headers' value encoding and comparison.

Parsed header values are memoised, but only short ones (up to :data:`MAX_CACHED_HEADER`
characters), so a client cannot make the caches hold large strings of its choosing.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tornado.httputil import HTTPHeaders

from ..protocol import HEADER_MISMATCH, INVALID_REQUEST
from .wire import Reply

T = TypeVar("T")

#: Header values longer than this are parsed each time instead of being cached.
MAX_CACHED_HEADER = 256


def cached_when_short(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse``, memoised for header values up to :data:`MAX_CACHED_HEADER` characters."""
    cached = functools.lru_cache(maxsize=256)(parse)

    def lookup(header: str) -> T:
        return cached(header) if len(header) <= MAX_CACHED_HEADER else parse(header)
    return lookup


@cached_when_short
def media_type(header: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return header.split(";", 1)[0].strip().lower()


@cached_when_short
def _offered(header: str) -> frozenset[str]:
    return frozenset(part.split(";", 1)[0].strip().lower() for part in header.split(","))


def accepts(header: str | None, *wanted: str) -> bool:
    """Does an ``Accept`` header admit every one of ``wanted``?"""
    if not header:
        return False
    if len(header) <= MAX_CACHED_HEADER:
        return _accepts(header, wanted)
    return _admits(_offered(header), wanted)


@functools.lru_cache(maxsize=256)
def _accepts(header: str, wanted: tuple[str, ...]) -> bool:
    return _admits(_offered(header), wanted)


def _admits(offered: frozenset[str], wanted: tuple[str, ...]) -> bool:
    if "*/*" in offered:
        return True
    return all(w in offered or f"{w.split('/')[0]}/*" in offered for w in wanted)


def require_accept(header: str | None, *wanted: str) -> None:
    """Refuse with 406 unless ``Accept`` admits every one of ``wanted``."""
    if not accepts(header, *wanted):
        raise Reply(406, INVALID_REQUEST,
                    f"Not Acceptable: Accept header must include {' and '.join(wanted)}")


def single(headers: HTTPHeaders, name: str) -> str | None:
    """The one value of header ``name``, stripped; a duplicated header is a mismatch."""
    values = headers.get_list(name)
    if len(values) > 1:
        raise Reply(400, HEADER_MISMATCH, f"Header mismatch: duplicated {name} header")
    return values[0].strip() if values else None


def value(headers: HTTPHeaders, name: str) -> str | None:
    """``headers.get(name)``: the header's value (several, comma-joined), or ``None``;
    without the ``KeyError`` that ``Mapping.get`` raises and catches for an absent one."""
    values = headers.get_list(name)
    if not values:
        return None
    return values[0] if len(values) == 1 else ",".join(values)


def decode_value(value: str) -> str:
    """A routing header's value: as sent, or decoded from ``=?base64?...?=``."""
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise Reply(400, HEADER_MISMATCH, "Header mismatch: invalid base64 header value") \
                from None
    return value


def value_matches(header: str, value: Any) -> bool:
    """Does a decoded ``Mcp-Param-*`` header value stand for the argument ``value``?"""
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(header) == float(value)
        except (ValueError, OverflowError):
            return False
    return bool(header == value)


def declares_small_body(h: HTTPHeaders, limit: int) -> bool:
    """The request declares no body, or one of at most ``limit`` bytes (not chunked)."""
    declared = h.get("Content-Length")
    if declared is None:
        return "Transfer-Encoding" not in h
    return declared.isdigit() and int(declared) <= limit
