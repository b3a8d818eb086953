"""Opaque list cursors: what they encode, which ones are refused (-32602 "Invalid cursor"),
and the pages ``paginate`` cuts."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tornado_mcp.protocol import INVALID_PARAMS
from tornado_mcp.protocol.errors import MCPError
from tornado_mcp.protocol.pagination import decode_cursor, encode_cursor, paginate

ITEMS = list(range(10))


@pytest.mark.parametrize("offset", [0, 1, 9, 10, 12345])
def test_cursor_round_trip(offset: int) -> None:
    cursor = encode_cursor(offset)
    assert "=" not in cursor
    assert decode_cursor(cursor) == offset


def test_cursor_is_urlsafe_base64_of_a_prefixed_offset() -> None:
    assert encode_cursor(5) == base64.urlsafe_b64encode(b"tmcp:5").decode().rstrip("=")


@pytest.mark.parametrize("cursor", [None, ""])
def test_no_cursor_is_the_first_page(cursor: Any) -> None:
    assert decode_cursor(cursor) == 0


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("cursor", [
    5, 1.5, [], {}, True,
    "x" * 65,
    "!!!not base64!!!",
    _b64(b"other:5"), _b64(b"tmcp:"), _b64(b"tmcp:-1"), _b64(b"tmcp:1.5"), _b64(b"tmcp:1 "),
], ids=["int", "float", "list", "dict", "bool", "too-long", "not-base64", "foreign-prefix",
        "no-offset", "negative", "fraction", "trailing-space"])
def test_cursors_the_server_did_not_mint_are_invalid_params(cursor: Any) -> None:
    with pytest.raises(MCPError) as info:
        decode_cursor(cursor)
    assert info.value.code == INVALID_PARAMS == -32602
    assert info.value.message == "Invalid cursor"


def test_a_cursor_of_64_characters_is_decoded() -> None:
    cursor = _b64(b"tmcp:" + b"0" * 43)
    assert len(cursor) == 64
    assert decode_cursor(cursor) == 0


def test_pages_walk_every_item_once() -> None:
    pages, cursor = [], None
    while True:
        page, cursor = paginate(ITEMS, cursor, 4)
        pages.append(list(page))
        if cursor is None:
            break
    assert pages == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_an_exact_last_page_has_no_next_cursor() -> None:
    assert paginate(ITEMS, encode_cursor(5), 5) == (ITEMS[5:], None)
    assert paginate(ITEMS, None, 10) == (ITEMS, None)


def test_no_page_size_returns_the_rest() -> None:
    assert paginate(ITEMS, None, None) == (ITEMS, None)
    assert paginate(ITEMS, encode_cursor(7), None) == ([7, 8, 9], None)


def test_a_cursor_at_the_end_is_an_empty_page_and_past_it_is_invalid() -> None:
    assert paginate(ITEMS, encode_cursor(10), 4) == ([], None)
    with pytest.raises(MCPError) as info:
        paginate(ITEMS, encode_cursor(11), 4)
    assert (info.value.code, info.value.message) == (-32602, "Invalid cursor")
