"""The dashboard in a real headless Chromium, against a real server with real MCP clients.

One walk-through, as an operator would do it: log in, find the session a client just
opened and what it retains, lower ``max_sessions`` through the form and watch the server
refuse the next client, watch a listen stream appear and disappear, end a session from its
row.  Waits are Playwright's own (``expect(...)`` with a timeout), never bare sleeps.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from admin_support import (
    TOKEN,
    Running,
    initialize,
    listen_request,
    make_server,
    open_session,
    running_admin,
)
from browser_support import quiet_browser  # noqa: F401 - the browser fixture

playwright_api = pytest.importorskip("playwright.async_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

WAIT_MS = 15_000


def fmt_bytes(n: int) -> str:
    """The page's own byte formatting (admin.js ``fmtBytes``), for exact text matches."""
    units = ["B", "KiB", "MiB", "GiB"]
    value = float(n)
    i = 0
    while value >= 1024 and i < len(units) - 1:
        value /= 1024
        i += 1
    if i == 0:
        return f"{n} B"
    return f"{value:.1f} {units[i]}" if value < 10 else f"{value:.0f} {units[i]}"


@contextlib.asynccontextmanager
async def held_listen_stream(client: httpx.AsyncClient, srv: Running,
                             notifications: dict[str, Any] | None = None
                             ) -> AsyncIterator[None]:
    """A ``subscriptions/listen`` request held open until the block ends (then dropped)."""
    headers, body = listen_request("listen-1", notifications)
    async with client.stream("POST", srv.mcp, json=body, headers=headers) as resp:
        assert resp.status_code == 200
        yield
    # Leaving the ``stream`` block closes the connection without reading the body.


async def test_operator_walk_through(browser: object) -> None:
    async with running_admin() as srv, httpx.AsyncClient(timeout=20) as client:
        sid = await open_session(client, srv.mcp, "browser-test-client")
        info = next(s for s in srv.transport.snapshot().sessions if s.id == sid)
        assert info.retained_bytes > 0

        page = await browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        # Log in: the dashboard sends us to the login page first.
        await page.goto(f"{srv.admin}/")
        await expect(page).to_have_url(f"{srv.admin}/login?next=%2Fadmin%2F")
        await page.fill("input[name=name]", "alice")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        await expect(page).to_have_url(f"{srv.admin}/", timeout=WAIT_MS)

        # The session the client opened, with what it retains against its bound.
        row = page.locator(f'tr[data-session="{sid}"]')
        await expect(row).to_be_visible(timeout=WAIT_MS)
        await expect(row).to_contain_text("browser-test-client 1.0")
        await expect(row).to_contain_text("2025-11-25")
        await expect(row.locator(".retained-bytes")).to_contain_text(
            f"{fmt_bytes(info.retained_bytes)} / 64 KiB")
        await expect(row.locator(".retained-values")).to_contain_text(
            f"{info.retained_values} / 1,024")
        await expect(page.locator('[data-bind="sessions.count"]')).to_have_text("1")
        await expect(page.locator("#live")).to_contain_text("live", timeout=WAIT_MS)

        # Filter: a filter that matches nothing empties the table.
        await page.fill("#sessions-filter", "no-such-client")
        await expect(row).to_have_count(0, timeout=WAIT_MS)
        await page.fill("#sessions-filter", "browser-test")
        await expect(row).to_be_visible(timeout=WAIT_MS)

        # A bad value is refused next to its field and changes nothing.
        await page.fill("#limit-max_sessions", "0")
        await page.click("#limits-apply")
        await expect(page.locator("#error-max_sessions")).to_contain_text(
            "must be a positive integer")
        assert srv.transport.options.max_sessions == 10_000

        # Lower max_sessions to 1 through the form: the next initialize is refused.
        await page.fill("#limit-max_sessions", "1")
        await page.click("#limits-apply")
        await expect(page.locator("#limits-status")).to_contain_text(
            "Applied: max_sessions", timeout=WAIT_MS)
        await expect(page.locator("#error-max_sessions")).to_have_text("")
        assert srv.transport.options.max_sessions == 1
        refused = await initialize(client, srv.mcp, "one-too-many")
        assert refused.status_code == 503
        await expect(page.locator('[data-bind="sessions.limit"]')).to_have_text("1",
                                                                              timeout=WAIT_MS)
        await expect(page.locator('[data-refusal="max_sessions"]')).to_have_class(
            "refusal hit", timeout=WAIT_MS)
        await expect(page.locator("#changes")).to_contain_text(
            "admin:alice@127.0.0.1 max_sessions 10,000 → 1", timeout=WAIT_MS)
        # The session that was already open is still there.
        await expect(row).to_be_visible()

        # A listen stream appears while it is held open, and disappears when dropped.
        streams = page.locator("#streams-table tbody tr")
        async with held_listen_stream(client, srv):
            await expect(streams).to_have_count(1, timeout=WAIT_MS)
            await expect(streams.first).to_contain_text('"listen-1"')
            await expect(streams.first).to_contain_text("toolsListChanged")
            await streams.first.get_by_role("button", name="URIs").click()
            await expect(page.locator("#stream-detail")).to_be_visible()
            await expect(page.locator("#stream-detail-uris")).to_contain_text("No resource URIs")
        await expect(streams).to_have_count(0, timeout=WAIT_MS)
        await expect(page.locator("#stream-detail-summary")).to_contain_text("closed",
                                                                             timeout=WAIT_MS)

        # End the session from its row (a second click confirms).
        end = row.get_by_role("button")
        await end.click()
        await expect(end).to_have_text("End session?")
        await end.click()
        await expect(row).to_have_count(0, timeout=WAIT_MS)
        assert not srv.transport.snapshot().sessions
        await expect(page.locator("#changes")).to_contain_text("ended session")

        # Log out (a form POST carrying this login's XSRF token): back to the login page.
        await page.get_by_role("button", name="Log out").click()
        await expect(page.locator("input[name=token]")).to_be_visible(timeout=WAIT_MS)
        assert "/admin/login" in page.url

        assert errors == []
        await page.close()


