"""Taking a tool, prompt or resource away at run time, seen by the official Python SDK client.

``server.remove_tool(name)``, ``remove_prompt(name)`` and ``remove_resource(uri)`` stop
offering it; ``server.notify_*_list_changed()`` tells the clients (the removals, like the
``add_*`` calls, notify no one themselves, so a batch of changes is announced once).  Pinned
here, over real HTTP with the ``mcp`` 2.3.0 client:

* in a legacy (2025-11-25) session that has listed the kind, the notification reaches the
  client's message handler on its GET stream, the next list no longer shows the item, and
  using it gets exactly the error a name the server never had gets (tools/call and
  prompts/get: -32602; resources/read: -32002 with ``data.uri``);
* at 2026-07-28 the same removals reach a ``subscriptions/listen`` stream opened for the
  three list changes (``Client.listen``), with the same consequences (an unknown resource is
  -32602 there);
* removing a name that is not registered raises :class:`KeyError`;
* what a decorator declared beside the handler (scopes, bounds) goes with it: a handler
  added again under the name starts afresh.

Every test body runs under ``anyio.fail_after`` and the client has a read timeout; its
response cache is off, so every list is the server's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    Subscription,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_http import LEGACY, MODERN, Running, example_server, running, wait_until

from tornado_mcp import Server
from tornado_mcp.protocol import PROMPTS_GET, RESOURCES_READ, TOOLS_CALL

TEST_TIMEOUT = 30.0
WAIT = 10.0  # seconds for any one client operation

TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Inbox:
    """The SDK client's message handler: the method of every server notification it is
    handed, in order, and a way to await one."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self._arrived = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if isinstance(method, str):
            self.methods.append(method)
            self._arrived.set()

    async def wait_for(self, method: str) -> None:
        """Return once ``method`` has arrived; fail after ``WAIT`` seconds."""
        with anyio.fail_after(WAIT):
            while method not in self.methods:
                self._arrived.clear()
                await self._arrived.wait()


@contextlib.asynccontextmanager
async def legacy_client() -> AsyncIterator[tuple[Running, Client, Inbox]]:
    """The example server on a loopback port and an SDK client in a legacy session whose
    GET stream the server holds (the SDK opens it in the background after ``initialized``)."""
    inbox = Inbox()
    async with running(example_server()) as srv, Client(
            srv.url, mode="legacy", read_timeout_seconds=WAIT, message_handler=inbox,
            cache=None) as client:
        assert client.protocol_version == LEGACY
        session = next(iter(srv.transport.sessions))
        await wait_until(lambda: session.get_channel is not None)
        yield srv, client, inbox


async def refused(call: Callable[[], Awaitable[Any]]) -> MCPError:
    """The :class:`MCPError` that ``call`` raises (failing the test if it returns)."""
    with pytest.raises(MCPError) as info:
        await call()
    return info.value


async def next_event(sub: Subscription) -> Any:
    with anyio.fail_after(WAIT):
        return await sub.__anext__()


# -- legacy sessions: the GET stream ------------------------------------------------------------

async def test_removed_tool_is_announced_unlisted_and_unknown_in_a_legacy_session() -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with legacy_client() as (srv, client, inbox):
            before = [t.name for t in (await client.list_tools()).tools]
            assert "echo" in before
            assert (await client.call_tool("echo", {"text": "still here"})).is_error is False
            assert inbox.methods == []

            srv.server.remove_tool("echo")
            srv.server.notify_tools_list_changed()
            await inbox.wait_for(TOOLS_CHANGED)

            after = [t.name for t in (await client.list_tools()).tools]
            assert after == [name for name in before if name != "echo"]
            gone = await refused(lambda: client.call_tool("echo", {"text": "x"}))
            never = await refused(lambda: client.call_tool("no_such_tool", {}))
            assert (gone.code, gone.message) == (-32602, "Unknown tool: echo")
            assert (never.code, never.message) == (-32602, "Unknown tool: no_such_tool")
            assert inbox.methods == [TOOLS_CHANGED]


async def test_removed_prompt_is_announced_unlisted_and_unknown_in_a_legacy_session() -> None:
    name = "test_simple_prompt"
    with anyio.fail_after(TEST_TIMEOUT):
        async with legacy_client() as (srv, client, inbox):
            before = [p.name for p in (await client.list_prompts()).prompts]
            assert name in before
            await client.get_prompt(name)

            srv.server.remove_prompt(name)
            srv.server.notify_prompts_list_changed()
            await inbox.wait_for(PROMPTS_CHANGED)

            after = [p.name for p in (await client.list_prompts()).prompts]
            assert after == [n for n in before if n != name]
            gone = await refused(lambda: client.get_prompt(name))
            never = await refused(lambda: client.get_prompt("no_such_prompt"))
            assert (gone.code, gone.message) == (-32602, f"Unknown prompt: {name}")
            assert (never.code, never.message) == (-32602, "Unknown prompt: no_such_prompt")
            assert inbox.methods == [PROMPTS_CHANGED]


