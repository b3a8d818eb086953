"""Options and OptionSpec: defaults, validation and coercion, ``None`` for nullable
bounds, stateless rules, and live updates (no HTTP; see tests/http/test_live_limits.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tornado_mcp import Server, Transport
from tornado_mcp.options import (
    LIVE_OPTIONS,
    OPTION_SPECS,
    SPECS_BY_NAME,
    OptionError,
    Options,
)

NULLABLE = sorted(s.name for s in OPTION_SPECS if s.nullable)
NOT_NULLABLE_BOUNDS = sorted(s.name for s in OPTION_SPECS
                             if not s.nullable and s.kind in ("int", "seconds"))
INT_BOUNDS = sorted(s.name for s in OPTION_SPECS if s.kind == "int")
SECONDS_BOUNDS = sorted(s.name for s in OPTION_SPECS if s.kind == "seconds")
BOOLS = sorted(s.name for s in OPTION_SPECS if s.kind == "bool")


def refused(**values: Any) -> OptionError:
    with pytest.raises(OptionError) as info:
        Options(**values)
    return info.value


# -- defaults ----------------------------------------------------------------------------------

def test_defaults_are_the_documented_ones() -> None:
    o = Options()
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
    spec = SPECS_BY_NAME[name]
    expected = ("'abc' is not a number" if bad == "abc" else
                "must be a positive integer" + (" or none" if spec.nullable else ""))
    assert err.errors[name] == expected
    assert str(err) == f"{name}: {expected}"


@pytest.mark.parametrize("name", SECONDS_BOUNDS)
@pytest.mark.parametrize("bad", [0, -0.5, math.nan, math.inf, True, "soon", []])
def test_seconds_bounds_refuse_non_positive_or_non_finite(name: str, bad: Any) -> None:
    err = refused(**{name: bad})
    assert list(err.errors) == [name]
    spec = SPECS_BY_NAME[name]
    expected = ("'soon' is not a number" if bad == "soon" else
                "must be a positive number of seconds" + (" or none" if spec.nullable else ""))
    assert err.errors[name] == expected


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
    o = Options(allowed_hosts=["MCP.Example.com"], allowed_origins="https://A.example, ")
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
        Transport(Server("s"), options=Options(), max_sessions=3)


# -- None --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NULLABLE)
def test_none_removes_a_nullable_bound(name: str) -> None:
    assert getattr(Options(**{name: None}), name) is None
    assert getattr(Options(**{name: "none"}), name) is None  # the CLI spelling


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
    assert Options(stateless=True).session_idle_timeout is None
    assert Options(stateless=True, session_idle_timeout=None).stateless is True


def test_stateless_refuses_a_live_idle_timeout_too() -> None:
    o = Options(stateless=True)
    with pytest.raises(OptionError) as info:
        o.update({"session_idle_timeout": 10})
    assert "session_idle_timeout" in info.value.errors
    assert o.session_idle_timeout is None


# -- live updates -------------------------------------------------------------------------------

def test_update_applies_and_notifies_listeners() -> None:
    o = Options(max_sessions=5)
    seen: list[tuple[dict[str, tuple[Any, Any]], str]] = []
    o.subscribe(lambda diff, actor: seen.append((diff, actor)))
    diff = o.update({"max_sessions": 10, "max_request_bytes": 1000}, actor="ops")
    assert diff == {"max_sessions": (5, 10), "max_request_bytes": (4 * 1024 * 1024, 1000)}
    assert o.max_sessions == 10 and o.max_request_bytes == 1000
    assert seen == [(diff, "ops")]


def test_update_without_a_change_notifies_nobody() -> None:
    o = Options(max_sessions=5)
    seen: list[Any] = []
    o.subscribe(lambda diff, actor: seen.append(diff))
    assert o.update({"max_sessions": 5}) == {}
    assert seen == []


def test_update_is_all_or_nothing() -> None:
    o = Options(max_sessions=5)
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
    o = Options()
    before = o.as_dict()
    value = {"bool": True, "hosts": ["x.example"], "versions": ["2025-11-25"], "int": 2,
             "seconds": 7.0}[
        SPECS_BY_NAME[name].kind]
    with pytest.raises(OptionError) as info:
        o.update({name: value, "max_sessions": 3})
    assert info.value.errors == {name: "cannot be changed while the server runs"}
    assert o.as_dict() == before


def test_attribute_assignment_goes_through_update() -> None:
    o = Options()
    o.max_sessions = 3
    assert o.max_sessions == 3
    with pytest.raises(OptionError):
        o.max_sessions = 0
    with pytest.raises(OptionError):
        o.stateless = True
    assert o.max_sessions == 3 and o.stateless is False


def test_none_removes_a_bound_live() -> None:
    o = Options(max_sessions=2)
    assert o.update({"max_sessions": None}) == {"max_sessions": (2, None)}
    assert o.max_sessions is None
    with pytest.raises(OptionError):
        o.update({"max_request_bytes": None})


# -- OptionSpec.coerce: command-line text and every bound's None ---------------------------------

@pytest.mark.parametrize("name", NULLABLE)
@pytest.mark.parametrize("text", ["none", "None", " NULL ", "off"])
def test_nullable_bounds_read_none_from_text(name: str, text: str) -> None:
    assert SPECS_BY_NAME[name].coerce(text) is None
    assert SPECS_BY_NAME[name].coerce(None) is None


@pytest.mark.parametrize("name", NOT_NULLABLE_BOUNDS)
def test_not_nullable_bounds_refuse_none_text(name: str) -> None:
    spec = SPECS_BY_NAME[name]
    with pytest.raises(ValueError) as info:
        spec.coerce(None)
    assert str(info.value) == "may not be none"
    with pytest.raises(ValueError) as info:
        spec.coerce("none")
    assert str(info.value) == "'none' is not a number"


def test_every_bound_is_nullable_exactly_as_documented() -> None:
    assert NULLABLE == [
        "body_timeout", "forward_idle_timeout", "listen_keepalive_interval",
        "max_concurrent_calls_per_principal", "max_initialize_request_bytes",
        "max_listen_subscriptions", "max_resource_subscription_bytes", "max_sessions",
        "max_task_result_bytes", "max_tasks", "oauth_registrations_per_minute",
        "rate_limit_per_principal", "session_idle_timeout", "shutdown_grace",
        "sse_keepalive_interval", "stream_stall_timeout", "sync_handler_threads"]
    assert NOT_NULLABLE_BOUNDS == [
        "cluster_heartbeat_ttl", "cluster_outage_buffer", "cluster_stream_length",
        "event_store_max_age", "event_store_max_bytes", "max_audit_entries",
        "max_bearer_token_bytes", "max_request_bytes", "max_stream_queue",
        "oauth_max_client_metadata_bytes", "oauth_max_clients", "oauth_max_redirect_uris",
        "server_to_client_request_timeout", "sse_retry_interval", "task_ttl"]


@pytest.mark.parametrize("name", INT_BOUNDS)
def test_int_bounds_parse_text(name: str) -> None:
    spec = SPECS_BY_NAME[name]
    assert spec.coerce("42") == 42 and type(spec.coerce(" 7 ")) is int
    assert spec.coerce(1) == 1
    with pytest.raises(ValueError) as info:
        spec.coerce("1.5")
    assert str(info.value) == "'1.5' is not a number"


@pytest.mark.parametrize("name", SECONDS_BOUNDS)
def test_seconds_bounds_parse_text_and_return_floats(name: str) -> None:
    spec = SPECS_BY_NAME[name]
    assert spec.coerce("2.5") == 2.5
    assert spec.coerce(3) == 3.0 and type(spec.coerce(3)) is float
    with pytest.raises(ValueError) as info:
        spec.coerce("inf")
    assert str(info.value) == ("must be a positive number of seconds"
                               + (" or none" if spec.nullable else ""))


@pytest.mark.parametrize("name", BOOLS)
def test_bools_parse_text(name: str) -> None:
    spec = SPECS_BY_NAME[name]
    for text in ("true", "YES", "1", "on"):
        assert spec.coerce(text) is True
    for text in ("false", "no", "0", "off"):
        assert spec.coerce(text) is False
    with pytest.raises(ValueError) as info:
        spec.coerce("maybe")
    assert str(info.value) == "must be true or false"


def test_hosts_parse_a_comma_separated_list() -> None:
    spec = SPECS_BY_NAME["allowed_hosts"]
    assert spec.coerce("A.example, b.example:8080 ,,") == ("a.example", "b.example:8080")
    assert spec.coerce("") == ()
    with pytest.raises(ValueError) as info:
        spec.coerce([1])
    assert str(info.value) == "must be a list of strings"


def test_versions_parse_text_and_keep_the_canonical_order() -> None:
    spec = SPECS_BY_NAME["protocol_versions"]
    assert spec.coerce("2025-03-26,2026-07-28") == ("2026-07-28", "2025-03-26")
    assert spec.coerce(["2025-11-25", "2025-11-25"]) == ("2025-11-25",)
    with pytest.raises(ValueError) as info:
        spec.coerce("")
    assert str(info.value) == "must be a non-empty list of protocol versions"
    with pytest.raises(ValueError) as info:
        spec.coerce(["1999-01-01"])
    assert str(info.value) == ("unknown protocol versions ['1999-01-01']; known: "
                               "['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']")


def test_flags_are_the_names_with_dashes() -> None:
    assert SPECS_BY_NAME["max_sessions"].flag == "--max-sessions"
    assert all(s.flag == "--" + s.name.replace("_", "-") for s in OPTION_SPECS)


def test_update_messages_for_unknown_and_not_live_options() -> None:
    o = Options()
    with pytest.raises(OptionError) as info:
        o.update({"stateless": True})
    assert info.value.errors == {"stateless": "cannot be changed while the server runs"}
    with pytest.raises(OptionError) as info:
        o.update({"no_such_option": 1})
    assert info.value.errors == {"no_such_option": "unknown option"}


def test_repr_lists_only_what_differs_from_the_defaults() -> None:
    assert repr(Options()) == "Options()"
    assert repr(Options(max_sessions=5)) == "Options(max_sessions=5)"


def test_tool_bounds_take_json_text_and_name_the_bad_field() -> None:
    opts = Options(tool_bounds='{"slow": {"timeout": 2, "max_concurrency": null}}')
    assert opts.tool_bounds == {"slow": {"timeout": 2.0, "max_concurrency": None}}
    for bad, message in (({"slow": {"timeout": -1}}, "slow.timeout must be a positive"),
                         ({"slow": {"timeout": "2"}}, "slow.timeout must be a positive"),
                         ({"slow": {"max_concurrency": 1.5}}, "slow.max_concurrency must be"),
                         ({"slow": {"retries": 1}}, "slow.retries unknown field"),
                         (["slow"], "must map tool names")):
        with pytest.raises(OptionError) as info:
            opts.update({"tool_bounds": bad})
        assert message in info.value.errors["tool_bounds"]
    assert opts.tool_bounds == {"slow": {"timeout": 2.0, "max_concurrency": None}}


# -- OptionSpec.coerce, every kind from both sources: the outcomes recorded before the split -----

#: One option of each kind and nullability.
COERCED = ("max_sessions", "max_request_bytes", "session_idle_timeout",
           "server_to_client_request_timeout", "stateless", "allowed_hosts",
           "protocol_versions", "tool_bounds")
#: Values that reach each branch of the rules: text as a command line gives it, Python
#: values, and what JSON decodes to (``from_json=True``).
COERCE_VALUES: tuple[tuple[str, Any], ...] = (*((repr(v), v) for v in (
    None, "none", "NULL", " off ", "", " 7 ", "1.5", "-1", "0", "abc", "true", "Yes", "on",
    "1", "no", "false", "maybe", "inf", "nan", "2.5", True, False, 0, -1, 1, 5, 5.0, 5.5,
    -2.0, 2**53 - 1, 2**53, 1e300, math.inf, math.nan, "A.example, b.example:8080 ,,",
    ["A.example"], ("x",), [1], [], 5j, "2025-03-26,2026-07-28", ["2025-11-25", "2025-11-25"],
    ["1999-01-01"], '{"t": {"timeout": 2}}', "[1]", "{bad", {}, {"t": {"timeout": 2}},
    {"t": {"timeout": "2"}}, {"t": {"max_concurrency": 1.5}}, {"t": {"max_concurrency": 3.0}},
    {"t": {"retries": 1}}, {"t": {}}, {1: {}}, {"t": 1},
)), ("10**400", 10**400), ("-10**400", -(10**400)),
    ("{'t': {'timeout': 10**400}}", {"t": {"timeout": 10**400}}))
RECORDED_COERCIONS = Path(__file__).with_name("option_coercions.json")


def coercion(name: str, value: Any, from_json: bool) -> str:
    """What ``coerce`` makes of ``value``: the result's type and repr, or the error."""
    try:
        result = SPECS_BY_NAME[name].coerce(value, from_json=from_json)
    except Exception as exc:  # what it raises is what is recorded
        return f"{type(exc).__name__}: {exc}"
    return f"{type(result).__name__} {result!r}"


