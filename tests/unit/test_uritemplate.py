"""URI templates (RFC 6570 level 1 plus ``{+var}``): matching, expansion, and the length
bound that keeps matching linear."""

from __future__ import annotations

import time

import pytest

from tornado_mcp.protocol.uritemplate import MAX_URI_LENGTH, UriTemplate


def test_variables_in_order() -> None:
    assert UriTemplate("test://{a}/{+b}/{c.d}").variables == ["a", "b", "c.d"]
    assert UriTemplate("test://static").variables == []


@pytest.mark.parametrize(("template", "uri", "expected"), [
    ("test://r/{n}", "test://r/42", {"n": "42"}),
    ("test://r/{n}", "test://r/a%20b", {"n": "a b"}),
    ("users://{org}.{user}", "users://acme.bob", {"org": "acme", "user": "bob"}),
    ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
    ("file:///{+dir}/{+name}.txt", "file:///a/b/c.txt", {"dir": "a", "name": "b/c"}),
    ("test://{a}/x", "test://1/x", {"a": "1"}),
    ("test://static", "test://static", {}),
])
def test_match_recovers_the_variables(template: str, uri: str, expected: dict[str, str]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(("template", "uri"), [
    ("test://r/{n}", "test://r/"),
    ("test://r/{n}", "test://r/a/b"),
    ("test://r/{n}", "test://r/a?q"),
    ("test://r/{n}", "test://r/a#f"),
    ("test://r/{n}", "test://s/1"),
    ("test://r/{n}", "prefix-test://r/1"),
    ("test://static", "test://static/more"),
])
def test_match_refuses(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_regex_characters_in_the_template_are_literal() -> None:
    tpl = UriTemplate("test://a.b/{n}+(x)")
    assert tpl.match("test://a.b/1+(x)") == {"n": "1"}
    assert tpl.match("test://aXb/1+(x)") is None


def test_variable_names_that_are_not_identifiers() -> None:
    assert UriTemplate("test://{a.b}/{c%20}").match("test://1/2") == {"a.b": "1", "c%20": "2"}


def test_expand_quotes_simple_variables_fully_and_reserved_ones_not() -> None:
    assert UriTemplate("test://r/{n}").expand(n="a b/c") == "test://r/a%20b%2Fc"
    assert UriTemplate("file:///{+path}").expand(path="a b/c?d") == "file:///a%20b/c?d"
    assert UriTemplate("test://{a}-{b}").expand(a=1, b="x") == "test://1-x"  # type: ignore[arg-type]


def test_expand_then_match_round_trips() -> None:
    tpl = UriTemplate("test://r/{n}")
    assert tpl.match(tpl.expand(n="résumé 1")) == {"n": "résumé 1"}


def test_template_matches_a_uri_of_2048_characters_and_not_2049() -> None:
    tpl = UriTemplate("test://r/{n}")
    prefix = "test://r/"
    at = prefix + "x" * (MAX_URI_LENGTH - len(prefix))
    assert MAX_URI_LENGTH == 2048 and len(at) == MAX_URI_LENGTH
    assert tpl.match(at) == {"n": "x" * (MAX_URI_LENGTH - len(prefix))}
    assert tpl.match(at + "x") is None


def test_uri_template_match_is_not_quadratic() -> None:
    """Templates that need backtracking, against long URIs that almost match, answer fast."""
    cases = [("users://{org}.{user}", "users://" + "a." * 20_000 + "/"),
             ("file:///{+dir}/{+name}.txt", "file:///" + "a/" * 20_000 + "x")]
    for template, uri in cases:
        tpl = UriTemplate(template)
        start = time.perf_counter()
        assert tpl.match(uri) is None
        assert time.perf_counter() - start < 0.5, template