async def test_removed_resource_is_announced_unlisted_and_not_found_in_a_legacy_session(
        ) -> None:
    uri = "test://static-text"
    with anyio.fail_after(TEST_TIMEOUT):
        async with legacy_client() as (srv, client, inbox):
            before = [str(r.uri) for r in (await client.list_resources()).resources]
            assert uri in before
            await client.read_resource(uri)

            srv.server.remove_resource(uri)
            srv.server.notify_resources_list_changed()
            await inbox.wait_for(RESOURCES_CHANGED)

            after = [str(r.uri) for r in (await client.list_resources()).resources]
            assert after == [u for u in before if u != uri]
            gone = await refused(lambda: client.read_resource(uri))
            never = await refused(lambda: client.read_resource("test://nowhere"))
            assert (gone.code, gone.message, gone.error.data) == (
                -32002, "Resource not found", {"uri": uri})
            assert (never.code, never.message, never.error.data) == (
                -32002, "Resource not found", {"uri": "test://nowhere"})
            assert inbox.methods == [RESOURCES_CHANGED]


# -- 2026-07-28: a subscriptions/listen stream ----------------------------------------------------

async def test_removals_reach_a_listen_stream_at_2026(srv: Running) -> None:
    tool, prompt, uri = "echo", "test_simple_prompt", "test://static-text"
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client(srv.url, read_timeout_seconds=WAIT, cache=None) as client, \
                client.listen(tools_list_changed=True, prompts_list_changed=True,
                              resources_list_changed=True) as sub:
            assert client.protocol_version == MODERN
            assert (sub.honored.tools_list_changed, sub.honored.prompts_list_changed,
                    sub.honored.resources_list_changed) == (True, True, True)

            tools = [t.name for t in (await client.list_tools()).tools]
            srv.server.remove_tool(tool)
            srv.server.notify_tools_list_changed()
            assert await next_event(sub) == ToolsListChanged()
            assert [t.name for t in (await client.list_tools()).tools] == \
                [n for n in tools if n != tool]
            gone = await refused(lambda: client.call_tool(tool, {"text": "x"}))
            assert (gone.code, gone.message) == (-32602, f"Unknown tool: {tool}")

            prompts = [p.name for p in (await client.list_prompts()).prompts]
            srv.server.remove_prompt(prompt)
            srv.server.notify_prompts_list_changed()
            assert await next_event(sub) == PromptsListChanged()
            assert [p.name for p in (await client.list_prompts()).prompts] == \
                [n for n in prompts if n != prompt]
            gone = await refused(lambda: client.get_prompt(prompt))
            assert (gone.code, gone.message) == (-32602, f"Unknown prompt: {prompt}")

            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            srv.server.remove_resource(uri)
            srv.server.notify_resources_list_changed()
            assert await next_event(sub) == ResourcesListChanged()
            assert [str(r.uri) for r in (await client.list_resources()).resources] == \
                [u for u in resources if u != uri]
            gone = await refused(lambda: client.read_resource(uri))
            never = await refused(lambda: client.read_resource("test://nowhere"))
            assert (gone.code, gone.message, gone.error.data) == (
                -32602, "Resource not found", {"uri": uri})
            assert (never.code, never.error.data) == (-32602, {"uri": "test://nowhere"})


# -- what is not there ------------------------------------------------------------------------

def test_removing_a_name_that_is_not_registered_is_a_key_error() -> None:
    server = example_server()
    with pytest.raises(KeyError):
        server.remove_tool("no_such_tool")
    with pytest.raises(KeyError):
        server.remove_prompt("no_such_prompt")
    with pytest.raises(KeyError):
        server.remove_resource("test://nowhere")
    # A resource template is not a resource: remove_resource does not take its URI template.
    with pytest.raises(KeyError):
        server.remove_resource("test://template/{id}/data")
    assert server.get_template("test://template/{id}/data") is not None
    # Removed once, it is not there to remove again.
    server.remove_tool("echo")
    with pytest.raises(KeyError):
        server.remove_tool("echo")
    assert server.get_tool("echo") is None


def test_a_removed_handlers_scopes_and_bounds_go_with_it() -> None:
    server = Server("forget")

    @server.tool(scopes=["notes:write"], timeout=1.0)
    async def edit() -> str:
        return "edited"

    @server.prompt(scopes=["notes:read"], max_concurrency=1)
    async def review() -> str:
        return "review"

    @server.resource("note://one", scopes=["notes:read"], timeout=2.0)
    async def one() -> str:
        return "one"

    declared = [(TOOLS_CALL, "edit"), (PROMPTS_GET, "review"), (RESOURCES_READ, "note://one")]
    for method, name in declared:
        assert server.scope_rules.needed(method, name) and (method, name) in server.call_bounds
    server.remove_tool("edit")
    server.remove_prompt("review")
    server.remove_resource("note://one")
    for method, name in declared:
        assert not server.scope_rules.needed(method, name), name
        assert (method, name) not in server.call_bounds, name
    assert not server.scope_rules.active

    @server.tool()
    async def edit() -> str:  # noqa: F811 - the same name, added again without scopes
        return "edited again"

    assert not server.scope_rules.needed(TOOLS_CALL, "edit")
