"""JSON I/O: compact UTF-8 encoding, strict decoding (no NaN or Infinity, UTF-8 only), the
nesting bound, and counting JSON values; with orjson and with the standard library."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tornado_mcp.protocol import jsonio
from tornado_mcp.protocol.jsonio import MAX_JSON_NESTING


def nested(depth: int) -> bytes:
    """An array nesting exactly ``depth`` containers deep."""
    return b"[" * depth + b"]" * depth


def test_dumps_is_compact_utf8() -> None:
    assert jsonio.dumps({"a": [1, 2], "b": "é"}) == '{"a":[1,2],"b":"é"}'.encode()
    assert jsonio.dumps_str({"a": None}) == '{"a":null}'
    assert jsonio.dumps_retained({"a": 1}) == b'{"a":1}'


@pytest.mark.skipif(jsonio._orjson is None, reason="orjson is not installed")
def test_orjson_encodes_nan_and_infinity_as_null() -> None:
    """orjson writes no NaN or Infinity either: it writes ``null`` (the fallback refuses,
    see below); what goes on the wire is JSON in both cases."""
    for bad in (float("nan"), float("inf"), float("-inf")):
        assert jsonio.dumps({"x": bad}) == b'{"x":null}'


def test_loads_round_trips() -> None:
    value = {"s": "é\u2028", "n": [1, -2.5, 2**53], "t": True, "f": False, "z": None}
    assert jsonio.loads(jsonio.dumps(value)) == value


@pytest.mark.parametrize("body", [b"[NaN]", b'{"a":Infinity}', b"[-Infinity]", b"{not json",
                                  b"", b"\xff\xfe{}", '{"a":1}'.encode("utf-16"), b"[1,]"])
def test_loads_refuses_what_is_not_json(body: bytes) -> None:
    with pytest.raises(jsonio.JSONDecodeError):
        jsonio.loads(body)


def test_decode_error_is_a_value_error() -> None:
    assert issubclass(jsonio.JSONDecodeError, ValueError)


def test_nesting_bound_is_64() -> None:
    assert MAX_JSON_NESTING == 64
    assert jsonio.loads(nested(64)) == json.loads(nested(64))
    with pytest.raises(jsonio.JSONDecodeError, match="nesting exceeds 64"):
        jsonio.loads(nested(65))


def test_nesting_counts_objects_and_arrays_alike() -> None:
    body = b'{"a":' * 32 + b"[" * 32 + b"]" * 32 + b"}" * 32  # 64 deep
    assert jsonio.loads(body) is not None
    with pytest.raises(jsonio.JSONDecodeError):
        jsonio.loads(b"[" + body + b"]")


def test_brackets_in_strings_do_not_count_as_nesting() -> None:
    body = json.dumps(["[" * 200, "{" * 200]).encode()
    assert jsonio.loads(body) == ["[" * 200, "{" * 200]


def test_nesting_bound_can_be_lowered() -> None:
    assert jsonio.loads(nested(3), max_nesting=3) == [[[]]]
    with pytest.raises(jsonio.JSONDecodeError, match="nesting exceeds 3"):
        jsonio.loads(nested(4), max_nesting=3)


@pytest.mark.parametrize(("value", "count"), [
    (None, 1), (1, 1), ("s", 1), ([], 1), ({}, 1),
    ([1, 2, 3], 4),
    ({"a": 1}, 3),  # the object, its key, its value
    ({"a": {"b": [1, None]}}, 7),
    ([[[]]], 3),
])
def test_count_values(value: Any, count: int) -> None:
    assert jsonio.count_values(value) == count
    assert jsonio.count_values_exceeds(value, count) is False
    assert jsonio.count_values_exceeds(value, count - 1) is True


def test_count_values_exceeds_stops_early_on_a_huge_value() -> None:
    huge = [0] * 1_000_000
    assert jsonio.count_values_exceeds(huge, 1024) is True
    assert jsonio.count_values_exceeds({"k": huge}, 1024) is True
    assert jsonio.count_values_exceeds([0] * 1023, 1024) is False
    assert jsonio.count_values_exceeds([0] * 1024, 1024) is True


_FALLBACK = r"""
import json, sys
sys.modules["orjson"] = None
from tornado_mcp.protocol import jsonio
assert jsonio._orjson is None
bad = []
for body in (b"[NaN]", b'{"a":Infinity}', '{"a":1}'.encode("utf-16"), b"\xff\xfe{}",
             b"[" * 65 + b"]" * 65, b'"\\ud800"', b'{"\\udc00":1}', b'["x\\uDBFFy"]'):
    try:
        jsonio.loads(body)
        bad.append(body)
    except jsonio.JSONDecodeError:
        pass
try:
    bad.append(jsonio.dumps({"x": float("nan")}))
except ValueError:
    pass
if jsonio.dumps({"a": [1], "b": "\u00e9"}) != '{"a":[1],"b":"\u00e9"}'.encode():
    bad.append("dumps")
if jsonio.loads(b"[" * 64 + b"]" * 64) != json.loads(b"[" * 64 + b"]" * 64):
    bad.append("nesting 64")
if jsonio.loads(b'"\\ud83d\\ude00"') != "\U0001f600":  # a surrogate pair is one character
    bad.append("pair")
if jsonio.dumps({"id": "\ud800"}) != b'{"id":"\\ud800"}':
    bad.append("surrogate out")
print(bad)
sys.exit(1 if bad else 0)
"""


def test_stdlib_fallback_behaves_as_orjson() -> None:
    """Without orjson the standard library serves, as strictly: no NaN or Infinity either
    way, UTF-8 only, the same nesting bound, the same compact output."""
    proc = subprocess.run([sys.executable, "-c", _FALLBACK], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("body", [b'"\\ud800"', b'{"\\udc00":1}', b'["x\\uDBFFy"]',
                                  b'{"id":"\\ud800","method":"ping"}'])
def test_a_lone_surrogate_is_a_parse_error(body: bytes) -> None:
    with pytest.raises(jsonio.JSONDecodeError):
        jsonio.loads(body)


def test_a_surrogate_pair_is_one_character() -> None:
    assert jsonio.loads(b'"\\ud83d\\ude00"') == "\U0001f600"


def test_a_lone_surrogate_produced_by_a_handler_is_escaped_on_the_way_out() -> None:
    assert jsonio.dumps({"text": "a\ud800b", "e": "\u00e9"}) == \
        b'{"text":"a\\ud800b","e":"\\u00e9"}'
