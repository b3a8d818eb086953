"""2026-07-28 results: ``resultType``/``serverInfo`` stamping, cache hints, per-era
resource-not-found, and ``server/discover``.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import (
    LEGACY,
    MODERN,
    Running,
    error_of,
    modern_meta,
    result_of,
    running,
)

from tornado_mcp import Server

pytestmark = pytest.mark.timeout(60)

SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"


CONFORMANCE_INFO = {"name": "tornado-mcp-conformance", "version": "0.1.0"}


# -- result stamping ------------------------------------------------------------------------------

STAMPED_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://static-text"}),
    ("resources/read", {"uri": "test://template/7/data"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                             "argument": {"name": "arg1", "value": "pa"}}),
]


CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list", "resources/read"}


@pytest.mark.parametrize(("method", "params"), STAMPED_CALLS,
                         ids=[f"{m}-{i}" for i, (m, _) in enumerate(STAMPED_CALLS)])
async def test_every_result_is_stamped(srv: Running, method: str,
                                       params: dict[str, Any]) -> None:
    result = result_of(await srv.modern(method, params))
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "serverInfo" not in result
    if method in CACHEABLE:
        assert result["ttlMs"] == 0
        assert result["cacheScope"] == "private"
    else:
        assert "ttlMs" not in result and "cacheScope" not in result


async def test_custom_method_and_input_required_results_are_stamped(srv: Running) -> None:
    r = await srv.modern("tools/call", {"name": "test_input_required_result_elicitation",
                                        "arguments": {}},
                         meta=modern_meta({"elicitation": {}}))
    result = result_of(r)
    assert result["resultType"] == "input_required"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "ttlMs" not in result
    server = Server("custom")

    @server.method("x/empty")
    def empty(params: dict[str, Any]) -> None:
        return None

    async with running(server) as s2:
        assert result_of(await s2.modern("x/empty")) == {
            "resultType": "complete", "_meta": {SERVER_INFO_KEY: {"name": "custom",
                                                                  "version": "0.1.0"}}}


async def test_cache_hints_server_level_and_per_resource() -> None:
    server = Server("cachey", ttl_ms=60_000, cache_scope="public", instructions="hi")

    @server.tool()
    def t() -> str:
        return "t"

    @server.prompt()
    def p() -> str:
        return "p"

    @server.resource("test://default")
    def default() -> str:
        return "d"

    @server.resource("test://special", ttl_ms=5, cache_scope="private")
    def special() -> str:
        return "s"

    @server.resource("test://only-ttl", ttl_ms=1234)
    def only_ttl() -> str:
        return "o"

    @server.resource("test://tpl/{n}", ttl_ms=77, cache_scope="private")
    def tpl(n: str) -> str:
        return n

    async with running(server) as srv:
        for method in ("server/discover", "tools/list", "prompts/list", "resources/list",
                       "resources/templates/list"):
            result = result_of(await srv.modern(method))
            assert (result["ttlMs"], result["cacheScope"]) == (60_000, "public"), method
        expected = {"test://default": (60_000, "public"), "test://special": (5, "private"),
                    "test://only-ttl": (1234, "public"), "test://tpl/9": (77, "private")}
        for uri, hints in expected.items():
            result = result_of(await srv.modern("resources/read", {"uri": uri}))
            assert (result["ttlMs"], result["cacheScope"]) == hints, uri
        # Legacy results carry none of it.
        sid = await srv.initialize()
        legacy = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                                 "params": {"uri": "test://special"}}, session=sid)
        legacy_result = result_of(legacy)
        assert "ttlMs" not in legacy_result and "resultType" not in legacy_result


def test_cache_scope_is_validated() -> None:
    with pytest.raises(ValueError):
        Server("bad", cache_scope="shared")


async def test_resource_not_found_per_era(srv: Running) -> None:
    r = await srv.modern("resources/read", {"uri": "test://nowhere"}, request_id=3)
    assert r.status == 400
    err = error_of(r)
    assert err["code"] == -32602
    assert err["data"] == {"uri": "test://nowhere"}
    sid = await srv.initialize()
    legacy = await srv.post({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                             "params": {"uri": "test://nowhere"}}, session=sid)
    assert legacy.status == 200
    legacy_err = legacy.messages[-1]["error"]
    assert legacy_err["code"] == -32002
    assert legacy_err["data"] == {"uri": "test://nowhere"}


# -- server/discover ------------------------------------------------------------------------------

async def test_discover_on_the_modern_path(srv: Running) -> None:
    r = await srv.modern("server/discover", request_id="d-1")
    assert r.status == 200 and r.content_type.startswith("application/json")
    result = result_of(r)
    assert result["supportedVersions"] == [MODERN]
    assert result["instructions"] == "Conformance fixtures for tornado-mcp."
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"listChanged": True, "subscribe": True}
    assert "serverInfo" not in result
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert len(srv.transport.sessions) == 0


@pytest.mark.parametrize("version", [None, LEGACY, "2025-03-26"])
async def test_discover_on_the_legacy_path_needs_no_session(srv: Running,
                                                            version: str | None) -> None:
    r = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "server/discover"},
                       version=version)
    assert r.status == 200, r.body
    assert r.content_type.startswith("application/json")
    result = r.json["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO_KEY] == CONFORMANCE_INFO
    assert "Mcp-Session-Id" not in r.headers
    assert len(srv.transport.sessions) == 0


async def test_discover_without_instructions_omits_them() -> None:
    async with running(Server("plain")) as srv:
        result = result_of(await srv.modern("server/discover"))
        assert "instructions" not in result
        assert result["capabilities"] == {"logging": {}}
