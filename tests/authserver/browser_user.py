"""A person at a browser: headless Chromium (Playwright) following an authorization URL
to the app's own login page, logging in, and answering the consent page.

``User.authorize(url)`` returns the URL the browser was finally sent to (the client's
redirect URI with the code); a redirect URI nobody listens on (``intercept``) is caught
and answered by the browser itself, a real one (the Inspector's callback listener) is
visited.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp.shared.auth import AuthorizationCodeResult

STEP = 30.0


class User:
    """One user's browser (one Playwright context: the app's login cookie persists)."""

    def __init__(self, browser: Any, name: str, password: str, decision: str = "approve",
                 intercept: str | None = None) -> None:
        self.browser, self.name, self.password = browser, name, password
        self.decision = decision
        self.intercept = intercept
        self.context: Any = None
        self.logins = 0
        self.consents: list[str] = []  # the consent pages' text, in order
        self.result: AuthorizationCodeResult | None = None

    async def authorize(self, url: str) -> str:
        """Follow ``url`` as the user: log in if asked, answer the consent page; the URL
        the browser was sent back to."""
        if self.context is None:
            self.context = await self.browser.new_context()
        page = await self.context.new_page()
        landed: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        if self.intercept is not None:
            async def catch(route: Any) -> None:
                if not landed.done():
                    landed.set_result(route.request.url)
                await route.fulfill(status=200, body="You may close this window.")
            await page.route(self.intercept + "**", catch)
        try:
            await page.goto(url, timeout=STEP * 1000)
            if await page.locator('input[name="password"]').count():
                self.logins += 1
                await page.fill('input[name="name"]', self.name)
                await page.fill('input[name="password"]', self.password)
                async with page.expect_navigation(timeout=STEP * 1000):
                    await page.click("button")
            await page.wait_for_selector("#consent, #error", timeout=STEP * 1000)
            self.consents.append(await page.inner_text("main"))
            if await page.locator("#error").count():
                raise AssertionError("the sign-in refused: " + self.consents[-1])
            button = "#approve" if self.decision == "approve" else "#deny"
            if self.intercept is not None:
                await page.click(button)
                return await asyncio.wait_for(landed, STEP)
            async with page.expect_navigation(timeout=STEP * 1000):
                await page.click(button)
            return str(page.url)
        finally:
            await page.close()

    # -- the official Python SDK's hooks -------------------------------------------------
    async def redirect(self, url: str) -> None:
        back = await self.authorize(url)
        query = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}
        self.result = AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                              iss=query.get("iss"))

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        result, self.result = self.result, None
        return result

    async def close(self) -> None:
        if self.context is not None:
            await self.context.close()
