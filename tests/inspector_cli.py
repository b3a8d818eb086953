"""Running the MCP Inspector's CLI (``node $MCP_INSPECTOR --cli ...``) against a server.

The Inspector is one of the npm test peers ``./dev`` installs (``MCP_INSPECTOR``, run with
the Node 22 at ``MCP_NODE``).  Its home is a fresh directory, so nothing it stores (the
server catalog, OAuth state) outlives the test or reaches the user's own."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from npm_peers import PEERS, node, peer

RUN_TIMEOUT = 60.0


def launcher() -> str:
    return peer("MCP_INSPECTOR", PEERS / "@modelcontextprotocol" / "inspector" / "clients"
                / "launcher" / "build" / "index.js")


async def inspector(*args: str) -> dict[str, Any]:
    """The one JSON object ``inspector --cli --format json -q ARGS`` prints (its result, or
    its ``error`` envelope, which it prints on stderr)."""
    with tempfile.TemporaryDirectory() as home:
        proc = await asyncio.create_subprocess_exec(
            node(), launcher(), "--cli", "--format", "json", "-q", *args,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=home,
            env={**os.environ, "HOME": home,
                 "MCP_CATALOG_PATH": str(Path(home) / "mcp.json"),
                 "MCP_CLIENT_CONFIG_PATH": str(Path(home) / "client.json")})
        try:
            out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
    for text in (out, err):
        for line in reversed(text.decode(errors="replace").strip().splitlines()):
            if line.startswith("{"):
                return json.loads(line)  # type: ignore[no-any-return]
    raise AssertionError(f"the Inspector printed no JSON (exit {proc.returncode}): "
                         f"{out.decode(errors='replace')[-2000:]}"
                         f"{err.decode(errors='replace')[-2000:]}")
