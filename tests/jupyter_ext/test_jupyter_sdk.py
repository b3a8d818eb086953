"""The official Python SDK client against MCP inside a real Jupyter server, both eras.

The client sends Jupyter's token (``Authorization: Bearer`` or Jupyter's ``token``
scheme), lists the tools, reads a notebook as structured content, and is told when the
notebook is saved through Jupyter's own contents API (``PUT /api/contents/...``): on a
``subscriptions/listen`` stream at 2026-07-28, on its GET stream after
``resources/subscribe`` in the legacy era.  Every await is bounded.
"""

from __future__ import annotations

import json
import signal
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared._httpx_utils import create_mcp_http_client

from .jupyter_proc import DEMO_NOTEBOOK, JupyterProc

STEP = 15.0  # seconds for any one client operation
DEMO_URI = "notebook://demo.ipynb"

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.xdist_group("jupyter_sdk")]  # one worker: its Jupyter servers


@asynccontextmanager
async def client_for(jp: JupyterProc, scheme: str = "Bearer", **kwargs: Any
                     ) -> AsyncIterator[Client]:
    http = create_mcp_http_client(headers=jp.auth(scheme))
    async with http, Client(streamable_http_client(jp.mcp_url, http_client=http),
                            read_timeout_seconds=STEP, **kwargs) as client:
        yield client


async def save_through_jupyter(jp: JupyterProc, path: str, source: str) -> None:
    notebook = json.loads(json.dumps(DEMO_NOTEBOOK))
    notebook["cells"][1]["source"] = source
    async with httpx.AsyncClient(timeout=STEP) as http:
        r = await http.put(f"{jp.base}/api/contents/{path}", headers=jp.auth("token"),
                           json={"type": "notebook", "format": "json", "content": notebook})
    assert r.status_code == 200, r.text


def text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def test_modern_client_lists_tools_and_reads_a_notebook(jupyter: JupyterProc) -> None:
    with anyio.fail_after(4 * STEP):
        async with client_for(jupyter) as client:
            assert client.protocol_version == "2026-07-28"
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {"list_files", "read_file", "read_notebook", "run_code", "shout",
                             "whoami", "word_count"}
            read = await client.call_tool("read_notebook", {"path": "demo.ipynb"})
            assert not read.is_error
            assert read.structured_content == {
                "path": "demo.ipynb", "uri": DEMO_URI, "cells": [
                    {"index": 0, "cell_type": "code", "source": "print('hi')",
                     "execution_count": 1,
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]},
                    {"index": 1, "cell_type": "markdown", "source": "# Notes",
                     "execution_count": None, "outputs": []}]}
            listed = await client.call_tool("list_files", {"path": ""})
            entries = listed.structured_content["entries"]
            assert [(e["name"], e["type"]) for e in entries] == [
                ("demo.ipynb", "notebook"), ("sub", "directory")]
            notes = await client.call_tool("read_file", {"path": "sub/notes.txt"})
            assert text_of(notes) == "first line\n"


async def test_legacy_client_with_jupyters_token_scheme(jupyter: JupyterProc) -> None:
    with anyio.fail_after(4 * STEP):
        async with client_for(jupyter, "token", mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            shout = await client.call_tool("shout", {"text": "hello"})
            assert text_of(shout) == "HELLO!"
            counted = await client.call_tool("word_count", {"text": "one two three"})
            assert counted.structured_content == {"result": 3}
            read = await client.read_resource(DEMO_URI)
            assert json.loads(read.contents[0].text)["cells"][1]["source"] == "# Notes"
            missing = await client.call_tool("read_notebook", {"path": "nope.ipynb"})
            assert missing.is_error
            assert "No such file or directory: nope.ipynb" in text_of(missing)


async def test_listen_stream_is_told_when_jupyter_saves_the_notebook(
        jupyter: JupyterProc) -> None:
    with anyio.fail_after(4 * STEP):
        async with client_for(jupyter) as client, client.listen(
                resource_subscriptions=[DEMO_URI]) as sub:
            assert sub.honored.resource_subscriptions == [DEMO_URI]
            await save_through_jupyter(jupyter, "demo.ipynb", "# Saved by Jupyter")
            with anyio.fail_after(STEP):
                assert await sub.__anext__() == ResourceUpdated(uri=DEMO_URI)
            read = await client.call_tool("read_notebook", {"path": "demo.ipynb"})
            assert read.structured_content["cells"][1]["source"] == "# Saved by Jupyter"


async def test_legacy_subscription_is_told_on_its_get_stream(jupyter: JupyterProc) -> None:
    updated = anyio.Event()
    received: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            received.append(str(message.params.uri))
            updated.set()

    with anyio.fail_after(5 * STEP):
        async with client_for(jupyter, mode="legacy", message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.subscribe_resource(DEMO_URI)
            await wait_for_get_stream(jupyter)
            await save_through_jupyter(jupyter, "demo.ipynb", "# Saved again")
            with anyio.fail_after(STEP):
                await updated.wait()
            assert received == [DEMO_URI]


async def wait_for_get_stream(jp: JupyterProc) -> None:
    """Until the dashboard's API shows a session holding its GET stream (the client opens
    it in the background after initialize)."""
    async with httpx.AsyncClient(timeout=STEP) as http:
        while True:
            r = await http.get(f"{jp.mcp_url}/admin/api/sessions", headers=jp.auth())
            assert r.status_code == 200, r.text
            if any(s["has_get_stream"] for s in r.json()["items"]):
                return
            await anyio.sleep(0.05)


async def test_jupyter_shutdown_ends_listen_streams_with_their_final_result(
        tmp_path: Path) -> None:
    jp = JupyterProc(tmp_path).wait()
    try:
        with anyio.fail_after(4 * STEP):
            async with client_for(jp) as client, client.listen(
                    resource_subscriptions=[DEMO_URI]) as sub:
                jp.proc.send_signal(signal.SIGTERM)  # Jupyter stops its extensions first
                with anyio.fail_after(STEP):
                    remaining = [event async for event in sub]  # no SubscriptionLost
                assert remaining == []
            code = await anyio.to_thread.run_sync(lambda: jp.proc.wait(timeout=STEP))
        assert code == 0, jp.log[-3000:]  # a clean exit, kernels and all
    finally:
        jp.stop()
