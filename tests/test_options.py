"""TransportOptions: validation at construction, and live updates on a running transport."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_http import LEGACY, running

from tornado_mcp import Server, Transport
from tornado_mcp.options import (
    LIVE_OPTIONS,
    OPTION_SPECS,
    SPECS_BY_NAME,
    OptionError,
    TransportOptions,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from conformance_server import build_server

NULLABLE = sorted(s.name for s in OPTION_SPECS if s.nullable)
NOT_NULLABLE_BOUNDS = sorted(s.name for s in OPTION_SPECS
                             if not s.nullable and s.kind in ("int", "seconds"))
INT_BOUNDS = sorted(s.name for s in OPTION_SPECS if s.kind == "int")
SECONDS_BOUNDS = sorted(s.name for s in OPTION_SPECS if s.kind == "seconds")
BOOLS = sorted(s.name for s in OPTION_SPECS if s.kind == "bool")


def refused(**values: Any) -> OptionError:
    with pytest.raises(OptionError) as info:
        TransportOptions(**values)
    return info.value


# -- defaults ----------------------------------------------------------------------------------

def test_defaults_match_the_issue() -> None:
    o = TransportOptions()
    assert o.stateless is False and o.json_response is False
    assert o.session_idle_timeout == 1800.0
    assert o.max_sessions == 10_000
    assert o.max_request_bytes == 4 * 1024 * 1024
    assert o.dns_rebinding_protection is True
    assert o.allowed_hosts == () and o.allowed_origins == ()
    assert o.server_to_client_request_timeout == 600.0


def test_option_error_is_a_value_error_listing_fields() -> None:
    err = refused(max_sessions=0)
    assert isinstance(err, ValueError)
    assert set(err.errors) == {"max_sessions"}
    assert "max_sessions" in str(err)


# -- bad values ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", INT_BOUNDS)
@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "abc", [], {}])
def test_int_bounds_refuse_non_positive_integers(name: str, bad: Any) -> None:
    err = refused(**{name: bad})
    assert list(err.errors) == [name]
    message = err.errors[name]
    assert "positive integer" in message or "not a number" in message, message
    assert name in str(err)


@pytest.mark.parametrize("name", SECONDS_BOUNDS)
@pytest.mark.parametrize("bad", [0, -0.5, math.nan, math.inf, True, "soon", []])
def test_seconds_bounds_refuse_non_positive_or_non_finite(name: str, bad: Any) -> None:
    err = refused(**{name: bad})
    assert list(err.errors) == [name]
    message = err.errors[name]
    assert "positive number of seconds" in message or "not a number" in message, message


@pytest.mark.parametrize("name", BOOLS)
@pytest.mark.parametrize("bad", [1, 0, None, "maybe", []])
def test_bool_options_refuse_non_booleans(name: str, bad: Any) -> None:
    err = refused(**{name: bad})
    assert list(err.errors) == [name]


@pytest.mark.parametrize("name", ["allowed_hosts", "allowed_origins"])
@pytest.mark.parametrize("bad", [5, [1, 2], None])
def test_host_lists_refuse_non_string_lists(name: str, bad: Any) -> None:
    err = refused(**{name: bad})
    assert list(err.errors) == [name]


def test_host_lists_are_normalised_to_lowercase_tuples() -> None:
    o = TransportOptions(allowed_hosts=["MCP.Example.com"], allowed_origins="https://A.example, ")
    assert o.allowed_hosts == ("mcp.example.com",)
    assert o.allowed_origins == ("https://a.example",)


@pytest.mark.parametrize("bad", [[], ["1999-01-01"], "nope", None])
def test_protocol_versions_refuse_unknown_or_empty(bad: Any) -> None:
    err = refused(protocol_versions=bad)
    assert list(err.errors) == ["protocol_versions"]


def test_unknown_option_is_refused_by_name() -> None:
    err = refused(max_sesions=5)
    assert err.errors == {"max_sesions": "unknown option"}


def test_every_bad_field_is_reported_at_once() -> None:
    err = refused(max_sessions=0, max_request_bytes=-1, session_idle_timeout="x",
                  stateless="perhaps")
    assert set(err.errors) == {"max_sessions", "max_request_bytes", "session_idle_timeout",
                               "stateless"}


def test_transport_validates_at_construction() -> None:
    with pytest.raises(OptionError) as info:
        Transport(Server("s"), max_request_bytes=0)
    assert "max_request_bytes" in info.value.errors
    with pytest.raises(TypeError):
        Transport(Server("s"), options=TransportOptions(), max_sessions=3)


# -- None --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NULLABLE)
def test_none_removes_a_nullable_bound(name: str) -> None:
    assert getattr(TransportOptions(**{name: None}), name) is None
    assert getattr(TransportOptions(**{name: "none"}), name) is None  # the CLI spelling


@pytest.mark.parametrize("name", NOT_NULLABLE_BOUNDS)
def test_non_nullable_bounds_refuse_none(name: str) -> None:
    err = refused(**{name: None})
    assert err.errors == {name: "may not be none"}
    err2 = refused(**{name: "none"})
    assert list(err2.errors) == [name]


def test_max_request_bytes_and_s2c_timeout_are_not_nullable() -> None:
    assert "max_request_bytes" in NOT_NULLABLE_BOUNDS
    assert "server_to_client_request_timeout" in NOT_NULLABLE_BOUNDS


# -- stateless ----------------------------------------------------------------------------------

def test_stateless_refuses_an_idle_timeout() -> None:
    err = refused(stateless=True, session_idle_timeout=5)
    assert err.errors == {"session_idle_timeout": "is not supported in stateless mode"}


def test_stateless_drops_the_default_idle_timeout() -> None:
    assert TransportOptions(stateless=True).session_idle_timeout is None
    assert TransportOptions(stateless=True, session_idle_timeout=None).stateless is True


def test_stateless_refuses_a_live_idle_timeout_too() -> None:
    o = TransportOptions(stateless=True)
    with pytest.raises(OptionError) as info:
        o.update({"session_idle_timeout": 10})
    assert "session_idle_timeout" in info.value.errors
    assert o.session_idle_timeout is None


# -- live updates -------------------------------------------------------------------------------

def test_update_applies_and_notifies_listeners() -> None:
    o = TransportOptions(max_sessions=5)
    seen: list[tuple[dict[str, tuple[Any, Any]], str]] = []
    o.subscribe(lambda diff, actor: seen.append((diff, actor)))
    diff = o.update({"max_sessions": 10, "max_request_bytes": 1000}, actor="ops")
    assert diff == {"max_sessions": (5, 10), "max_request_bytes": (4 * 1024 * 1024, 1000)}
    assert o.max_sessions == 10 and o.max_request_bytes == 1000
    assert seen == [(diff, "ops")]


def test_update_without_a_change_notifies_nobody() -> None:
    o = TransportOptions(max_sessions=5)
    seen: list[Any] = []
    o.subscribe(lambda diff, actor: seen.append(diff))
    assert o.update({"max_sessions": 5}) == {}
    assert seen == []


def test_update_is_all_or_nothing() -> None:
    o = TransportOptions(max_sessions=5)
    seen: list[Any] = []
    o.subscribe(lambda diff, actor: seen.append(diff))
    before = o.as_dict()
    with pytest.raises(OptionError) as info:
        o.update({"max_sessions": 7, "max_request_bytes": 0, "sse_keepalive_interval": -1})
    assert set(info.value.errors) == {"max_request_bytes", "sse_keepalive_interval"}
    assert o.as_dict() == before and o.max_sessions == 5
    assert seen == []


@pytest.mark.parametrize("name", sorted(set(SPECS_BY_NAME) - set(LIVE_OPTIONS)))
def test_non_live_options_are_refused_by_update(name: str) -> None:
    o = TransportOptions()
    before = o.as_dict()
    value = {"bool": True, "hosts": ["x.example"], "versions": ["2025-11-25"]}[
        SPECS_BY_NAME[name].kind]
    with pytest.raises(OptionError) as info:
        o.update({name: value, "max_sessions": 3})
    assert info.value.errors == {name: "cannot be changed while the server runs"}
    assert o.as_dict() == before


def test_attribute_assignment_goes_through_update() -> None:
    o = TransportOptions()
    o.max_sessions = 3
    assert o.max_sessions == 3
    with pytest.raises(OptionError):
        o.max_sessions = 0
    with pytest.raises(OptionError):
        o.stateless = True
    assert o.max_sessions == 3 and o.stateless is False


def test_none_removes_a_bound_live() -> None:
    o = TransportOptions(max_sessions=2)
    assert o.update({"max_sessions": None}) == {"max_sessions": (2, None)}
    assert o.max_sessions is None
    with pytest.raises(OptionError):
        o.update({"max_request_bytes": None})


# -- live updates on a running server ---------------------------------------------------------

def init_body() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": LEGACY, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}


async def test_lowered_max_sessions_refuses_new_but_keeps_existing_sessions() -> None:
    async with running(build_server(), max_sessions=3) as srv:
        sids = [await srv.initialize() for _ in range(3)]
        srv.transport.options.update({"max_sessions": 1}, actor="test")
        r = await srv.post(init_body())
        assert r.status == 503 and r.json["error"]["code"] == -32603
        assert "(1) reached" in r.json["error"]["message"]
        assert "Mcp-Session-Id" not in r.headers
        assert {s.id for s in srv.transport.sessions} == set(sids)
        for sid in sids:
            ping = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid)
            assert ping.status == 200 and ping.messages[-1]["result"] == {}
        srv.transport.options.update({"max_sessions": 4})
        assert (await srv.post(init_body())).status == 200
        assert len(srv.transport.sessions) == 4


async def test_lowered_max_request_bytes_applies_to_the_next_request() -> None:
    async with running(build_server()) as srv:
        sid = await srv.initialize()
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping",
                           "params": {"pad": "x" * 500}}).encode()
        ok = await srv.post(None, session=sid, raw=body)
        assert ok.status == 200
        srv.transport.options.update({"max_request_bytes": len(body) - 1})
        r = await srv.post(None, session=sid, raw=body)
        assert r.status == 413 and r.json["error"]["code"] == -32600
        srv.transport.options.update({"max_request_bytes": len(body)})
        assert (await srv.post(None, session=sid, raw=body)).status == 200


async def test_snapshot_reports_the_live_limits() -> None:
    async with running(build_server(), max_sessions=7) as srv:
        assert srv.transport.snapshot().limits["max_sessions"] == 7
        srv.transport.options.update({"max_sessions": 9})
        assert srv.transport.snapshot().limits["max_sessions"] == 9
