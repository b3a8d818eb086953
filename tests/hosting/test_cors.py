"""CORS over real HTTP: the preflight, the headers of actual responses, how CORS and the
DNS-rebinding check agree, the ``Mcp-Param-*`` echo bound, and the command-line flag.
"""

from __future__ import annotations

import urllib.request

import pytest
from conftest import ServerFactory
from mcp_http import assert_refused, example_server, init_msg, running

from tornado_mcp.transport.cors import ALLOWED_HEADERS, MAX_PARAM_HEADERS

PAGE = "http://app.example:8080"
OTHER = "http://other.example"


def preflight(origin: str, method: str = "POST", request_headers: str | None = None
              ) -> dict[str, str]:
    headers = {"Origin": origin, "Access-Control-Request-Method": method}
    if request_headers is not None:
        headers["Access-Control-Request-Headers"] = request_headers
    return headers


async def test_preflight_from_an_allowed_origin_is_answered() -> None:
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        r = await srv.request("OPTIONS", None, preflight(
            PAGE, request_headers="content-type, mcp-session-id, mcp-param-region"))
        assert r.status == 204 and r.body == b""
        assert r.headers["Access-Control-Allow-Origin"] == PAGE
        assert r.headers["Access-Control-Allow-Methods"] == "GET, POST, DELETE"
        assert r.headers["Access-Control-Allow-Headers"] == (
            "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, "
            "Mcp-Method, Mcp-Name, Last-Event-ID, DPoP, mcp-param-region")
        assert r.headers["Access-Control-Max-Age"] == "600"
        assert r.headers["Vary"] == "Origin"
        assert "Content-Type" not in r.headers


async def test_actual_responses_expose_the_mcp_headers_to_the_page() -> None:
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        r = await srv.post(init_msg(), headers={"Origin": PAGE})
        assert r.status == 200
        assert r.headers["Access-Control-Allow-Origin"] == PAGE
        assert r.headers["Access-Control-Expose-Headers"] == (
            "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, DPoP-Nonce")
        assert r.headers["Vary"] == "Origin"
        # An error answer (here 406) carries them too, so the page can read the error.
        bad = await srv.post(init_msg(), headers={"Origin": PAGE, "Accept": "text/html"})
        assert bad.status == 406
        assert bad.headers["Access-Control-Allow-Origin"] == PAGE


async def test_a_cors_origin_passes_the_origin_check_but_not_a_foreign_host() -> None:
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        assert (await srv.post(init_msg(), headers={"Origin": PAGE})).status == 200
        r = await srv.post(init_msg(), headers={"Origin": PAGE, "Host": "evil.example"})
        assert_refused(r, 403, -32600, "Forbidden: Invalid Host header")
        assert "Access-Control-Allow-Origin" in r.headers  # readable, still refused


async def test_preflight_from_another_origin_is_refused() -> None:
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        r = await srv.request("OPTIONS", None, preflight(OTHER))
        assert_refused(r, 403, -32600, "Forbidden: Invalid Origin header")
        assert "Access-Control-Allow-Origin" not in r.headers
        # Without rebinding protection the CORS check still refuses it.
    async with running(example_server(), cors_allowed_origins=[PAGE],
                       dns_rebinding_protection=False) as srv:
        r = await srv.request("OPTIONS", None, preflight(OTHER))
        assert_refused(r, 403, -32600, "Forbidden: Origin not allowed for CORS")
        assert "Access-Control-Allow-Origin" not in r.headers
        plain = await srv.post(init_msg(), headers={"Origin": OTHER})
        assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers


async def test_allowed_origins_admits_without_cors() -> None:
    async with running(example_server(), allowed_origins=[PAGE]) as srv:
        r = await srv.post(init_msg(), headers={"Origin": PAGE})
        assert r.status == 200 and "Access-Control-Allow-Origin" not in r.headers
        assert "Vary" not in r.headers
        assert_refused(await srv.request("OPTIONS", None, preflight(PAGE)), 405, -32600,
                       "Method not allowed")


@pytest.mark.parametrize("headers", [{}, {"Origin": PAGE},
                                     {"Access-Control-Request-Method": "POST"}],
                         ids=["bare", "no-request-method", "no-origin"])
async def test_options_that_is_not_a_preflight_is_still_405(headers: dict[str, str]) -> None:
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        assert_refused(await srv.request("OPTIONS", None, headers), 405, -32600,
                       "Method not allowed")


@pytest.mark.parametrize("extra", [0, 1], ids=["at-bound", "one-over"])
async def test_param_headers_echoed_up_to_the_bound(extra: int) -> None:
    names = [f"mcp-param-p{i}" for i in range(MAX_PARAM_HEADERS + extra)]
    async with running(example_server(), cors_allowed_origins=[PAGE]) as srv:
        r = await srv.request("OPTIONS", None, preflight(
            PAGE, request_headers=", ".join([*names, "x-not-mcp", "mcp-param-bad name"])))
        assert r.status == 204
        echoed = r.headers["Access-Control-Allow-Headers"].split(", ")
        assert echoed == [*ALLOWED_HEADERS, *names[:MAX_PARAM_HEADERS]]


def test_cors_flag_of_the_example_server(server_factory: ServerFactory) -> None:
    srv = server_factory(["examples/conformance_server.py", "--no-admin",
                          "--cors-allowed-origins", f"{PAGE}, {OTHER}"])
    for origin in (PAGE, OTHER):
        req = urllib.request.Request(srv.url, method="OPTIONS", headers=preflight(origin))
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 204
            assert resp.headers["Access-Control-Allow-Origin"] == origin
