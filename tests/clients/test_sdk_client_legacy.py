"""The official Python SDK client (``mcp`` 2.3.0 from PyPI) against our server, legacy mode.

The client runs in the test's own event loop next to the in-process Tornado server, forced
into the ``initialize`` handshake with ``mode="legacy"``.  Every test body runs under
``anyio.fail_after`` (the SDK's task groups must be entered and left in the same task, so
per-await ``asyncio.wait_for`` would not do), and the client has a read timeout too.
"""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_http import LEGACY, Running, example_server, running, wait_until

TEST_TIMEOUT = 30.0
WAIT = 10.0

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@contextlib.asynccontextmanager
async def connected(**client_kwargs: Any) -> AsyncIterator[tuple[Running, Client]]:
    """Our server on a loopback port and an SDK client connected to it in legacy mode."""
    async with running(example_server()) as srv:
        client = Client(srv.url, mode="legacy", read_timeout_seconds=WAIT, **client_kwargs)
        async with client:
            yield srv, client


def text_of(result: types.CallToolResult | types.GetPromptResult) -> str:
    if isinstance(result, types.CallToolResult):
        block = result.content[0]
    else:
        block = result.messages[0].content
    assert isinstance(block, types.TextContent), block
    return block.text


# -- handshake and tools ----------------------------------------------------------------------

async def test_handshake_negotiates_a_legacy_session_and_delete_on_exit() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with running(example_server()) as srv:
            async with Client(srv.url, mode="legacy", read_timeout_seconds=WAIT) as client:
                assert client.protocol_version == LEGACY
                assert client.server_info is not None
                assert client.server_info.name == "tornado-mcp-conformance"
                assert client.instructions == "Conformance fixtures for tornado-mcp."
                caps = client.server_capabilities
                assert caps.tools is not None and caps.resources is not None
                assert caps.resources.subscribe is True
                assert len(srv.transport.sessions) == 1
                session = next(iter(srv.transport.sessions))
                assert session.protocol_version == LEGACY
            # The SDK DELETEs its session when it closes.
            await wait_until(lambda: len(srv.transport.sessions) == 0)


async def test_tools_list_and_call() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            assert {"echo", "test_simple_text", "touch_resource"} <= names
            echo = next(t for t in tools.tools if t.name == "echo")
            assert echo.input_schema["required"] == ["text"]
            r = await client.call_tool("echo", {"text": "héllo"})
            assert not r.is_error and text_of(r) == "héllo"
            simple = await client.call_tool("test_simple_text", {})
            assert text_of(simple) == "This is a simple text response for testing."
            image = await client.call_tool("test_image_content", {})
            assert isinstance(image.content[0], types.ImageContent)
            assert image.content[0].mime_type == "image/png"


async def test_tool_errors_through_the_sdk() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            bad = await client.call_tool("echo", {"text": 5})
            assert bad.is_error and "Invalid arguments" in text_of(bad)
            failing = await client.call_tool("test_error_handling", {})
            assert failing.is_error
            assert text_of(failing) == "This tool intentionally returns an error for testing"
            with pytest.raises(MCPError) as info:
                await client.call_tool("no_such_tool", {})
            assert info.value.code == -32602


# -- resources ----------------------------------------------------------------------------------

async def test_resources_list_read_and_templates() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            listed = await client.list_resources()
            uris = {str(r.uri) for r in listed.resources}
            assert {"test://static-text", "test://static-binary",
                    "test://watched-resource"} <= uris
            read = await client.read_resource("test://static-text")
            content = read.contents[0]
            assert isinstance(content, types.TextResourceContents)
            assert content.text == "This is the content of the static text resource."
            assert content.mime_type == "text/plain"
            blob = await client.read_resource("test://static-binary")
            assert isinstance(blob.contents[0], types.BlobResourceContents)
            assert blob.contents[0].mime_type == "image/png"
            templates = await client.list_resource_templates()
            assert "test://template/{id}/data" in {t.uri_template
                                                   for t in templates.resource_templates}
            filled = await client.read_resource("test://template/42/data")
            body = filled.contents[0]
            assert isinstance(body, types.TextResourceContents)
            assert '"id":"42"' in body.text
            with pytest.raises(MCPError) as info:
                await client.read_resource("test://nowhere")
            assert info.value.code == -32002


