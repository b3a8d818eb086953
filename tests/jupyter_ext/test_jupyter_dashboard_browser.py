"""The dashboard under Jupyter, in a real headless Chromium: Jupyter's login page, then the
dashboard with a live MCP session and a listen stream on it.

With ``JUPYTER_DASHBOARD_SCREENSHOT=path`` set, the page is also saved there (the picture in
``docs/jupyter.md`` is taken this way).  Waits are Playwright's own, never bare sleeps.
"""

from __future__ import annotations

import os

import anyio
import pytest
from browser_support import chromium

from .jupyter_proc import JupyterProc
from .test_jupyter_sdk import DEMO_URI, STEP, client_for

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(120),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.xdist_group("jupyter_dashboard_browser")]  # one worker: its Jupyter

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update"]
WAIT_MS = 15_000


async def test_jupyter_login_leads_to_a_live_dashboard(jupyter: JupyterProc) -> None:
    with anyio.fail_after(6 * STEP):
        async with client_for(jupyter, mode="legacy") as legacy, \
                client_for(jupyter) as modern, \
                modern.listen(resource_subscriptions=[DEMO_URI]):
            await legacy.call_tool("list_files", {"path": ""})
            async with chromium(CHROMIUM_ARGS) as browser:
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                await page.goto(f"{jupyter.mcp_url}/admin/")
                await expect(page).to_have_url(
                    f"{jupyter.base}/login?next=%2Fmcp%2Fadmin%2F", timeout=WAIT_MS)
                await page.fill("input[name=password]", jupyter.token)
                await page.click("#login_submit")
                await expect(page).to_have_url(f"{jupyter.mcp_url}/admin/",
                                               timeout=WAIT_MS)
                await expect(page.locator("#live")).to_contain_text("live",
                                                                    timeout=WAIT_MS)
                await expect(page.locator('[data-bind="sessions.count"]')).to_have_text(
                    "1", timeout=WAIT_MS)
                await expect(page.locator('[data-bind="sessions.limit"]')).to_have_text(
                    "5")
                await expect(page.locator("#streams-table tbody tr")).to_have_count(
                    1, timeout=WAIT_MS)
                await expect(page.locator("body")).to_contain_text("signed in as Anonymous")
                target = os.environ.get("JUPYTER_DASHBOARD_SCREENSHOT")
                if target:
                    await page.screenshot(path=target, full_page=False)
