"""docs/clients.md as a reader uses it: its server (``notes.py``) runs, and every client
configuration on the page (its ```json title="..."``` blocks) connects to it and lists its
tools, run by the MCP Inspector's CLI (``--config``, the ``mcpServers`` format Claude Code
and Claude Desktop share).

What is substituted, and only that: the placeholder paths (``/path/to/venv/bin/python``,
``/path/to/notes.py``) by this interpreter and the page's ``notes.py``, port 8000 by the
port the server bound, and each client's token reference (``${NOTES_TOKEN}``,
``${env:NOTES_TOKEN}``, ``${input:notes-token}``, ``<your token>``) by the token.  Each
client's own file shape is translated to the Inspector's: VS Code's ``servers`` is
``mcpServers``, Cursor's ``url`` without a ``type`` is ``http``, and the ``mcp-remote``
bridge Claude Desktop runs (not installed here) becomes the URL and header it is given.
Claude, VS Code and Cursor themselves are not on this machine: the shapes are theirs as
documented, the connection is the Inspector's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, ServerProc
from test_docs_run import blocks, saved_files, start

# one worker starts the page's two servers (module-scoped) for all its tests
pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("docs_clients")]

PAGE = REPO_ROOT / "docs" / "clients.md"
NODE = os.environ.get("MCP_NODE")
INSPECTOR = os.environ.get("MCP_INSPECTOR")
TOKEN = "docs-clients-token-0123456789"
TOKEN_REFERENCES = ("${NOTES_TOKEN}", "${env:NOTES_TOKEN}", "${input:notes-token}",
                    "<your token>")
JSON_TITLED = re.compile(r'json title="([^"]+)"')
STEP = 60.0


def configurations() -> dict[str, dict[str, Any]]:
    """``{file name: parsed JSON}`` of the page's client configurations."""
    found = {}
    for block in blocks(PAGE):
        m = JSON_TITLED.fullmatch(block.info)
        if m is not None:
            found[m.group(1)] = json.loads(block.code)
    return found


def entries() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for title, config in configurations().items():
        servers = config.get("mcpServers", config.get("servers"))
        assert isinstance(servers, dict) and servers, title
        for name, entry in servers.items():
            yield title, name, entry


def needs_token(entry: dict[str, Any]) -> bool:
    return any(ref in json.dumps(entry) for ref in TOKEN_REFERENCES)


def for_the_inspector(entry: dict[str, Any], port: int, notes: Path) -> dict[str, Any]:
    text = (json.dumps(entry).replace("/path/to/venv/bin/python", sys.executable)
            .replace("/path/to/notes.py", str(notes))
            .replace("127.0.0.1:8000", f"127.0.0.1:{port}"))
    for ref in TOKEN_REFERENCES:
        text = text.replace(ref, TOKEN)
    out: dict[str, Any] = json.loads(text)
    args = out.get("args", [])
    if out.get("command") == "npx" and "mcp-remote" in args:
        url = args[args.index("mcp-remote") + 1]
        header = args[args.index("--header") + 1] if "--header" in args else None
        headers = {}
        if header is not None:
            for key, value in out.get("env", {}).items():
                header = header.replace("${" + key + "}", value)
            name, _, value = header.partition(":")
            headers[name] = value
        return {"type": "http", "url": url, "headers": headers}
    if "url" in out:
        out.setdefault("type", "http")
    return out


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("clients")
    path = directory / "notes.py"
    path.write_text(saved_files(PAGE)["notes.py"], encoding="utf-8")
    return path


def serve(notes: Path, token: str | None) -> ServerProc:
    """``python notes.py``, with ``NOTES_TOKEN`` set to ``token`` when there is one."""
    where = notes.parent / ("private" if token else "open")
    where.mkdir()
    return start(notes, where, notes.read_text(encoding="utf-8"),
                 env={"NOTES_TOKEN": token} if token else {})


@pytest.fixture(scope="module")
def servers(notes: Path) -> Iterator[dict[bool, ServerProc]]:
    """The page's server as ``python notes.py`` (False) and with ``NOTES_TOKEN`` (True)."""
    open_, private = serve(notes, None), None
    try:
        private = serve(notes, TOKEN)
        yield {False: open_, True: private}
    finally:
        open_.stop()
        if private is not None:
            private.stop()


def list_tools_status(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "docs", "version": "1"}}}).encode()
    request = urllib.request.Request(url, body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_page_configures_each_client_for_http_a_token_and_stdio() -> None:
    kinds: dict[str, set[str]] = {}
    for title, _name, entry in entries():
        kind = "stdio" if "command" in entry and "mcp-remote" not in entry.get("args", []) \
            else ("token" if needs_token(entry) else "http")
        kinds.setdefault(title, set()).add(kind)
    assert kinds == {".mcp.json": {"http", "token", "stdio"},
                     "claude_desktop_config.json": {"stdio"},
                     "claude_desktop_config_http.json": {"token"},
                     ".vscode/mcp.json": {"http", "token", "stdio"},
                     ".cursor/mcp.json": {"http", "token", "stdio"}}


def test_the_private_server_wants_its_token(servers: dict[bool, ServerProc]) -> None:
    private = servers[True]
    assert list_tools_status(private.url, {}) == 401
    assert list_tools_status(private.url, {"Authorization": "Bearer wrong"}) == 401
    assert list_tools_status(private.url, {"Authorization": f"Bearer {TOKEN}"}) == 200
    assert list_tools_status(servers[False].url, {}) == 200


@pytest.mark.parametrize("title, name, entry", list(entries()),
                         ids=[f"{t}:{n}" for t, n, _ in entries()])
def test_each_configuration_connects(title: str, name: str, entry: dict[str, Any],
                                     servers: dict[bool, ServerProc], notes: Path,
                                     tmp_path: Path) -> None:
    if not (NODE and INSPECTOR):
        pytest.skip("MCP_NODE and MCP_INSPECTOR (./dev exports them) name the Inspector")
    server = servers[needs_token(entry)]
    config = tmp_path / "mcp.json"
    translated = for_the_inspector(entry, server.port, notes)
    config.write_text(json.dumps({"mcpServers": {name: translated}}), encoding="utf-8")
    done = subprocess.run([NODE, INSPECTOR, "--cli", "--config", str(config), "--server", name,
                           "--method", "tools/list"], capture_output=True, text=True,
                          timeout=STEP, check=False, cwd=tmp_path,
                          env={**os.environ, "MCP_INSPECTOR_SECRET_STORE": "memory"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    tools = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert tools == ["add_note", "list_notes"]