# -- prompts and completion -----------------------------------------------------------------------

async def test_prompts_list_and_get_with_arguments() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            prompts = await client.list_prompts()
            by_name = {p.name: p for p in prompts.prompts}
            args = by_name["test_prompt_with_arguments"].arguments or []
            assert [(a.name, a.required) for a in args] == [("arg1", True), ("arg2", True)]
            got = await client.get_prompt("test_prompt_with_arguments",
                                          {"arg1": "alpha", "arg2": "beta"})
            assert text_of(got) == "Prompt with arguments: arg1='alpha', arg2='beta'"
            simple = await client.get_prompt("test_simple_prompt")
            assert text_of(simple) == "This is a simple prompt for testing."
            with pytest.raises(MCPError) as info:
                await client.get_prompt("test_prompt_with_arguments", {"arg1": "only"})
            assert info.value.code == -32602


async def test_completion() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            ref = types.PromptReference(name="test_prompt_with_arguments")
            done = await client.complete(ref, {"name": "arg1", "value": "par"})
            assert done.completion.values == ["paris", "park", "party"]
            narrower = await client.complete(ref, {"name": "arg1", "value": "pari"})
            assert narrower.completion.values == ["paris"]
            none = await client.complete(ref, {"name": "arg2", "value": "p"})
            assert none.completion.values == []


# -- request-scoped notifications -----------------------------------------------------------------

async def test_progress_notifications_reach_the_progress_callback() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            r = await client.call_tool("test_tool_with_progress", {},
                                       progress_callback=on_progress)
            assert text_of(r) not in ("", "None")  # the tool echoes the progress token
            await wait_until(lambda: len(seen) == 3)
            assert [(p, t) for p, t, _ in seen] == [(0, 100), (50, 100), (100, 100)]
            assert seen[1][2] == "Completed step 50 of 100"
            plain = await client.call_tool("test_tool_with_progress", {})
            assert text_of(plain) == "None"  # no callback, no token, no progress


async def test_logging_after_set_logging_level() -> None:
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(logging_callback=on_log) as (_srv, client):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.set_logging_level("debug")
            r = await client.call_tool("test_tool_with_logging", {})
            assert text_of(r) == "Tool with logging executed successfully"
            await wait_until(lambda: len(logs) == 3)
            assert [entry.data for entry in logs] == ["Tool execution started",
                                                      "Tool processing data",
                                                      "Tool execution completed"]
            assert {entry.level for entry in logs} == {"info"}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.set_logging_level("error")
            await client.call_tool("test_tool_with_logging", {})  # info < error: silent
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.set_logging_level("info")
            await client.call_tool("test_logging_tool", {})  # barrier: one info log
            await wait_until(lambda: len(logs) == 4)
            assert logs[3].data == "test_logging_tool ran"


# -- server-to-client requests ------------------------------------------------------------------

async def test_sampling_round_trip_through_the_callback() -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def sample(ctx: ClientRequestContext, params: types.CreateMessageRequestParams
                     ) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(text="Paris"))

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(sampling_callback=sample) as (_srv, client):
            r = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
            assert text_of(r) == "LLM response: Paris"
            assert len(asked) == 1 and asked[0].max_tokens == 100
            first = asked[0].messages[0].content
            assert isinstance(first, types.TextContent) and first.text == "Capital of France?"


async def test_sampling_refused_by_the_callback_is_an_error() -> None:
    async def refuse(ctx: ClientRequestContext, params: types.CreateMessageRequestParams
                     ) -> types.ErrorData:
        return types.ErrorData(code=-1, message="User rejected")

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(sampling_callback=refuse) as (_srv, client):
            with pytest.raises(MCPError) as info:
                await client.call_tool("test_sampling", {"prompt": "x"})
            assert info.value.code == -32603 and "User rejected" in info.value.message


