r"""One place for JSON: fast encoding and bounded decoding.

``orjson`` is used when it is installed (the ``speed`` extra); the standard
library serves otherwise, with the same results.  Decoding enforces the nesting bound, and
:func:`count_values_exceeds` walks a parsed value without ever queuing more than the limit.

Text that Python can hold but UTF-8 cannot carry, a lone UTF-16 surrogate such as
``"\ud800"``, is refused on the way in as a parse error by both (orjson refuses it; the
standard library's parser is checked afterwards), and escaped on the way out (``\ud800``
in the JSON text) should a handler produce one, so no input can make an answer fail.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: JSON nesting deeper than this is a parse error (-32700, HTTP 400), in both eras.
MAX_JSON_NESTING = 64


_orjson: Any
try:  # pragma: no cover - exercised through whichever is installed
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None


class JSONDecodeError(ValueError):
    """The body is not JSON, is not UTF-8, or nests deeper than the bound."""


class JSONNestingError(JSONDecodeError):
    """The body is JSON that nests deeper than the bound."""


if _orjson is not None:
    _dumps = _orjson.dumps
    _loads = _orjson.loads
    _decode_errors: tuple[type[Exception], ...] = (_orjson.JSONDecodeError,)

    def _too_deep(exc: Exception) -> bool:
        # orjson refuses documents nested past its own depth limit (1024) before
        # our walk could see them; that is a nesting refusal as well.
        return "depth limit" in str(exc)

    def dumps(value: Any) -> bytes:
        """Compact UTF-8 JSON."""
        try:
            out: bytes = _dumps(value)
        except TypeError:  # a lone surrogate (or a value JSON cannot hold: raised below)
            return _ascii_dumps(value)
        return out

    def _surrogates_in(data: bytes, value: Any) -> bool:
        return False  # orjson's parser refuses lone surrogates itself
else:  # pragma: no cover
    _encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    _decode_errors = (ValueError, RecursionError, UnicodeDecodeError)

    def _no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def _too_deep(exc: Exception) -> bool:
        return isinstance(exc, RecursionError)

    def _finite(text: str) -> float:
        value = float(text)
        if math.isinf(value):  # 1e999: refused, as orjson refuses it
            raise ValueError(f"number {text[:32]} is out of range")
        return value

    def _loads(data: bytes) -> Any:
        # Strictly UTF-8 and strictly JSON (no NaN or Infinity, nor a number that is
        # infinite as a double), as orjson.
        return json.loads(data.decode("utf-8"), parse_constant=_no_constants,
                          parse_float=_finite)

    def dumps(value: Any) -> bytes:
        """Compact UTF-8 JSON."""
        try:
            return _encoder.encode(value).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: escape it
            return _ascii_dumps(value)

    def _surrogates_in(data: bytes, value: Any) -> bool:
        # Only a document spelling a surrogate escape can decode to a lone surrogate.
        return _SURROGATE_ESCAPE.search(data) is not None and _has_lone_surrogate(value)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_ascii_encoder = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def _ascii_dumps(value: Any) -> bytes:
    """JSON with every non-ASCII character escaped: what carries a lone surrogate."""
    return _ascii_encoder.encode(value).encode("ascii")


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is str:
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif type(v) is dict:
            stack.extend(v)
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
    return False


def dumps_retained(value: Any) -> bytes:
    """Like :func:`dumps`, for bytes that will be kept: exactly as large as their content.

    orjson returns its result inside a growth buffer (16 KiB for a 1.4 KiB document);
    fine for a response that is written and dropped, wasteful for what a session keeps.
    """
    out = dumps(value)
    return memoryview(out).tobytes() if _orjson is not None else out


def dumps_str(value: Any) -> str:
    return dumps(value).decode("utf-8")


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests deeper than ``limit`` containers."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > limit:
            return True
        if type(v) is dict:
            stack.extend((c, depth + 1) for c in v.values() if type(c) in (dict, list))
        elif type(v) is list:
            stack.extend((c, depth + 1) for c in v if type(c) in (dict, list))
    return False


def loads(data: bytes, max_nesting: int = MAX_JSON_NESTING) -> Any:
    """Parse ``data``; raise :class:`JSONDecodeError` for bad JSON, and its subclass
    :class:`JSONNestingError` for nesting over the bound.

    A body with no more brackets than the bound cannot nest deeper than it, so the depth
    walk only runs for bodies that could.
    """
    try:
        value = _loads(data)
    except _decode_errors as exc:
        if _too_deep(exc):
            raise JSONNestingError(f"nesting exceeds {max_nesting}") from None
        raise JSONDecodeError(str(exc)) from None
    if _surrogates_in(data, value):
        raise JSONDecodeError("a string holds a lone UTF-16 surrogate")
    if (data.count(b"[") + data.count(b"{") > max_nesting
            and type(value) in (dict, list) and depth_exceeds(value, max_nesting)):
        raise JSONNestingError(f"nesting exceeds {max_nesting}")
    return value


def count_values_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` holds more than ``limit`` JSON values.

    Every object, array, object key and scalar counts once.  The walk is iterative and
    stops as soon as the limit is certain to be passed, so it never queues more than
    ``limit`` values whatever the input.
    """
    count = 0
    stack = [value]
    while stack:
        v = stack.pop()
        count += 1
        t = type(v)
        if t is dict:
            n = len(v)
            if count + len(stack) + 2 * n > limit:
                return True
            count += n  # the keys
            stack.extend(v.values())
        elif t is list:
            if count + len(stack) + len(v) > limit:
                return True
            stack.extend(v)
        if count + len(stack) > limit:
            return True
    return False


def count_values(value: Any) -> int:
    """The number of JSON values in ``value`` (objects, arrays, keys and scalars)."""
    count = 0
    stack = [value]
    while stack:
        v = stack.pop()
        count += 1
        if type(v) is dict:
            count += len(v)
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
    return count
