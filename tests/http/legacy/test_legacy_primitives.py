"""Tools, resources and prompts in the legacy era: errors, pagination, ``resources/subscribe``."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import (
    SECRET,
    example_server,
    final,
    init_msg,
    probe_server,
    rpc,
    running,
)

from tornado_mcp import Server

# -- tools, resources, prompts --------------------------------------------------------------------

async def test_tool_argument_violation_is_an_is_error_result() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {"text": 5}}),
                           session=sid)
        result = final(r)["result"]
        assert result["isError"] is True
        assert "Invalid arguments for tool echo" in result["content"][0]["text"]
        missing = await srv.post(rpc("tools/call", {"name": "echo", "arguments": {}}, 2),
                                 session=sid)
        assert final(missing)["result"]["isError"] is True


async def test_unknown_tool_is_invalid_params() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "nope"}), session=sid)
        err = final(r)["error"]
        assert err["code"] == -32602 and "nope" in err["message"]


async def test_unknown_method_is_method_not_found() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("no/such/method"), session=sid)
        assert r.status == 200 and final(r)["error"]["code"] == -32601


async def test_handler_exception_is_internal_error_without_its_text() -> None:
    server, _ = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "boom"}), session=sid)
        err = final(r)["error"]
        assert r.status == 200 and err["code"] == -32603
        assert err["message"] == "Internal error calling tool boom"
        assert SECRET.encode() not in r.body and b"Traceback" not in r.body
        assert b"RuntimeError" not in r.body


def paged_server() -> Server:
    server = Server("paged", page_size=2)
    for i in range(5):
        server.add_tool(lambda: "x", f"tool{i}", description="t")
        server.add_prompt(lambda: "p", f"prompt{i}", description="p")
        server.add_resource(lambda: "r", f"test://res/{i}", f"res{i}")
        server.add_resource_template(lambda i: "t", f"test://tpl{i}/{{i}}", f"tpl{i}")
    return server


@pytest.mark.parametrize(("method", "key", "name_key"), [
    ("tools/list", "tools", "name"), ("prompts/list", "prompts", "name"),
    ("resources/list", "resources", "uri"),
    ("resources/templates/list", "resourceTemplates", "uriTemplate")])
async def test_pagination_walks_every_page(method: str, key: str, name_key: str) -> None:
    async with running(paged_server()) as srv:
        sid = await srv.initialize()
        seen: list[str] = []
        sizes: list[int] = []
        cursor: str | None = None
        for n in range(10):
            params = {"cursor": cursor} if cursor is not None else {}
            result = final(await srv.post(rpc(method, params, n), session=sid))["result"]
            sizes.append(len(result[key]))
            seen += [item[name_key] for item in result[key]]
            cursor = result.get("nextCursor")
            if cursor is None:
                break
        assert sizes == [2, 2, 1]
        assert len(seen) == 5 and len(set(seen)) == 5


@pytest.mark.parametrize("cursor", ["garbage!", "dG1jcDo5OTk", 12, "x" * 100])
async def test_bad_cursor_is_invalid_params(cursor: Any) -> None:
    async with running(paged_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/list", {"cursor": cursor}), session=sid)
        assert final(r)["error"]["code"] == -32602


async def test_resource_not_found_is_32002_with_the_uri() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("resources/read", {"uri": "test://missing"}), session=sid)
        err = final(r)["error"]
        assert err["code"] == -32002 and err["data"] == {"uri": "test://missing"}


def subscribing_server(calls: list[str], returned: Any) -> Server:
    server = Server("subs")

    @server.resource("test://a")
    def a() -> str:
        return "a"

    @server.on_subscribe
    def on_subscribe(uri: str) -> Any:
        calls.append(uri)
        return returned

    return server


async def test_subscribe_without_uri_is_invalid_params_and_skips_the_handler() -> None:
    calls: list[str] = []
    async with running(subscribing_server(calls, None)) as srv:
        sid = await srv.initialize()
        for params in ({}, {"uri": 5}, {"uri": None}):
            r = await srv.post(rpc("resources/subscribe", params), session=sid)
            assert final(r)["error"]["code"] == -32602
        assert calls == []
        ok = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(ok)["result"] == {} and calls == ["test://a"]


async def test_subscribe_handler_meta_passes_through_and_nothing_else() -> None:
    calls: list[str] = []
    returned = {"_meta": {"example.com/note": "kept"}, "extra": "dropped"}
    async with running(subscribing_server(calls, returned)) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(r)["result"] == {"_meta": {"example.com/note": "kept"}}


async def test_subscribe_capability_only_with_a_subscribe_handler() -> None:
    plain = Server("plain")
    plain.add_resource(lambda: "a", "test://a", "a")
    async with running(plain) as srv:
        r = await srv.post(init_msg())
        caps = r.json["result"]["capabilities"]
        assert "resources" in caps and "subscribe" not in caps["resources"]
        sid = r.headers["Mcp-Session-Id"]
        sub = await srv.post(rpc("resources/subscribe", {"uri": "test://a"}), session=sid)
        assert final(sub)["error"]["code"] == -32601
    async with running(subscribing_server([], None)) as srv:
        r = await srv.post(init_msg())
        assert r.json["result"]["capabilities"]["resources"]["subscribe"] is True
