"""Parsed header values are remembered only for short headers, and answer the same either way.

The verdicts of ``Accept`` are cached per header value up to ``MAX_CACHED_HEADER``
characters, so a client cannot make the cache hold long strings of its choosing.
"""

from __future__ import annotations

import pytest
from tornado.httputil import HTTPHeaders

from tornado_mcp.transport import headers
from tornado_mcp.transport.headers import MAX_CACHED_HEADER


def accept_of_length(length: int, types: str = "application/json, text/event-stream") -> str:
    padding = length - len(types) - len(", x/")
    return f"{types}, x/{'y' * padding}"


@pytest.mark.parametrize(("length", "cached"), [(MAX_CACHED_HEADER, True),
                                                (MAX_CACHED_HEADER + 1, False)])
def test_accept_verdicts_are_cached_up_to_the_bound(length: int, cached: bool) -> None:
    header = accept_of_length(length)
    assert len(header) == length
    headers._accepts.cache_clear()
    assert headers.accepts(header, "application/json", "text/event-stream")
    assert not headers.accepts(header, "image/png")
    assert headers._accepts.cache_info().currsize == (2 if cached else 0)


def test_a_header_value_reads_as_mapping_get_does() -> None:
    h = HTTPHeaders()
    h.add("Origin", "https://a.example")
    h.add("Origin", "https://b.example")
    h.add("Host", "127.0.0.1")
    for name in ("Origin", "Host", "Absent"):
        assert headers.value(h, name) == h.get(name)
