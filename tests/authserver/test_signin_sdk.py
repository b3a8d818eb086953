"""The official Python SDK client (``mcp`` 2.3.0) with its own OAuth support, against the
app's own login, in both protocol eras: it is refused with 401, discovers the app's
authorization server, registers, and sends the user's browser (headless Chromium, where
the user logs in to the app and allows the client) through the authorization-code flow;
then it calls tools as that user.  A user who may not grant a scope never gets it, however
often the client steps up."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from browser_support import chromium
from browser_user import User
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata
from sdk_oauth import MemoryStorage
from signin_support import PASSWORDS, REDIRECT, serving

STEP = 60.0

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def provider(url: str, user: User, storage: MemoryStorage) -> OAuthClientProvider:
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="Python SDK", redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none"),
        storage=storage, redirect_handler=user.redirect, callback_handler=user.callback)


def structured(result: Any) -> Any:
    assert not result.is_error, result
    return result.structured_content


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_sdk_signs_in_with_the_apps_login_and_acts_as_the_user(mode: str) -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        user = User(browser, "root", PASSWORDS["root"], intercept=REDIRECT)
        storage = MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(app.mcp, user, storage), timeout=STEP)
        with anyio.fail_after(STEP * 2):
            async with http, Client(streamable_http_client(app.mcp, http_client=http),
                                    mode=mode, read_timeout_seconds=STEP) as client:
                me = structured(await client.call_tool("whoami", {}))
                assert me == {"subject": "root", "scopes": ["notes", "notes:admin"],
                              "method": "bearer", "authenticated": True}
                await client.call_tool("add_note", {"text": "signed in by the SDK"})
                deleted = await client.call_tool("delete_all_notes", {})
                assert not deleted.is_error and deleted.content[0].text == "deleted"
        await user.close()
        assert user.logins == 1 and len(user.consents) == 1
        assert "Allow Python SDK?" in user.consents[0]
        assert storage.tokens is not None and storage.tokens.refresh_token
        assert storage.client is not None
        rows = await app.signin.consents("root")
        assert [(r["client_name"], r["scopes"]) for r in rows] == [
            ("Python SDK", ["notes", "notes:admin"])]
        snap = app.transport.snapshot(sessions=False, streams=False)
        assert snap.refusals["auth_missing"] == 1 and snap.refusals["auth_invalid"] == 0


async def test_stepping_up_never_gets_a_user_a_scope_they_may_not_grant() -> None:
    """With the tool visible (``hide_unauthorized`` off) its call answers 403 with the
    challenge, and the client steps up: the consent withholds what the user may not give."""
    async with serving(hide_unauthorized=False) as app, \
            chromium(["--no-sandbox"]) as browser:
        user = User(browser, "ada", PASSWORDS["ada"], intercept=REDIRECT)
        storage = MemoryStorage()
        http = httpx2.AsyncClient(auth=provider(app.mcp, user, storage), timeout=STEP)
        with anyio.fail_after(STEP * 2):
            async with http, Client(streamable_http_client(app.mcp, http_client=http),
                                    mode="2026-07-28", read_timeout_seconds=STEP) as client:
                assert structured(await client.call_tool("whoami", {}))["scopes"] == ["notes"]
                with pytest.raises(Exception):  # noqa: B017 - the SDK's own error for a 403
                    await client.call_tool("delete_all_notes", {})
        await user.close()
        assert user.logins == 1
        assert len(user.consents) == 2  # the first sign-in, and the step-up
        assert all("notes:admin · not yours to give" in page for page in user.consents)
        assert storage.tokens is not None and storage.tokens.scope == "notes"
        assert app.example.NOTES == {}
        assert app.refusals["auth_insufficient_scope"] >= 1


async def test_a_user_who_denies_leaves_the_client_outside() -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        user = User(browser, "ada", PASSWORDS["ada"], decision="deny", intercept=REDIRECT)
        http = httpx2.AsyncClient(auth=provider(app.mcp, user, MemoryStorage()), timeout=STEP)
        with anyio.fail_after(STEP * 2), pytest.raises(BaseException):  # noqa: B017
            async with http, Client(streamable_http_client(app.mcp, http_client=http),
                                    mode="2026-07-28", read_timeout_seconds=STEP) as client:
                await client.call_tool("whoami", {})
        await user.close()
        assert await app.signin.consents() == []
