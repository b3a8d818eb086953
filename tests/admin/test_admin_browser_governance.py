"""The dashboard's governance sections in a real headless Chromium: the tools table and its
live bounds form, the callers table, the audit trail and its filters; and the limits form
grouped by concern, with sizes in units and booleans as a select."""

from __future__ import annotations

import httpx
import pytest
from admin_support import TOKEN, running_admin
from browser_support import quiet_browser  # noqa: F401 - the browser fixture
from test_admin_governance import call_echo

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser
WAIT_MS = 15_000


async def test_tools_callers_and_audit_sections(browser: object) -> None:
    async with running_admin() as srv, httpx.AsyncClient(timeout=20) as client:
        for i in range(2):
            await call_echo(client, srv.mcp, "secret-text", i)
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(f"{srv.admin}/login")
        await page.fill("input[name=name]", "alice")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")

        row = page.locator('#tools-table tr[data-tool="echo"]')
        await expect(row.locator(".calls")).to_have_text("2", timeout=WAIT_MS)
        await expect(row.locator(".in-flight")).to_contain_text("0 / ∞")
        await expect(row.locator(".timeout")).to_have_text("none")
        await expect(row.locator(".p50")).to_contain_text("ms")

        # A bad bound is refused next to its field; a good one applies live.
        await row.get_by_role("button", name="Bounds").click()
        await expect(page.locator("#tool-edit")).to_be_visible()
        await page.uncheck("#tool-max-concurrency-none")
        await page.fill("#tool-max-concurrency", "-3")
        await page.click("#tool-apply")
        await expect(page.locator("#tool-error-max_concurrency")).to_contain_text(
            "must be a positive integer", timeout=WAIT_MS)
        assert srv.transport.options.tool_bounds == {}
        await page.fill("#tool-max-concurrency", "4")
        await page.uncheck("#tool-timeout-none")
        await page.fill("#tool-timeout", "2.5")
        await page.click("#tool-apply")
        await expect(page.locator("#tool-status")).to_contain_text("Applied to echo",
                                                                    timeout=WAIT_MS)
        assert srv.transport.options.tool_bounds == {"echo": {"timeout": 2.5,
                                                              "max_concurrency": 4}}
        await expect(row.locator(".in-flight")).to_contain_text("0 / 4", timeout=WAIT_MS)
        await expect(row.locator(".timeout")).to_have_text("2.5 s")
        await expect(page.locator("#changes")).to_contain_text("tool_bounds", timeout=WAIT_MS)

        # The caller, and the audit trail (a digest, never the argument values).
        caller = page.locator('#principals-table tr[data-principal="address:127.0.0.1"]')
        await expect(caller).to_contain_text("2", timeout=WAIT_MS)
        audit = page.locator("#audit-table tbody tr")
        await expect(audit).to_have_count(2, timeout=WAIT_MS)
        await expect(audit.first).to_contain_text("tools/call")
        await expect(page.locator("#audit-size")).to_contain_text("2 records", timeout=WAIT_MS)
        await expect(page.locator("#audit-size")).to_contain_text(" kB")
        await expect(page.locator("#audit-table")).not_to_contain_text("secret-text")
        await page.select_option("#audit-outcome", "refused")
        await expect(audit).to_have_count(0, timeout=WAIT_MS)
        await page.select_option("#audit-outcome", "ok")
        await page.fill("#audit-tool", "echo")
        await expect(audit).to_have_count(2, timeout=WAIT_MS)

        # The limits form: grouped, sizes in units, booleans as a select.
        for title in ("Sessions and requests", "Streams", "Tasks", "Callers and tools",
                      "Authentication", "Cluster"):
            await expect(page.locator(f'fieldset[data-group="{title}"] legend')).to_have_text(
                title)
        callers = page.locator('fieldset[data-group="Callers and tools"]')
        await expect(callers.locator("#limit-max_concurrent_calls_per_principal")).to_be_visible()
        await expect(page.locator("#size-max_request_bytes")).to_have_text("= 4.0 MiB")
        await expect(page.locator("#limit-tool_bounds")).to_have_count(0)
        hide = page.locator("#limit-hide_unauthorized")
        await expect(hide).to_have_value("false")
        await hide.select_option("true")
        await page.click("#limits-apply")
        await expect(page.locator("#limits-status")).to_contain_text(
            "Applied: hide_unauthorized", timeout=WAIT_MS)
        assert srv.transport.options.hide_unauthorized is True
        assert errors == []
        await page.close()
