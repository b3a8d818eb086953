"""The example app whose cookie login protects its MCP endpoint: log in through its form
(with its XSRF token), then call tools as that user; no cookie, a forged cookie or a wrong
password get no further than 401."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import tornado.httpserver
import tornado.netutil
from mcp_http import MODERN, modern_meta

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[2]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("host_auth_app",
                                                  ROOT / "examples" / "host_auth_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.asynccontextmanager
async def app_running() -> AsyncIterator[tuple[ModuleType, str]]:
    example = load_example()
    http = tornado.httpserver.HTTPServer(example.make_app("test-cookie-secret"))
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
    http.add_sockets(sockets)
    try:
        yield example, f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    finally:
        http.stop()
        await http.close_all_connections()


async def log_in(client: httpx.AsyncClient, base: str, name: str, password: str) -> int:
    form = await client.get(base + "/login")
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form.text)
    assert xsrf is not None
    r = await client.post(base + "/login", data={"_xsrf": xsrf.group(1), "name": name,
                                                 "password": password})
    return r.status_code


async def call(client: httpx.AsyncClient, base: str, name: str,
               arguments: dict[str, Any] | None = None) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}, "_meta": modern_meta()}}
    return await client.post(base + "/mcp", content=json.dumps(body), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})


async def test_the_apps_login_protects_mcp_and_names_the_caller() -> None:
    async with app_running() as (example, base), httpx.AsyncClient(timeout=10) as ada:
        refused = await call(ada, base, "whoami")
        assert refused.status_code == 401
        assert refused.json()["error"]["message"] == "Unauthorized: authentication required"
        assert await log_in(ada, base, "ada", "wrong") == 401
        assert (await call(ada, base, "whoami")).status_code == 401
        assert await log_in(ada, base, "ada", "lovelace") == 302  # redirected home
        me = await call(ada, base, "whoami")
        assert me.status_code == 200
        assert me.json()["result"]["structuredContent"] == {
            "subject": "ada", "scopes": ["notes"], "method": "cookie", "authenticated": True}
        await call(ada, base, "add_note", {"text": "buy milk"})
        notes = await call(ada, base, "my_notes")
        assert notes.json()["result"]["structuredContent"] == {"result": ["buy milk"]}
        # ada is no admin: the admin tool is hidden from her list and refused
        listed = await ada.post(base + "/mcp", content=json.dumps({
            "jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": modern_meta()}}), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
        names = {t["name"] for t in listed.json()["result"]["tools"]}
        assert names == {"whoami", "add_note", "my_notes"}
        forbidden = await call(ada, base, "delete_all_notes")  # hidden: as if unknown
        assert forbidden.status_code == 400
        assert forbidden.json()["error"]["message"] == "Unknown tool: delete_all_notes"
        async with httpx.AsyncClient(timeout=10) as root:
            assert await log_in(root, base, "root", "correct horse") == 302
            added = await call(root, base, "add_note", {"text": "audit"})
            assert added.json()["result"]["content"][0]["text"] == "root has 1 note(s)"
            deleted = await call(root, base, "delete_all_notes")
            assert deleted.json()["result"]["content"][0]["text"] == "deleted"
        assert example.NOTES == {}
        assert (await call(ada, base, "my_notes")).json()["result"]["structuredContent"] == {
            "result": []}
        # a forged cookie is no login
        async with httpx.AsyncClient(timeout=10, cookies={"user": "root"}) as forger:
            assert (await call(forger, base, "whoami")).status_code == 401


async def test_the_official_client_gets_in_with_the_apps_login_cookie() -> None:
    """docs/auth.md's recipe: log in with httpx, hand that client to the SDK."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with app_running() as (_example, base):
        http = httpx.AsyncClient(timeout=10)
        async with http:
            await http.get(f"{base}/login")  # exactly as docs/auth.md logs in
            await http.post(f"{base}/login", data={"name": "ada", "password": "lovelace",
                                                   "_xsrf": http.cookies["_xsrf"]})
            async with Client(streamable_http_client(base + "/mcp", http_client=http)) as client:
                who = await client.call_tool("whoami", {})
                assert who.structured_content == {
                    "subject": "ada", "scopes": ["notes"], "method": "cookie",
                    "authenticated": True}
        async with httpx.AsyncClient(timeout=10) as stranger:  # without the cookie: refused
            with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 its own way
                async with Client(streamable_http_client(base + "/mcp", http_client=stranger)
                                  ) as client:
                    await client.call_tool("whoami", {})
