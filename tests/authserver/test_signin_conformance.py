"""The conformance suite's authorization-server scenarios against the app's own login.

The harness's other ``auth/*`` scenarios test a *client* (they run their own mock
authorization server), so they do not apply here; 0.2.0 added ``conformance
authorization``, which tests an authorization server:
``authorization-server-metadata-endpoint`` (RFC 8414 metadata, ``issuer``,
``code_challenge_methods_supported``, and ``client_id_metadata_document_supported``) and
``authorization-code-grant`` (with a pre-registered client: the harness prints the
authorization URL for a person to visit, waits on its own callback listener, then trades
the code with PKCE and checks the token response, ``Cache-Control: no-store`` and the
``iss`` parameter).  Headless Chromium is the person: it logs in to the app and allows.
Every check must succeed, none may be skipped."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from browser_support import chromium
from browser_user import User
from npm_peers import PEERS, node, peer
from signin_support import PASSWORDS, serving

HARNESSES = {"MCP_CONFORMANCE_NEXT": PEERS / "conformance-next" / "dist" / "index.js",
             "MCP_CONFORMANCE_ALPHA12": PEERS / "conformance-alpha12" / "dist" / "index.js"}
STEP = 90.0

pytestmark = [pytest.mark.conformance, pytest.mark.browser, pytest.mark.timeout(240)]




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def checks_of(out: Path) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out.glob("*/checks.json")):
        found[path.parent.name] = json.loads(path.read_text())
    return found


@pytest.mark.parametrize("harness", sorted(HARNESSES))
async def test_the_conformance_authorization_server_scenarios_pass(
        harness: str, tmp_path: Path) -> None:
    node_bin = node()
    cli = peer(harness, HARNESSES[harness])
    port = free_port()
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        client = await app.register(client_name="conformance",
                                    redirect_uris=[f"http://127.0.0.1:{port}/callback"])
        argv = [node_bin, cli, "authorization", "--url", app.base, "--client-id",
                client["client_id"], "--port", str(port), "-o", str(tmp_path / "out")]
        if harness == "MCP_CONFORMANCE_ALPHA12":  # alpha.12 sends the resource (RFC 8707)
            argv += ["--resource", app.mcp]
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(tmp_path), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        assert proc.stdout is not None
        output = ""
        user = User(browser, "ada", PASSWORDS["ada"])
        try:
            while True:
                line = (await asyncio.wait_for(proc.stdout.readline(), STEP)).decode()
                output += line
                assert line, output
                if line.startswith(app.url("authorize")):
                    back = await user.authorize(line.strip())
                    assert back.startswith(f"http://127.0.0.1:{port}/callback"), back
                    break
            rest, _ = await asyncio.wait_for(proc.communicate(), STEP)
            output += rest.decode()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await user.close()
        assert proc.returncode == 0, output
        assert user.logins == 1
    runs = checks_of(tmp_path / "out")
    assert {name.split("-20")[0] for name in runs} == {
        "authorization-server-authorization-server-metadata-endpoint",
        "authorization-server-authorization-code-grant"}, runs
    checks = [c for found in runs.values() for c in found]
    assert {c["id"] for c in checks} >= {"authorization-server-metadata",
                                         "authorization-server-metadata-cimd",
                                         "authorization-code-grant"}
    assert [c for c in checks if c["status"] != "SUCCESS"] == [], checks