def coercions() -> dict[str, str]:
    return {f"{name} | {label} | {'json' if from_json else 'python'}":
            coercion(name, value, from_json)
            for name in COERCED for label, value in COERCE_VALUES
            for from_json in (False, True)}


def test_coerce_gives_the_recorded_outcome_for_every_kind_value_and_source() -> None:
    """A characterisation of ``coerce`` (results, their types, every message), recorded
    from the code before it was split by kind: a change to any rule shows here.  Record
    again only for a change of behaviour, and say so in the commit."""
    recorded = json.loads(RECORDED_COERCIONS.read_text(encoding="utf-8"))
    actual = coercions()
    changed = {k: (recorded.get(k), v) for k, v in actual.items() if recorded.get(k) != v}
    assert not changed and set(recorded) == set(actual), changed


def message(name: str, value: Any, from_json: bool = False) -> str:
    with pytest.raises(ValueError) as info:
        SPECS_BY_NAME[name].coerce(value, from_json=from_json)
    return str(info.value)


def test_from_json_reads_no_text_and_takes_whole_floats_as_integers() -> None:
    ints = SPECS_BY_NAME["max_sessions"]
    assert ints.coerce(5.0, from_json=True) == 5 and type(ints.coerce(5.0, from_json=True)) is int
    for name, text in (("max_sessions", "5"), ("max_sessions", "none")):
        assert message(name, text, True) == "must be a positive integer or none"
    assert message("session_idle_timeout", "2.5", True) == \
        "must be a positive number of seconds or none"
    assert message("stateless", "true", True) == "must be true or false"
    assert message("tool_bounds", '{"t": {}}', True) == \
        "must map tool names to {timeout, max_concurrency} objects"
    assert message("max_sessions", 2**53, True) == f"must be at most {2**53 - 1}"
    assert ints.coerce(2**53) == 2**53  # a Python caller is not bound by JSON's integers
    # lists are lists either way
    assert SPECS_BY_NAME["allowed_hosts"].coerce("A, b", from_json=True) == ("a", "b")


def test_seconds_refuse_what_no_float_holds() -> None:
    for bad in (10**400, math.inf, math.nan, True, "2"):
        assert message("session_idle_timeout", bad, isinstance(bad, str)) == \
            "must be a positive number of seconds or none"
    assert message("tool_bounds", {"t": {"timeout": 10**400}}) == \
        "t.timeout must be a positive number of seconds or null"


def test_text_that_is_no_number_or_json_is_named() -> None:
    assert message("max_sessions", "abc") == "'abc' is not a number"
    assert message("max_request_bytes", "none") == "'none' is not a number"
    assert message("tool_bounds", "{bad") == "'{bad' is not a JSON object"
    assert SPECS_BY_NAME["tool_bounds"].coerce(" none ") == {}
