"""URL-mode elicitation (``ctx.elicit_url``, MCP 2025-11-25) with the official Python SDK client.

The ``mcp`` 2.3.0 client does URL mode: given an ``elicitation_callback`` it declares
``elicitation: {form: {}, url: {}}`` (both modes, always) and hands the callback an
``ElicitRequestURLParams`` (``mode="url"``, ``message``, ``url``, ``elicitation_id``), in a
legacy session (a server-to-client request) and at 2026-07-28 (an input-required round the
client answers and retries).  Pinned here, over real HTTP:

* ``ctx.elicit_url(message, url, elicitation_id)`` reaches that callback with all four, and
  the tool gets the client's answer (``{"action": "accept"}`` or ``"decline"``, no
  ``content``), in both eras;
* a client without ``elicitation.url`` gets -32021 "Missing required client capability"
  with ``data.requiredCapabilities == {"elicitation": {"url": {}}}`` (``_ask`` checks the
  capability before anything is sent), and the tool never gets an answer.  The SDK cannot
  declare form mode alone, so a form-only client (``elicitation: {form: {}}``, or the
  pre-2025-11-25 ``elicitation: {}``) is played with raw HTTP: refused the same way (HTTP
  400 at 2026-07-28), while a form question still reaches it.

Every test body runs under ``anyio.fail_after`` and the client has a read timeout.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp_http import (
    LEGACY,
    MODERN,
    Running,
    assert_refused,
    example_server,
    final,
    modern_meta,
    result_of,
    rpc,
    running,
)

from tornado_mcp import Context, Server

TEST_TIMEOUT = 30.0
WAIT = 10.0  # seconds for any one client operation

MESSAGE = "Connect your Example account to continue"
URL = "https://auth.example.com/connect?state=abc123"
ELICITATION_ID = "elicit-abc123"
NEEDS_URL: dict[str, Any] = {"requiredCapabilities": {"elicitation": {"url": {}}}}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def url_server() -> tuple[Server, list[dict[str, Any]]]:
    """The example server plus ``connect_account`` (asks in URL mode) and ``ask_name``
    (asks with a form); the answers ``connect_account`` got, in order."""
    server = example_server()
    answers: list[dict[str, Any]] = []

    @server.tool(description="Sends the user to a URL to connect an account")
    async def connect_account(ctx: Context) -> str:
        answer = await ctx.elicit_url(MESSAGE, URL, ELICITATION_ID)
        answers.append(answer)
        return f"action={answer.get('action')}"

    @server.tool(description="Asks for a name with a form")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object",
                                            "properties": {"name": {"type": "string"}}})
        return f"action={answer.get('action')}"

    return server, answers


@contextlib.asynccontextmanager
async def serving() -> AsyncIterator[tuple[Running, list[dict[str, Any]]]]:
    server, answers = url_server()
    async with running(server) as srv:
        yield srv, answers


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


# -- the SDK client declares elicitation.url ----------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("action", ["accept", "decline"])
async def test_elicit_url_reaches_the_sdk_callback_and_the_tool_gets_the_answer(
        mode: str, action: str) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams
                     ) -> types.ElicitResult | types.ErrorData:
        asked.append(params)
        return types.ElicitResult(action="accept" if action == "accept" else "decline")

    with anyio.fail_after(TEST_TIMEOUT):
        async with serving() as (srv, answers), Client(
                srv.url, mode=mode, read_timeout_seconds=WAIT,
                elicitation_callback=elicit) as client:
            assert client.protocol_version == (LEGACY if mode == "legacy" else MODERN)
            if mode == "legacy":
                session = next(iter(srv.transport.sessions))
                assert session.client_capabilities["elicitation"] == {"form": {}, "url": {}}
            r = await client.call_tool("connect_account", {})
            assert not r.is_error and text_of(r) == f"action={action}"

    assert len(asked) == 1
    params = asked[0]
    assert isinstance(params, types.ElicitRequestURLParams), params
    assert (params.mode, params.message, params.url, params.elicitation_id) == (
        "url", MESSAGE, URL, ELICITATION_ID)
    # URL mode carries no content back: the answer is the action alone.
    assert answers == [{"action": action}]


# -- a client without elicitation.url -----------------------------------------------------------

@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_sdk_client_without_elicitation_gets_missing_capability(mode: str) -> None:
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving() as (srv, answers), Client(
                srv.url, mode=mode, read_timeout_seconds=WAIT) as client:
            with pytest.raises(MCPError) as info:
                await client.call_tool("connect_account", {})
    err = info.value
    assert (err.code, err.message, err.error.data) == (
        -32021, "Missing required client capability", NEEDS_URL)
    assert answers == []


@pytest.mark.parametrize("elicitation", [{"form": {}}, {}])
async def test_a_form_only_legacy_client_is_refused_url_mode(
        elicitation: dict[str, Any]) -> None:
    """Raw HTTP: the SDK client always declares both modes."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving() as (srv, answers):
            sid = await srv.initialize(capabilities={"elicitation": elicitation})
            reply = await srv.post(rpc("tools/call", {"name": "connect_account",
                                                      "arguments": {}}, 2), session=sid)
            err = final(reply)
            assert err["id"] == 2
            assert err["error"] == {"code": -32021,
                                    "message": "Missing required client capability",
                                    "data": NEEDS_URL}
            assert answers == []


@pytest.mark.parametrize("elicitation", [{"form": {}}, {}])
async def test_a_form_only_2026_client_is_refused_url_mode_but_asked_a_form(
        elicitation: dict[str, Any]) -> None:
    """Raw HTTP: the SDK client always declares both modes."""
    meta = modern_meta({"elicitation": elicitation})
    with anyio.fail_after(TEST_TIMEOUT):
        async with serving() as (srv, answers):
            refused = await srv.modern("tools/call", {"name": "connect_account",
                                                      "arguments": {}}, meta=meta)
            err = assert_refused(refused, 400, -32021, request_id=1)
            assert err == {"code": -32021, "message": "Missing required client capability",
                           "data": NEEDS_URL}
            assert answers == []
            # The same client is asked a form question: only URL mode needs elicitation.url.
            form = result_of(await srv.modern("tools/call", {"name": "ask_name",
                                                             "arguments": {}}, meta=meta))
            assert form["resultType"] == "input_required"
            [question] = form["inputRequests"].values()
            assert question["method"] == "elicitation/create"
            assert question["params"]["mode"] == "form"
