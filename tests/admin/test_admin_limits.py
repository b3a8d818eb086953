"""Limit changes from the dashboard go through the library's own coercion and messages.

``PATCH api/limits`` (and the form on the page) refuses exactly what
:meth:`tornado_mcp.options.Options.update` refuses, with the same message per field;
marshmallow only gives the body its shape.  The JSON rules of
``OptionSpec.coerce(from_json=True)`` are the only difference: JSON text is never read as a
number, and a whole float is an integer.
"""

from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest
from admin_support import BEARER, running_admin

from admin_ui.schemas import FieldErrors, load_limit_changes
from tornado_mcp.options import (
    MAX_JSON_INTEGER,
    NOT_LIVE,
    SPECS_BY_NAME,
    UNKNOWN_OPTION,
    OptionError,
    Options,
)


def library_errors(changes: dict[str, Any]) -> dict[str, str]:
    """What ``Options.update`` says about each refused field of ``changes``."""
    errors: dict[str, str] = {}
    for name, value in changes.items():  # one at a time: update stops at non-live names
        with pytest.raises(OptionError) as info:
            Options().update({name: value})
        errors.update(info.value.errors)
    return errors


@pytest.mark.parametrize(
    "changes",
    [
        {"max_sessions": 0},
        {"max_sessions": -5, "max_request_bytes": None},
        {"max_sessions": True},
        {"max_sessions": 1.5},
        {"max_request_bytes": []},
        {"session_idle_timeout": 0},
        {"session_idle_timeout": -0.5, "listen_keepalive_interval": math.nan},
        {"server_to_client_request_timeout": None},
        {"stream_stall_timeout": math.inf},
        {"stateless": True},
        {"allowed_hosts": ["a.example"]},
        {"no_such_limit": 1},
        {"max_sessions": 0, "stateless": True, "no_such_limit": 1},
    ],
)
async def test_refusals_carry_the_librarys_message_for_every_field(
    changes: dict[str, Any],
) -> None:
    expected = library_errors(changes)
    with pytest.raises(FieldErrors) as info:
        load_limit_changes(changes)
    assert info.value.errors == expected

    async with running_admin() as srv, httpx.AsyncClient() as client:
        before = srv.transport.options.live_values()
        body = json.dumps(changes).encode()  # NaN and Infinity as Python's json writes them
        resp = await client.patch(f"{srv.admin}/api/limits", content=body, headers=BEARER)
        assert resp.status_code == 400
        assert resp.json()["errors"] == expected
        assert srv.transport.options.live_values() == before


def test_the_messages_are_the_librarys_words() -> None:
    with pytest.raises(FieldErrors) as info:
        load_limit_changes({"max_sessions": 0, "max_request_bytes": None, "stateless": False,
                            "session_idle_timeout": "soon", "nope": 1})
    assert info.value.errors == {
        "max_sessions": "must be a positive integer or none",
        "max_request_bytes": "may not be none",
        "stateless": NOT_LIVE,
        "session_idle_timeout": "must be a positive number of seconds or none",
        "nope": UNKNOWN_OPTION,
    }


# -- the JSON rules --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [("max_sessions", "10"), ("session_idle_timeout", "30"), ("max_sessions", "none")],
)
def test_json_text_is_never_a_number(name: str, text: str) -> None:
    spec = SPECS_BY_NAME[name]
    assert spec.coerce(text) is not text  # the command line's text is parsed...
    with pytest.raises(FieldErrors) as info:  # ...a JSON string is not
        load_limit_changes({name: text})
    with pytest.raises(ValueError, match=info.value.errors[name]):
        spec.coerce(text, from_json=True)


def test_a_whole_float_is_an_integer_in_json_only() -> None:
    spec = SPECS_BY_NAME["max_sessions"]
    assert load_limit_changes({"max_sessions": 5.0}) == {"max_sessions": 5}
    assert type(spec.coerce(5.0, from_json=True)) is int
    with pytest.raises(ValueError, match="positive integer"):
        spec.coerce(5.0)  # Python callers pass an int, as before
    with pytest.raises(ValueError, match="positive integer"):
        spec.coerce(5.5, from_json=True)


def test_json_integers_stop_where_json_readers_lose_precision() -> None:
    assert load_limit_changes({"max_sessions": MAX_JSON_INTEGER}) == {
        "max_sessions": MAX_JSON_INTEGER}
    with pytest.raises(FieldErrors) as info:
        load_limit_changes({"max_sessions": MAX_JSON_INTEGER + 1})
    assert info.value.errors == {"max_sessions": f"must be at most {MAX_JSON_INTEGER}"}
    assert MAX_JSON_INTEGER == 2**53 - 1


async def test_an_integer_past_float_range_is_refused_not_a_crash() -> None:
    with pytest.raises(OptionError) as info:
        Options(session_idle_timeout=10**400)
    assert info.value.errors == {
        "session_idle_timeout": "must be a positive number of seconds or none"}
    async with running_admin() as srv, httpx.AsyncClient() as client:
        resp = await client.patch(f"{srv.admin}/api/limits",
                                  content=b'{"session_idle_timeout": 1' + b"0" * 400 + b"}",
                                  headers=BEARER)
        assert resp.status_code == 400
        assert set(resp.json()["errors"]) == {"session_idle_timeout"}


# -- the library has the last word, read-only comes first ------------------------------------


async def test_stateless_rule_comes_from_update() -> None:
    async with running_admin(stateless=True) as srv, httpx.AsyncClient() as client:
        resp = await client.patch(f"{srv.admin}/api/limits",
                                  json={"session_idle_timeout": 5, "max_sessions": 3},
                                  headers=BEARER)
        assert resp.status_code == 400
        assert resp.json()["errors"] == {
            "session_idle_timeout": "is not supported in stateless mode"}
        assert srv.transport.options.max_sessions == 10_000


async def test_read_only_refuses_before_looking_at_the_values() -> None:
    async with running_admin(read_only=True) as srv, httpx.AsyncClient() as client:
        for body in ({"max_sessions": 0}, {"max_sessions": 5}):
            resp = await client.patch(f"{srv.admin}/api/limits", json=body, headers=BEARER)
            assert resp.status_code == 403
            assert "read-only" in resp.json()["error"]
            assert "errors" not in resp.json()