async def test_sampling_without_the_capability_is_refused() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected() as (_srv, client):
            with pytest.raises(MCPError) as info:
                await client.call_tool("test_sampling", {"prompt": "x"})
            assert info.value.code == -32021


@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_elicitation_round_trip_through_the_callback(action: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(ctx: ClientRequestContext, params: types.ElicitRequestParams
                     ) -> types.ElicitResult:
        asked.append(params)
        if action == "accept":
            return types.ElicitResult(action="accept",
                                      content={"username": "ada", "email": "ada@example.com"})
        return types.ElicitResult(action="decline")

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(elicitation_callback=elicit) as (_srv, client):
            r = await client.call_tool("test_elicitation", {"message": "Who are you?"})
            if action == "accept":
                assert text_of(r) == ("User response: action=accept, content={'username': "
                                      "'ada', 'email': 'ada@example.com'}")
            else:
                assert text_of(r) == "User response: action=decline, content=None"
            assert len(asked) == 1 and asked[0].message == "Who are you?"


async def test_roots_round_trip_through_the_legacy_input_shim() -> None:
    async def roots(ctx: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri="file:///srv/data", name="data")])

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(list_roots_callback=roots) as (_srv, client):
            r = await client.call_tool("test_input_required_result_list_roots", {})
            assert text_of(r) == "Client roots: file:///srv/data"


# -- session-scoped notifications on the GET stream ----------------------------------------------

async def test_subscribe_then_touch_delivers_resources_updated_on_the_get_stream() -> None:
    received: list[types.ServerNotification] = []
    arrived = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            received.append(message)
            arrived.set()

    uri = "test://watched-resource"
    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(message_handler=on_message) as (srv, client):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                assert await client.subscribe_resource(uri) is not None
            session = next(iter(srv.transport.sessions))
            # The SDK opens its GET stream in the background after `initialized`.
            await wait_until(lambda: session.get_channel is not None)
            # Touch from another (raw) session: the only way back to the SDK client is its
            # GET stream, since this request's own stream belongs to the other session.
            other = await srv.initialize()
            touch = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "touch_resource",
                                               "arguments": {"uri": uri}}}, session=other)
            assert touch.status == 200 and [m.get("id") for m in touch.messages] == [1]
            await arrived.wait()
            updated = [n for n in received
                       if isinstance(n, types.ResourceUpdatedNotification)]
            assert len(updated) == 1 and str(updated[0].params.uri) == uri
            # Unsubscribed, a touch reaches nobody: prove it with a broadcast barrier.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.unsubscribe_resource(uri)
            await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                            "params": {"name": "touch_resource", "arguments": {"uri": uri}}},
                           session=other)
            srv.server.notify_tools_list_changed()
            await wait_until(lambda: any(isinstance(n, types.ToolListChangedNotification)
                                         for n in received))
            assert len([n for n in received
                        if isinstance(n, types.ResourceUpdatedNotification)]) == 1


async def test_list_changed_broadcast_reaches_the_message_handler() -> None:
    received: list[Any] = []

    async def on_message(message: Any) -> None:
        received.append(message)

    with anyio.fail_after(TEST_TIMEOUT):
        async with connected(message_handler=on_message) as (srv, client):
            session = next(iter(srv.transport.sessions))
            await wait_until(lambda: session.get_channel is not None)
            r = await client.call_tool("test_trigger_tool_change", {})
            assert text_of(r) == "Added dynamic_tool_1"
            await wait_until(lambda: any(isinstance(n, types.ToolListChangedNotification)
                                         for n in received))
            tools = await client.list_tools(cache_mode="refresh")
            assert "dynamic_tool_1" in {t.name for t in tools.tools}
