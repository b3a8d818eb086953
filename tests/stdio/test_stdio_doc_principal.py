"""docs/stdio.md says how a program names the local user: the principal it shows is run
over a real stdio pipe and must be that user (authenticated by the host, never the
anonymous caller), and it calls the scoped tool the page's scope grants."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_stdio_wire import INIT, REPO, script_server

pytestmark = pytest.mark.timeout(60)

DOC = REPO / "docs" / "stdio.md"

SERVER = '''
import sys
from tornado_mcp import Context, Principal, Server
from tornado_mcp.stdio import run

server = Server("doc-principal")

@server.tool(scopes=["notes:write"])
async def who(ctx: Context) -> str:
    p = ctx.principal
    return f"{p.caller}|{p.method}|{p.authenticated}"

run(server, principal=eval(sys.argv[1]))
'''


def doc_principal() -> str:
    found = re.search(r"run\(server, principal=(.+)\)\n", DOC.read_text(encoding="utf-8"))
    assert found, "docs/stdio.md shows no run(server, principal=...)"
    return found.group(1)


async def test_the_documented_principal_is_the_local_user(tmp_path: Path) -> None:
    async with script_server(tmp_path / "doc_principal.py", SERVER, doc_principal()) as p:
        p.send(INIT)
        assert (await p.recv())["id"] == 0
        p.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        p.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "who", "arguments": {}}})
        answer = await p.recv()
    assert "error" not in answer, answer
    assert answer["result"]["content"][0]["text"] == "host:alice|host|True"
