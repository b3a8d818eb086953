"""Headless Chromium for the browser tests (``pytest.mark.browser``): the executable is
``$CHROMIUM`` (default /usr/bin/chromium); a test is skipped when it is not there."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


@contextlib.asynccontextmanager
async def chromium(args: Sequence[str]) -> AsyncIterator[Any]:
    """A launched Chromium (a Playwright ``Browser``) with command-line ``args``, closed
    when the block ends."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (./dev test installs it)")
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=list(args))
        try:
            yield browser
        finally:
            await browser.close()


#: Chromium for a dashboard test: no sandbox (CI runs as root), no GPU, and none of its own
#: traffic (QUIC, first-run pages, background networking, component updates, sync).
QUIET_ARGS = ("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update",
              "--disable-sync")


@pytest.fixture(name="browser")
async def quiet_browser() -> AsyncIterator[Any]:
    """``browser``: a Chromium launched with :data:`QUIET_ARGS` for the test (a module
    imports ``quiet_browser`` to use it)."""
    async with chromium(QUIET_ARGS) as b:
        yield b
