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
