"""CORS from a real page: headless Chromium loads a page from one loopback origin and
calls the MCP endpoint on another with ``fetch``.  From an allowed origin the page opens
a session, reads ``Mcp-Session-Id``, calls a tool in both eras; from any other origin
the browser's preflight is refused and the request never reaches the server.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import tornado.httpserver
import tornado.netutil
import tornado.web
from browser_support import chromium
from mcp_http import example_server, running, serving

playwright_api = pytest.importorskip("playwright.async_api")

pytestmark = pytest.mark.browser

CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu",
                 "--disable-background-networking"]

PAGE = """<!doctype html><title>client</title><script>
function messages(text) {  // the JSON of an SSE body, or of a JSON body
  if (!text.startsWith("event:") && !text.startsWith("data:")) return [JSON.parse(text)];
  return text.split("\\n").filter(l => l.startsWith("data:")).map(l => JSON.parse(l.slice(5)));
}
async function legacy(url) {
  const base = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"};
  const init = await fetch(url, {method: "POST", headers: base, body: JSON.stringify(
    {jsonrpc: "2.0", id: 1, method: "initialize", params: {protocolVersion: "2025-11-25",
     capabilities: {}, clientInfo: {name: "browser-page", version: "1"}}})});
  const sid = init.headers.get("Mcp-Session-Id");
  const version = messages(await init.text())[0].result.protocolVersion;
  const session = {...base, "Mcp-Session-Id": sid, "MCP-Protocol-Version": version};
  const note = await fetch(url, {method: "POST", headers: session, body: JSON.stringify(
    {jsonrpc: "2.0", method: "notifications/initialized"})});
  const call = await fetch(url, {method: "POST", headers: session, body: JSON.stringify(
    {jsonrpc: "2.0", id: 2, method: "tools/call",
     params: {name: "echo", arguments: {text: "from the page"}}})});
  const reply = messages(await call.text()).pop();
  return {sid, version, noteStatus: note.status, status: call.status,
          echoed: reply.result.content[0].text};
}
async function modern(url) {
  const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {name: "browser-page", version: "1"}};
  const call = await fetch(url, {method: "POST", headers: {
      "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
      "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"},
    body: JSON.stringify({jsonrpc: "2.0", id: 3, method: "tools/call",
      params: {name: "echo", arguments: {text: "modern page"}, _meta: meta}})});
  return {status: call.status, echoed: messages(await call.text()).pop().result.content[0].text};
}
async function attempt(url) {
  try { await legacy(url); return "reached"; } catch (e) { return e.name + ": " + e.message; }
}
</script>"""


class PageHandler(tornado.web.RequestHandler):
    def get(self) -> None:
        self.set_header("Content-Type", "text/html")
        self.finish(PAGE)


@contextlib.asynccontextmanager
async def page_origin() -> AsyncIterator[str]:
    """A plain web server on its own loopback port: a distinct origin serving the page."""
    async with serving(tornado.web.Application([(r"/", PageHandler)])) as origin:
        yield origin


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium(CHROMIUM_ARGS) as b:
        yield b


async def test_allowed_origin_calls_across_origins_and_another_is_blocked(browser: Any) -> None:
    async with page_origin() as allowed, page_origin() as other, \
            running(example_server(), cors_allowed_origins=[allowed]) as srv:
        page = await browser.new_page()
        await page.goto(f"{allowed}/")
        result = await page.evaluate("url => legacy(url)", srv.url)
        assert result["sid"] and len(srv.transport.sessions) == 1
        assert srv.transport.sessions.get(result["sid"]) is not None
        assert result == {"sid": result["sid"], "version": "2025-11-25",
                          "noteStatus": 202, "status": 200, "echoed": "from the page"}
        assert await page.evaluate("url => modern(url)", srv.url) == {
            "status": 200, "echoed": "modern page"}

        requests_before = srv.transport.requests_total
        blocked = await browser.new_page()
        await blocked.goto(f"{other}/")
        outcome = await blocked.evaluate("url => attempt(url)", srv.url)
        assert outcome == "TypeError: Failed to fetch"
        # The preflight was refused: the POST itself never reached the endpoint.
        assert srv.transport.requests_total == requests_before
        assert len(srv.transport.sessions) == 1
