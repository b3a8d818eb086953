"""``tornado_mcp.testing``: the in-process client users test their tools with, and the
pytest plugin that hands it to them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tornado_mcp import Context, Server
from tornado_mcp.protocol import INVALID_PARAMS, METHOD_NOT_FOUND
from tornado_mcp.testing import Client, RPCError

REPO = Path(__file__).resolve().parents[2]


def build() -> Server:
    server = Server("client-under-test", instructions="Be kind.")

    @server.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        ctx.log("info", "working")
        return "done"

    @server.tool(input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]})
    def regional(region: str) -> str:
        return region

    @server.resource("test://hello", mime_type="text/plain")
    def hello() -> str:
        return "hi"

    @server.prompt()
    def ask(topic: str) -> str:
        return f"Tell me about {topic}"
    return server


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_client_speaks_each_era(era: Any) -> None:
    server = build()
    async with Client(server, era=era) as client:
        assert {t["name"] for t in await client.list_tools()} == {"greet", "chatty",
                                                                  "regional"}
        assert (await client.call_tool("greet", {"name": "Ada"})).text == "Hello, Ada!"
        assert (await client.read_resource("test://hello"))["contents"][0]["text"] == "hi"
        prompt = await client.get_prompt("ask", {"topic": "owls"})
        assert prompt["messages"][0]["content"]["text"] == "Tell me about owls"
        assert (await client.call_tool("regional", {"region": "eu-west"})).text == "eu-west"
        with pytest.raises(RPCError) as info:
            await client.call_tool("nope")
        assert info.value.code == INVALID_PARAMS
        with pytest.raises(RPCError) as info:
            await client.request("no/such/method")
        assert info.value.code == METHOD_NOT_FOUND
        if era == "legacy":
            assert client.session_id is not None
            assert len(client._transport.sessions) == 1
        else:
            assert client.session_id is None
    if era == "legacy":
        assert client.session_id is None  # the session was deleted on close


async def test_client_collects_notifications() -> None:
    server = build()
    async with Client(server, era="legacy") as client:
        await client.request("logging/setLevel", {"level": "debug"})
        assert (await client.call_tool("chatty")).text == "done"
        assert any(n.get("method") == "notifications/message" for n in client.notifications)


def test_plugin_gives_user_tests_a_client(tmp_path: Path) -> None:
    """A user's test file, run by pytest with only the plugin: the documented recipe."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent('''
        import pytest
        from tornado_mcp import Server

        @pytest.fixture
        def mcp_server():
            server = Server("mine")

            @server.tool()
            def add(a: int, b: int) -> int:
                return a + b
            return server

        @pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
        async def test_add(mcp_client):
            result = await mcp_client.call_tool("add", {"a": 1, "b": 2})
            assert result.structured == {"result": 3}
    '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path])}
    done = subprocess.run(
        # The plugin comes from the package's pytest11 entry point, as for a user.
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-o", "asyncio_mode=auto", str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
