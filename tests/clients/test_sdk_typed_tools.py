"""The official Python SDK client (``mcp`` 2.3.0) calls typed tools in both modes: it
reads their input and output schemas, sends dataclass / TypedDict / Enum / nested-list
arguments, and validates the ``structuredContent`` it gets against ``outputSchema``
(``ClientSession.validate_tool_result``) before handing it over."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest
import typed_server
from mcp import Client
from mcp_http import LEGACY, MODERN, running

STEP = 10.0

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sdk_client_calls_typed_tools(mode: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with running(typed_server.build()) as srv:
            with anyio.fail_after(4 * STEP):
                async with Client(srv.url, mode=mode, read_timeout_seconds=STEP) as client:
                    assert client.protocol_version == (MODERN if mode == "auto" else LEGACY)
                    listed = {t.name: t for t in (await client.list_tools()).tools}
                    plan = listed["plan_trip"]
                    assert plan.output_schema is not None
                    assert plan.input_schema["properties"]["mode"]["enum"] == ["train", "bike"]
                    assert plan.input_schema["properties"]["traveller"]["properties"][
                        "age"]["description"] == "Their age in years."

                    result = await client.call_tool("plan_trip", typed_server.ARGS)
                    assert not result.is_error, result
                    assert result.structured_content == typed_server.EXPECTED
                    received = typed_server.RECEIVED
                    assert received["traveller"] == typed_server.Traveller("Ada", 36)
                    assert received["mode"] is typed_server.Mode.TRAIN

                    total = await client.call_tool("total", {"values": [1.5, 2.5]})
                    assert total.structured_content == {"result": 4.0}

                    bad = await client.call_tool("plan_trip", {
                        **typed_server.ARGS, "mode": "plane"})
                    assert bad.is_error
                    assert "arguments.mode must be one of" in bad.content[0].text