async def test_read_only_page_has_no_controls(browser: object) -> None:
    async with running_admin(read_only=True) as srv, httpx.AsyncClient(timeout=20) as client:
        sid = await open_session(client, srv.mcp, "watched")
        page = await browser.new_page()  # type: ignore[attr-defined]
        await page.goto(f"{srv.admin}/login")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        row = page.locator(f'tr[data-session="{sid}"]')
        await expect(row).to_be_visible(timeout=WAIT_MS)
        await expect(page.locator("#read-only-badge")).to_be_visible()
        await expect(row.get_by_role("button")).to_have_count(0)
        await expect(page.locator("#limits-apply")).to_have_count(0)
        await expect(page.locator("#limit-max_sessions")).to_be_disabled()
        await expect(page.locator("#limit-max_sessions")).to_have_value("10000")
        await page.close()



async def test_a_stream_watching_two_uris_shows_them_as_its_filter(browser: object) -> None:
    """A listen stream that asked for two resources and no list changes: its filter is the
    two URIs, not "nothing"."""
    server = make_server()
    server.track_subscriptions()  # offers resources/subscribe: listen streams keep URIs
    async with running_admin(server=server) as srv, httpx.AsyncClient(timeout=20) as client:
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        await page.goto(f"{srv.admin}/login")
        await page.fill("input[name=token]", TOKEN)
        await page.click("button[type=submit]")
        streams = page.locator("#streams-table tbody tr")
        uris = ["note://groceries", "note://todo"]
        async with held_listen_stream(client, srv, {"resourceSubscriptions": uris}):
            await expect(streams).to_have_count(1, timeout=WAIT_MS)
            honored = streams.first.locator("td").nth(3)
            await expect(honored).to_have_text("resources: 2 URIs")
            await streams.first.get_by_role("button", name="URIs").click()
            for uri in uris:
                await expect(page.locator("#stream-detail-uris")).to_contain_text(uri)
        await page.close()
