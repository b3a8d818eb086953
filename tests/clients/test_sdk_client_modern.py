"""The official Python SDK client (``mcp`` 2.3.0) against our server, both eras.

In its default ``mode="auto"`` the client probes ``server/discover`` at 2026-07-28 and adopts
the modern era; ``Client.listen()`` opens a ``subscriptions/listen`` stream.  In
``mode="legacy"`` it performs the ``initialize`` handshake and gets resource updates on its
GET stream after ``resources/subscribe``.  Every await is bounded.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, ToolsListChanged
from mcp_http import MODERN, Running, example_server, running, wait_until

WATCHED = "test://watched-resource"
STEP = 10.0  # seconds for any one client operation

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def next_event(sub: Any) -> Any:
    with anyio.fail_after(STEP):
        return await sub.__anext__()


async def test_auto_mode_negotiates_2026(srv: Running) -> None:
    with anyio.fail_after(STEP):
        async with Client(srv.url, read_timeout_seconds=STEP) as client:
            assert client.protocol_version == MODERN
            assert client.server_info is not None
            assert client.server_info.name == "tornado-mcp-conformance"
            caps = client.server_capabilities
            assert caps.tools is not None and caps.tools.list_changed is True
            assert caps.resources is not None and caps.resources.subscribe is True
            assert client.instructions == "Conformance fixtures for tornado-mcp."
            # Stateless: no session was ever created on the server.
            assert len(srv.transport.sessions) == 0


async def test_auto_mode_calls_tools_reads_resources_gets_prompts(srv: Running) -> None:
    with anyio.fail_after(4 * STEP):
        async with Client(srv.url, read_timeout_seconds=STEP) as client:
            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            assert {"echo", "touch_resource", "test_x_mcp_header"} <= names
            echoed = await client.call_tool("echo", {"text": "héllo"})
            assert text_of(echoed) == "héllo"
            assert not echoed.is_error
            # A tool whose argument travels in an Mcp-Param-Region header.
            region = await client.call_tool("test_x_mcp_header", {"region": "eu-west-1"})
            assert text_of(region) == "Region: eu-west-1"
            failing = await client.call_tool("test_error_handling", {})
            assert failing.is_error
            read = await client.read_resource("test://static-text")
            assert read.contents[0].text == "This is the content of the static text resource."
            templated = await client.read_resource("test://template/42/data")
            assert '"id":"42"' in templated.contents[0].text
            prompt = await client.get_prompt("test_prompt_with_arguments",
                                             {"arg1": "a", "arg2": "b"})
            assert prompt.messages[0].content.text == \
                "Prompt with arguments: arg1='a', arg2='b'"
            listed = await client.list_resources()
            assert any(str(r.uri) == WATCHED for r in listed.resources)
            assert len(srv.transport.sessions) == 0


async def test_auto_mode_drives_input_required_results(srv: Running) -> None:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": "Grace"})

    async def sample(context: Any, params: Any) -> types.CreateMessageResult:
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text="Paris"))

    with anyio.fail_after(3 * STEP):
        async with Client(srv.url, read_timeout_seconds=STEP, elicitation_callback=elicit,
                          sampling_callback=sample) as client:
            assert client.protocol_version == MODERN
            hello = await client.call_tool("test_input_required_result_elicitation", {})
            assert text_of(hello) == "Hello, Grace!"
            sampled = await client.call_tool("test_input_required_result_sampling", {})
            assert text_of(sampled) == "Sampling said: Paris"
            sealed = await client.call_tool("test_input_required_result_request_state", {})
            assert text_of(sealed) == "state-ok: request-state-nonce"


async def test_listen_receives_a_resource_update_and_a_tools_change(srv: Running) -> None:
    with anyio.fail_after(6 * STEP):
        async with Client(srv.url, read_timeout_seconds=STEP) as client, client.listen(
                tools_list_changed=True, resource_subscriptions=[WATCHED]) as sub:
            assert sub.honored.tools_list_changed is True
            assert sub.honored.resource_subscriptions == [WATCHED]
            assert len(srv.transport.listen_index) == 1
            touched = await client.call_tool("touch_resource", {"uri": WATCHED})
            assert text_of(touched) == f"Touched {WATCHED}"
            assert await next_event(sub) == ResourceUpdated(uri=WATCHED)
            changed = await client.call_tool("test_trigger_tool_change", {})
            assert text_of(changed) == "Added dynamic_tool_1"
            assert await next_event(sub) == ToolsListChanged()
            tools = await client.list_tools()
            assert "dynamic_tool_1" in {t.name for t in tools.tools}
        # Leaving the listen block closes the stream: its slot is freed.
        await wait_until(lambda: len(srv.transport.listen_index) == 0)


async def test_listen_ends_gracefully_on_server_close(srv: Running) -> None:
    with anyio.fail_after(4 * STEP):
        async with Client(srv.url, read_timeout_seconds=STEP) as client, client.listen(
                tools_list_changed=True) as sub:
            await srv.transport.close()
            with anyio.fail_after(STEP):
                remaining = [event async for event in sub]  # ends without SubscriptionLost
            assert remaining == []


async def test_auto_mode_falls_back_on_a_legacy_only_server() -> None:
    async with running(example_server(), protocol_versions=["2025-11-25"]) as srv:
        with anyio.fail_after(3 * STEP):
            async with Client(srv.url, read_timeout_seconds=STEP) as client:
                assert client.protocol_version == "2025-11-25"
                assert text_of(await client.call_tool("echo", {"text": "x"})) == "x"


async def test_legacy_mode_still_works(srv: Running) -> None:
    with anyio.fail_after(4 * STEP):
        async with Client(srv.url, mode="legacy", read_timeout_seconds=STEP) as client:
            assert client.protocol_version == "2025-11-25"
            assert len(srv.transport.sessions) == 1
            assert text_of(await client.call_tool("echo", {"text": "legacy"})) == "legacy"
            read = await client.read_resource("test://static-text")
            assert read.contents[0].text == "This is the content of the static text resource."
            prompt = await client.get_prompt("test_simple_prompt")
            assert prompt.messages[0].content.text == "This is a simple prompt for testing."
        await wait_until(lambda: len(srv.transport.sessions) == 0)  # DELETE on exit


async def test_legacy_mode_subscription_gets_updates_on_its_get_stream(srv: Running) -> None:
    received: list[Any] = []
    got_update = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
                message, types.ResourceUpdatedNotification):
            received.append(message)
            got_update.set()

    with anyio.fail_after(4 * STEP):
        async with Client(srv.url, mode="legacy", read_timeout_seconds=STEP,
                          message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(WATCHED)
            # The client opens its GET stream in the background: wait until the server holds it.
            await wait_until(lambda: any(s.has_get_stream
                                         for s in srv.transport.snapshot().sessions))
            # Another client touches the resource: the update reaches only the GET stream.
            other = await srv.initialize(client_name="toucher")
            r = await srv.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "touch_resource",
                                           "arguments": {"uri": WATCHED}}}, session=other)
            assert r.messages[-1]["result"]["content"][0]["text"] == f"Touched {WATCHED}"
            with anyio.fail_after(STEP):
                await got_update.wait()
            assert str(received[0].params.uri) == WATCHED
