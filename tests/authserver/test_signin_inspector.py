"""The MCP Inspector's CLI (2.12, ``node $MCP_INSPECTOR --cli``) signing in with the app's
own login, headless: with ``MCP_AUTO_OPEN_ENABLED=true`` it runs its interactive OAuth
flow without a terminal, prints the authorization URL ("Please navigate to: ...") and
waits on its loopback callback listener; headless Chromium (the user) follows the URL,
logs in to the app, allows the client, and is sent to that listener.  In both protocol
eras; with dynamic registration, and with a Client ID Metadata Document
(``--client-metadata-url``); and its stored token stops working the moment the user's
consent is taken back.  (The CLI's ``--relogin`` would revoke its grant (RFC 7009), but
in 2.12 it plans the request from stored server metadata the CLI never stores, so it
sends none; revocation is tested with plain requests in ``test_signin_flow.py``.)"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import pytest
from browser_support import chromium
from browser_user import User
from npm_peers import PEERS, node, peer
from signin_support import PASSWORDS, App, serving
from test_signin_cimd import allow_private, documents

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

INSPECTOR = PEERS / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" \
    / "index.js"
STEP = 60.0
NAVIGATE = re.compile(r"Please navigate to: (\S+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inspector:
    """One run of the Inspector's CLI, its OAuth state under ``home``."""

    def __init__(self, home: Path, callback: str) -> None:
        self.node = node()
        self.inspector = peer("MCP_INSPECTOR", INSPECTOR)
        self.home, self.callback = home, callback
        self.stderr = ""

    async def run(self, app: App, *args: str, user: User | None = None,
                  store: str = "memory") -> tuple[int, Any]:
        env = {**os.environ, "HOME": str(self.home), "MCP_AUTO_OPEN_ENABLED": "true",
               "MCP_INSPECTOR_SECRET_STORE": store, "NO_COLOR": "1",
               "BROWSER": "true"}  # nothing to open: the test's own browser goes there
        proc = await asyncio.create_subprocess_exec(
            self.node, self.inspector, "--cli", "--server-url", app.mcp, "--format", "json",
            "--callback-url", self.callback, *args, env=env, cwd=str(self.home),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        try:
            if user is not None:
                url = await asyncio.wait_for(self._authorization_url(proc.stderr), STEP)
                back = await user.authorize(url)
                assert back.startswith(self.callback), back
            out, err = await asyncio.wait_for(proc.communicate(), STEP)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        self.stderr += err.decode(errors="replace")
        text = out.decode(errors="replace").strip()
        return proc.returncode or 0, json.loads(text) if text else None

    async def _authorization_url(self, stderr: asyncio.StreamReader) -> str:
        while True:
            line = (await stderr.readline()).decode(errors="replace")
            self.stderr += line
            if not line:
                raise AssertionError("the Inspector never asked for a browser:\n" + self.stderr)
            found = NAVIGATE.search(line)
            if found:
                return found.group(1)


def whoami(result: Any) -> Any:
    """The ``whoami`` tool's answer in the CLI's JSON output."""
    assert isinstance(result, dict) and isinstance(result.get("result"), dict), result
    return result["result"]["structuredContent"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_inspector_registers_and_signs_in_with_the_apps_login(
        era: str, tmp_path: Path) -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
        inspector = Inspector(tmp_path, callback)
        user = User(browser, "ada", PASSWORDS["ada"])
        code, result = await inspector.run(app, "--protocol-era", era, "--method",
                                           "tools/call", "--tool-name", "whoami", user=user)
        assert code == 0, inspector.stderr
        assert whoami(result) == {"subject": "ada", "scopes": ["notes"], "method": "bearer",
                                  "authenticated": True}
        assert user.logins == 1 and "Allow" in user.consents[0]
        clients = await app.signin.clients()
        assert len(clients) == 1 and clients[0]["redirect_uris"] == [callback]
        assert [r["subject"] for r in await app.signin.consents()] == ["ada"]
        await user.close()


async def test_the_inspector_signs_in_with_a_client_id_metadata_document(
        tmp_path: Path) -> None:
    async with documents() as docs, serving(allow_private) as app, \
            chromium(["--no-sandbox"]) as browser:
        callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
        url = docs.client("inspector.json", client_name="Inspector by document",
                          redirect_uris=[callback], token_endpoint_auth_method="none",
                          grant_types=["authorization_code", "refresh_token"])
        inspector = Inspector(tmp_path, callback)
        user = User(browser, "root", PASSWORDS["root"])
        code, result = await inspector.run(app, "--client-metadata-url", url, "--method",
                                           "tools/call", "--tool-name", "whoami", user=user)
        assert code == 0, inspector.stderr
        assert whoami(result)["scopes"] == ["notes", "notes:admin"]
        assert "Allow Inspector by document?" in user.consents[0]
        assert "its metadata document" in user.consents[0]
        assert await app.signin.clients() == []  # it described itself: nothing registered
        assert docs.hits == ["/inspector.json"]
        await user.close()


async def test_the_inspector_keeps_its_token_until_the_user_takes_the_consent_back(
        tmp_path: Path) -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        callback = f"http://127.0.0.1:{free_port()}/oauth/callback"
        inspector = Inspector(tmp_path, callback)
        user = User(browser, "ada", PASSWORDS["ada"])
        code, _ = await inspector.run(app, "--method", "tools/call", "--tool-name", "whoami",
                                      user=user, store="file")
        assert code == 0, inspector.stderr
        code, result = await inspector.run(app, "--stored-auth-only", "--method",
                                           "tools/call", "--tool-name", "whoami",
                                           store="file")
        assert code == 0, inspector.stderr  # its stored token: no browser this time
        assert whoami(result)["subject"] == "ada"
        [row] = await app.signin.consents()
        assert await app.signin.revoke_consent("ada", row["client_id"]) == 1
        code, result = await inspector.run(app, "--stored-auth-only", "--method",
                                           "tools/call", "--tool-name", "whoami",
                                           store="file")
        assert code != 0, result  # its token and its refresh token are refused now
        assert app.refusals["auth_invalid"] >= 1
        await user.close()
