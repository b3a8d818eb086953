"""MCP Apps (``io.modelcontextprotocol/ui``) over real HTTP: the view resource, the tool's
``_meta.ui``, UI metadata only for clients that declare the extension with the MIME type
(in both eras), and refusals of what cannot be served."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp_http import example_server, legacy_call, modern_meta, result_of, running

from tornado_mcp import Server
from tornado_mcp.extensions import apps
from tornado_mcp.extensions.apps import APP_MIME_TYPE, UI_EXTENSION, AppError

pytestmark = pytest.mark.timeout(60)

UI_CAPS = {"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}}
VIEW = "ui://tornado-mcp/forecast"
HTML = "<!DOCTYPE html><html><body>view</body></html>"


def app_server() -> Server:
    server = Server("apps")
    server.app("ui://shop/cart", HTML, "cart", csp={"connectDomains": ["https://api.shop.test"],
                                                     "resourceDomains": ["https://*.cdn.test"]},
               permissions=["clipboardWrite"], prefers_border=False)

    @server.tool(ui="ui://shop/cart")
    def show_cart() -> str:
        return "cart"

    @server.tool(ui={"resourceUri": "ui://shop/cart", "visibility": ["app"]})
    def add_to_cart(item: str) -> str:
        return f"added {item}"

    @server.tool()
    def plain() -> str:
        return "plain"

    return server


def tools_by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in result["tools"]}


async def test_a_ui_client_sees_the_view_and_the_tool_metadata() -> None:
    async with running(app_server()) as srv:
        sid = await srv.initialize(capabilities=UI_CAPS)
        init_caps = srv.server.capabilities
        assert init_caps["extensions"][UI_EXTENSION] == {}
        tools = tools_by_name((await legacy_call(srv, sid, "tools/list", {}))["result"])
        assert tools["show_cart"]["_meta"] == {"ui": {"resourceUri": "ui://shop/cart"}}
        assert tools["add_to_cart"]["_meta"]["ui"]["visibility"] == ["app"]
        assert "_meta" not in tools["plain"]
        listed = (await legacy_call(srv, sid, "resources/list", {}))["result"]["resources"]
        meta_ui = {"csp": {"connectDomains": ["https://api.shop.test"],
                           "resourceDomains": ["https://*.cdn.test"]},
                   "permissions": {"clipboardWrite": {}}, "prefersBorder": False}
        assert listed == [{"uri": "ui://shop/cart", "name": "cart", "mimeType": APP_MIME_TYPE,
                           "_meta": {"ui": meta_ui}}]
        read = (await legacy_call(srv, sid, "resources/read", {"uri": "ui://shop/cart"}))
        assert read["result"]["contents"] == [{"uri": "ui://shop/cart", "mimeType": APP_MIME_TYPE,
                                               "text": HTML, "_meta": {"ui": meta_ui}}]


@pytest.mark.parametrize("caps", [
    {},
    {"extensions": {UI_EXTENSION: {}}},
    {"extensions": {UI_EXTENSION: {"mimeTypes": ["text/html"]}}},
])
async def test_other_clients_get_no_ui_metadata_nor_app_only_tools(caps: dict[str, Any]) -> None:
    async with running(app_server()) as srv:
        sid = await srv.initialize(capabilities=caps)
        tools = tools_by_name((await legacy_call(srv, sid, "tools/list", {}))["result"])
        assert sorted(tools) == ["plain", "show_cart"]
        assert "_meta" not in tools["show_cart"]
        listed = (await legacy_call(srv, sid, "resources/list", {}))["result"]["resources"]
        assert listed == []
        called = await legacy_call(srv, sid, "tools/call", {"name": "show_cart"})
        assert called["result"]["content"] == [{"type": "text", "text": "cart"}]


async def test_each_kind_of_client_keeps_its_own_cached_list_in_the_modern_era() -> None:
    async with running(app_server()) as srv:
        for _ in range(2):
            ui = result_of(await srv.modern("tools/list", meta=modern_meta(UI_CAPS)))
            plain = result_of(await srv.modern("tools/list", meta=modern_meta({})))
            assert "add_to_cart" in tools_by_name(ui)
            assert "_meta" in tools_by_name(ui)["show_cart"]
            assert sorted(tools_by_name(plain)) == ["plain", "show_cart"]
            assert "_meta" not in tools_by_name(plain)["show_cart"]


async def test_a_tool_added_later_reaches_both_kinds_of_client() -> None:
    server = app_server()
    async with running(server) as srv:
        result_of(await srv.modern("tools/list", meta=modern_meta({})))
        server.add_tool(lambda: "late", "late", ui="ui://shop/cart")
        plain = tools_by_name(result_of(await srv.modern("tools/list", meta=modern_meta({}))))
        ui = tools_by_name(result_of(await srv.modern("tools/list",
                                                      meta=modern_meta(UI_CAPS))))
        assert "_meta" not in plain["late"]
        assert ui["late"]["_meta"] == {"ui": {"resourceUri": "ui://shop/cart"}}


async def test_the_example_forecast_tool_returns_structured_content() -> None:
    async with running(example_server()) as srv:
        listed = tools_by_name(result_of(await srv.modern("tools/list",
                                                          meta=modern_meta(UI_CAPS))))
        assert listed["show_forecast"]["_meta"] == {"ui": {"resourceUri": VIEW}}
        called = result_of(await srv.modern("tools/call", {"name": "show_forecast",
                                                           "arguments": {"city": "Oslo"}}))
        assert called["structuredContent"]["city"] == "Oslo"
        assert len(called["structuredContent"]["days"]) == 3
        read = result_of(await srv.modern("resources/read", {"uri": VIEW}))
        (content,) = read["contents"]
        assert content["mimeType"] == APP_MIME_TYPE
        assert "ui/notifications/tool-result" in content["text"]


# -- refusals: nothing served or stored --------------------------------------------------------
def test_a_tool_naming_an_unregistered_view_is_refused() -> None:
    server = Server("s")
    with pytest.raises(AppError, match="no view is registered"):
        server.add_tool(lambda: "x", "orphan", ui="ui://nowhere/view")
    assert server.get_tool("orphan") is None
    assert "extensions" not in server.capabilities


@pytest.mark.parametrize("ui, message", [
    ({"resourceUri": "ui://v/x", "visibility": ["robot"]}, "visibility"),
    ({"resourceUri": "ui://v/x", "visibility": []}, "visibility"),
    ({"resourceUri": "ui://v/x", "visibility": "app"}, "visibility"),
    ({"resourceUri": "ui://v/x", "size": 3}, "resourceUri and visibility"),
])
def test_a_bad_ui_setting_is_refused(ui: dict[str, Any], message: str) -> None:
    server = Server("s")
    server.app("ui://v/x", HTML)
    with pytest.raises(AppError, match=message):
        server.add_tool(lambda: "x", "t", ui=ui)
    assert server.get_tool("t") is None


@pytest.mark.parametrize("kwargs, message", [
    ({"uri": "https://not-ui/x"}, "ui:// URI"),
    ({"csp": {"connectDomains": ["https://a.test; script-src *"]}}, "not an origin"),
    ({"csp": {"connectDomains": ["*"]}}, "not an origin"),
    ({"csp": {"scriptDomains": ["https://a.test"]}}, "csp key"),
    ({"permissions": ["usb"]}, "permission"),
])
def test_a_bad_view_is_refused(kwargs: dict[str, Any], message: str) -> None:
    server = Server("s")
    uri = kwargs.pop("uri", "ui://v/x")
    with pytest.raises(AppError, match=message):
        server.app(uri, HTML, **kwargs)
    assert server.registry.resources == {} and "extensions" not in server.capabilities


def test_a_view_over_a_plain_resource_is_refused() -> None:
    server = Server("s")
    server.add_resource(lambda: "x", "ui://v/x")
    with pytest.raises(AppError, match="plain resource"):
        server.app("ui://v/x", HTML)


# -- bounds -----------------------------------------------------------------------------------
def test_view_html_at_and_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apps, "MAX_VIEW_BYTES", 100)
    server = Server("s")
    server.app("ui://v/at", "é" * 50)  # 100 bytes in UTF-8
    with pytest.raises(AppError, match="101 bytes, over the limit of 100"):
        server.app("ui://v/over", "é" * 50 + "x")
    assert list(server.apps.views) == ["ui://v/at"]


async def test_a_view_file_grown_over_the_limit_is_not_served(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apps, "MAX_VIEW_BYTES", 100)
    page = tmp_path / "view.html"
    page.write_text("x" * 100)
    server = Server("s")
    server.app("ui://v/file", page)
    async with running(server) as srv:
        at = result_of(await srv.modern("resources/read", {"uri": "ui://v/file"}))
        assert at["contents"][0]["text"] == "x" * 100
        page.write_text("x" * 101)
        over = (await srv.modern("resources/read", {"uri": "ui://v/file"})).messages[-1]
        assert over["error"]["code"] == -32603 and "x" * 101 not in str(over)


def test_views_per_server_at_and_over_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(apps, "MAX_VIEWS", 2)
    server = Server("s")
    server.app("ui://v/1", HTML)
    server.app("ui://v/2", HTML)
    with pytest.raises(AppError, match="at most 2 views"):
        server.app("ui://v/3", HTML)
    assert sorted(server.registry.resources) == ["ui://v/1", "ui://v/2"]


def test_the_old_import_path_names_the_same_objects() -> None:
    """``tornado_mcp.server.apps``, where MCP Apps lived before ``tornado_mcp.extensions``."""
    from tornado_mcp.server import apps as old
    assert old.__all__ == apps.__all__
    assert all(getattr(old, name) is getattr(apps, name) for name in apps.__all__)
