"""The official Python SDK client (``mcp`` 2.3.0) with its own OAuth support against our
endpoint as an OAuth 2.1 resource, and a real authorization server (authlib) the test runs.

The client is refused with 401, discovers our RFC 9728 metadata from the challenge, then
the authorization server's metadata, registers itself (RFC 7591), goes through the
authorization-code grant with PKCE naming our URL as the resource (RFC 8707), and calls
tools with the JWT it got.  A tool needing a scope it lacks answers 403
``insufficient_scope``; the client steps up and the call succeeds.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from oauth_support import ADMIN, TOOLS, Browser, MemoryStorage, oauth_setup, provider

STEP = 30.0

pytestmark = [pytest.mark.timeout(90),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_sdk_client_discovers_authorizes_and_steps_up(mode: str) -> None:
    async with oauth_setup() as setup:
        browser, storage = Browser(), MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(setup.srv.url, browser, storage),
                                  timeout=STEP)
        with anyio.fail_after(STEP):
            async with http, Client(streamable_http_client(setup.srv.url, http_client=http),
                                    mode=mode, read_timeout_seconds=STEP) as client:
                me = structured(await client.call_tool("whoami", {}))
                assert me == {"subject": "alice", "scopes": [TOOLS], "method": "bearer",
                              "authenticated": True}
                assert browser.visits == 1
                assert storage.tokens is not None and storage.tokens.scope == TOOLS
                # a tool behind mcp:admin: 403 insufficient_scope, the client steps up
                admin = structured(await client.call_tool("admin_only", {}))
                assert admin == {"subject": "alice", "scopes": [ADMIN, TOOLS]}
                assert browser.visits == 2
                assert set(storage.tokens.scope.split()) == {TOOLS, ADMIN}
        snap = setup.srv.transport.snapshot()
        assert snap.refusals["auth_missing"] == 1
        assert snap.refusals["auth_insufficient_scope"] == 1
        assert snap.refusals["auth_invalid"] == 0
