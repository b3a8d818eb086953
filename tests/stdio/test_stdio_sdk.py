"""The official Python SDK's stdio client (``mcp`` 2.3.0) launching
``python -m tornado_mcp stdio examples/conformance_server.py:build_server`` as a real
subprocess: tools, resources, prompts, progress and log notifications, sampling.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

REPO = Path(__file__).resolve().parents[2]
TEST_TIMEOUT = 60.0
WAIT = 20.0

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "tornado_mcp", "stdio", "examples/conformance_server.py:build_server",
              *extra],
        cwd=str(REPO), env={"PYTHONPATH": str(REPO)})


def text_of(result: Any) -> str:
    block = result.content[0] if isinstance(result, types.CallToolResult) \
        else result.messages[0].content
    assert isinstance(block, types.TextContent), block
    return block.text


async def test_tools_resources_prompts_over_stdio() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client(params(), mode="legacy", read_timeout_seconds=WAIT) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_info is not None
            assert client.server_info.name == "tornado-mcp-conformance"
            names = {t.name for t in (await client.list_tools()).tools}
            assert {"echo", "test_simple_text", "test_reconnection"} <= names
            assert text_of(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
            error = await client.call_tool("test_error_handling", {})
            assert error.is_error
            resource = await client.read_resource("test://static-text")
            first = resource.contents[0]
            assert isinstance(first, types.TextResourceContents)
            assert first.text == "This is the content of the static text resource."
            prompt = await client.get_prompt("test_simple_prompt")
            assert text_of(prompt) == "This is a simple prompt for testing."


async def test_progress_and_log_notifications_over_stdio() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total, message))

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params.data)

    with anyio.fail_after(TEST_TIMEOUT):
        async with Client(params(), mode="legacy", read_timeout_seconds=WAIT,
                          logging_callback=on_log) as client:
            r = await client.call_tool("test_tool_with_progress", {},
                                       progress_callback=on_progress)
            assert not r.is_error
            assert progress == [(0, 100, "Completed step 0 of 100"),
                                (50, 100, "Completed step 50 of 100"),
                                (100, 100, "Completed step 100 of 100")]
            r = await client.call_tool("test_tool_with_logging", {})
            assert text_of(r) == "Tool with logging executed successfully"
            assert logs == ["Tool execution started", "Tool processing data",
                            "Tool execution completed"]


async def test_sampling_request_to_the_client_over_stdio() -> None:
    async def sample(ctx: ClientRequestContext,
                     p: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="from the client"),
            model="test-model")

    with anyio.fail_after(TEST_TIMEOUT):
        async with Client(params(), mode="legacy", read_timeout_seconds=WAIT,
                          sampling_callback=sample) as client:
            r = await client.call_tool("test_sampling", {"prompt": "hi"})
            assert text_of(r) == "LLM response: from the client"
