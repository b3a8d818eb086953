"""MCP Apps end to end in headless Chromium: a web host built on the official SDK client and
the official host bridge (``AppBridge`` of ``@modelcontextprotocol/ext-apps``) lists the
example server's tools, reads the view a tool names, runs it in a sandboxed iframe, calls
the tool, and hands the result to the view, which renders its ``structuredContent``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import tornado.web
from browser_support import chromium
from conftest import REPO_ROOT
from mcp_http import TIMEOUT, example_server, running

from tornado_mcp import Transport

# One worker for the module: its tests share the bundle esbuild makes.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(120),
              pytest.mark.xdist_group("apps_browser")]

PEERS = REPO_ROOT / ".peers" / "node_modules"
ESBUILD = PEERS / ".bin" / "esbuild"
HOST_ENTRY = Path(__file__).resolve().parent / "host.mjs"
HOST_PAGE = b"<!DOCTYPE html><html><body><script src='/host.js'></script></body></html>"


@pytest.fixture(scope="module")
def host_bundle(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """host.mjs bundled for the browser by esbuild, from the pinned npm test peers."""
    if not ESBUILD.exists() or not (PEERS / "@modelcontextprotocol" / "ext-apps").is_dir():
        message = "the npm test peers (esbuild, @modelcontextprotocol/ext-apps) are missing; " \
                  "run ./dev test"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("apps-host") / "host.js"
    subprocess.run([str(ESBUILD), str(HOST_ENTRY), "--bundle", "--format=iife",
                    "--platform=browser", "--log-level=warning", f"--outfile={out}"],
                   cwd=REPO_ROOT / ".peers", env={**os.environ, "NODE_PATH": str(PEERS)},
                   check=True, timeout=60)
    return out.read_bytes()


def host_routes(bundle: bytes) -> Any:
    class Page(tornado.web.RequestHandler):
        def get(self) -> None:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(HOST_PAGE)

    class Script(tornado.web.RequestHandler):
        def get(self) -> None:
            self.set_header("Content-Type", "text/javascript; charset=utf-8")
            self.write(bundle)

    def routes(transport: Transport) -> list[Any]:
        return [(r"/host", Page), (r"/host\.js", Script)]
    return routes


async def test_the_view_renders_the_tool_result_through_the_official_host_bridge(
        host_bundle: bytes) -> None:
    async with running(example_server(), extra_routes=host_routes(host_bundle)) as srv, \
            chromium(["--no-sandbox"]) as browser:
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(f"http://127.0.0.1:{srv.port}/host", timeout=TIMEOUT * 1000)
        shown = await page.evaluate("showTool('show_forecast', {city: 'Lyon', days: 4})")
        assert shown["uri"] == "ui://tornado-mcp/forecast"
        assert shown["mimeType"] == "text/html;profile=mcp-app"
        assert shown["meta"] == {"ui": {"prefersBorder": True}}
        structured = shown["structured"]
        assert structured["city"] == "Lyon" and len(structured["days"]) == 4

        view = page.frame_locator("iframe")
        await view.locator("body[data-rendered='true']").wait_for(timeout=TIMEOUT * 1000)
        assert await view.locator("#city").text_content() == "Lyon, 4 days"
        rows = await view.locator("#days tr").all()
        cells = [await row.locator("td").all_text_contents() for row in rows]
        assert cells == [[d["day"], f"{d['high']} °C", f"{d['low']} °C", d["sky"]]
                         for d in structured["days"]]
        assert not errors, errors
