"""The dashboard in headless Chromium shows who opened each session (the "Caller"
column: subject, with method and scopes on hover), the anonymous caller as such, and the
auth refusal counts on its refusal grid."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import tornado.web
from browser_support import chromium
from mcp_http import init_msg, rpc, running

from tornado_mcp import Principal, Server
from tornado_mcp.dashboard import dashboard_routes

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(90)]
TOKEN = "dashboard-token-for-tests"
WAIT_MS = 15_000


@pytest.fixture
async def browser() -> AsyncIterator[object]:
    async with chromium(["--no-sandbox", "--disable-gpu"]) as b:
        yield b


def by_header(handler: tornado.web.RequestHandler) -> Principal | None:
    user = handler.request.headers.get("X-User")
    return Principal.of(user, ["notes", "admin"], {"token": "never-shown"}, method="cookie") \
        if user else None


async def test_the_caller_column_and_auth_refusals(browser: object) -> None:
    async with running(Server("who"), authenticate=by_header,
                       extra_routes=lambda t: dashboard_routes(t, "/admin", TOKEN)) as srv:
        r = await srv.post(init_msg(), headers={"X-User": "grace"})
        sid = r.headers["Mcp-Session-Id"]
        assert (await srv.post(rpc("ping"))).status == 401
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(f"http://127.0.0.1:{srv.port}/admin/login")
        await page.fill("input[name=name]", "ops")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        row = page.locator(f'tr[data-session="{sid}"]')
        await expect(row).to_contain_text("grace", timeout=WAIT_MS)
        caller = row.locator("td").nth(2)
        await expect(caller).to_have_text("grace")
        await expect(caller.locator("span")).to_have_attribute("title", "cookie · admin notes")
        await expect(page.locator('[data-refusal="auth_missing"] .num')).to_have_text(
            "1", timeout=WAIT_MS)
        assert "never-shown" not in await page.content()
