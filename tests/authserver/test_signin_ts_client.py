"""The official TypeScript SDK client (npm ``@modelcontextprotocol/sdk`` 1.32.2) signing in
with the app's own login, driven headless: ``ts_oauth_client.mjs`` prints the
authorization URL its OAuthClientProvider is handed, headless Chromium logs in to the app
and allows it, and the URL the browser was sent back to goes to the script on stdin."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from browser_support import chromium
from browser_user import User
from npm_peers import PEERS, node, peer
from signin_support import PASSWORDS, REDIRECT, serving

SCRIPT = Path(__file__).parent / "ts_oauth_client.mjs"
STEP = 60.0

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]




async def run_client(url: str, user: User, *tools: str) -> dict[str, Any]:
    node_bin = node()
    sdk = peer("MCP_TS_SDK", PEERS / "@modelcontextprotocol" / "sdk")
    proc = await asyncio.create_subprocess_exec(
        node_bin, str(SCRIPT), url, sdk, REDIRECT, *tools, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), STEP)
        asked = json.loads(line)
        back = await user.authorize(asked["authorize"])
        proc.stdin.write(back.encode() + b"\n")
        await proc.stdin.drain()
        out, err = await asyncio.wait_for(proc.communicate(), STEP)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


async def test_the_typescript_sdk_signs_in_with_the_apps_login() -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        user = User(browser, "root", PASSWORDS["root"], intercept=REDIRECT)
        got = await run_client(app.mcp, user, "whoami", "delete_all_notes")
        await user.close()
    assert got["results"]["whoami"]["structuredContent"] == {
        "subject": "root", "scopes": ["notes", "notes:admin"], "method": "bearer",
        "authenticated": True}
    assert got["results"]["delete_all_notes"]["content"][0]["text"] == "deleted"
    assert got["scope"] == "notes notes:admin" and got["refresh"] is True
    assert user.logins == 1 and "Allow TypeScript SDK?" in user.consents[0]
