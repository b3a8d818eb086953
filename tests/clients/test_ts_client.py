"""The official TypeScript SDK client (npm ``@modelcontextprotocol/sdk``, pinned in
``.peers/package.json``) calls typed tools: dataclass / TypedDict / Enum / nested-list
arguments, structured results that the SDK validates against ``outputSchema`` itself.

``tests/ts_client.mjs`` runs under the Node 22 that ``./dev test`` installs into
``.peers/`` (``MCP_NODE``); the SDK is read from ``.peers/node_modules`` (``MCP_TS_SDK``
overrides the package directory).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
import typed_server
from mcp_http import running
from npm_peers import PEERS, node, peer

SCRIPT = Path(__file__).resolve().parents[1] / "ts_client.mjs"

pytestmark = pytest.mark.timeout(90)


async def run_client(url: str) -> dict[str, Any]:
    node_bin = node()
    sdk = peer("MCP_TS_SDK", PEERS / "@modelcontextprotocol" / "sdk")
    proc = await asyncio.create_subprocess_exec(
        node_bin, str(SCRIPT), url, sdk, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TYPED_ARGS": json.dumps(typed_server.ARGS)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])  # type: ignore[no-any-return]


async def test_typescript_client_calls_typed_tools() -> None:
    async with running(typed_server.build()) as srv:
        got = await run_client(srv.url)
    assert got["tools"]["plan_trip"]["output"]["required"] == ["traveller", "legs", "cost",
                                                              "days"]
    assert got["tools"]["plan_trip"]["input"]["properties"]["budget"]["required"] == [
        "amount", "currency"]
    assert got["plan"]["structuredContent"] == typed_server.EXPECTED
    assert not got["plan"].get("isError")
    assert got["total"]["structuredContent"] == {"result": 4.0}
    assert got["bad"]["isError"] is True
    assert "arguments.mode must be one of" in got["bad"]["content"][0]["text"]
    assert typed_server.RECEIVED["mode"] is typed_server.Mode.TRAIN
