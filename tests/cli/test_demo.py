"""The demo server does what it shows: a subscription to a note reaches the session or
listen stream that asked for it, whoever adds the note; and its command line never prints
a dashboard token it was given.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from conftest import ServerFactory
from mcp_http import running

from tornado_mcp.demo import build_demo_server

UPDATED = "notifications/resources/updated"


def rpc(request_id: int, method: str, params: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def test_a_legacy_subscription_reaches_the_subscriber_not_the_caller() -> None:
    async with running(build_demo_server()) as srv:
        a = await srv.initialize(client_name="a")
        b = await srv.initialize(client_name="b")
        stream = await srv.get_stream(a)
        try:
            sub = await srv.post(rpc(1, "resources/subscribe", {"uri": "note://x"}), session=a)
            assert sub.messages[-1]["result"] == {}
            added = await srv.post(rpc(2, "tools/call", {"name": "add_note",
                                                         "arguments": {"name": "x",
                                                                       "text": "hello"}}),
                                   session=b)
            # B's response carries its result only, not A's update.
            assert [m.get("method") for m in added.messages] == [None]
            assert "Stored note 'x'" in added.messages[-1]["result"]["content"][0]["text"]
            await stream.wait_for(lambda s: any(m.get("method") == UPDATED
                                                for m in s.messages))
            updates = [m for m in stream.messages if m.get("method") == UPDATED]
            assert updates == [{"jsonrpc": "2.0", "method": UPDATED,
                                "params": {"uri": "note://x"}}]
            # After unsubscribing, A hears nothing more about x.
            await srv.post(rpc(3, "resources/unsubscribe", {"uri": "note://x"}), session=a)
            await srv.post(rpc(4, "tools/call", {"name": "add_note",
                                                 "arguments": {"name": "x", "text": "again"}}),
                           session=b)
            await srv.post(rpc(5, "resources/subscribe", {"uri": "note://y"}), session=a)
            await srv.post(rpc(6, "tools/call", {"name": "add_note",
                                                 "arguments": {"name": "y", "text": "why"}}),
                           session=b)
            await stream.wait_for(lambda s: any(m.get("params") == {"uri": "note://y"}
                                                for m in s.messages))
            uris = [m["params"]["uri"] for m in stream.messages if m.get("method") == UPDATED]
            assert uris == ["note://x", "note://y"]
        finally:
            stream.close()


async def test_a_listen_stream_hears_a_note_added_by_a_legacy_session() -> None:
    async with running(build_demo_server()) as srv:
        listen = await srv.listen({"resourceSubscriptions": ["note://x"]})
        try:
            await listen.wait_messages(1)  # the acknowledgement
            b = await srv.initialize()
            await srv.post(rpc(1, "tools/call", {"name": "add_note",
                                                 "arguments": {"name": "x", "text": "t"}}),
                           session=b)
            messages = await listen.wait_messages(2)
            assert messages[1]["method"] == UPDATED
            assert messages[1]["params"]["uri"] == "note://x"
            # What the dashboard shows for the stream: the URI it listens to.
            assert srv.transport.snapshot(stream_uris=True).streams[0].uris == ("note://x",)
        finally:
            listen.close()


async def test_reading_an_unknown_note_is_resource_not_found() -> None:
    async with running(build_demo_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc(1, "resources/read", {"uri": "note://nope"}), session=sid)
        assert r.messages[-1]["error"]["code"] == -32002


def test_a_given_admin_token_is_never_printed(server_factory: ServerFactory) -> None:
    srv = server_factory(["-m", "tornado_mcp", "demo", "--admin-token", "given-secret-42"])
    request = urllib.request.Request(srv.base_url + "/admin/api/overview",
                                     headers={"Authorization": "Bearer given-secret-42"})
    with urllib.request.urlopen(request, timeout=10) as response:  # the token works
        assert response.status == 200
    srv.stop()
    assert "given-secret-42" not in srv.stdout + srv.stderr
    assert "dashboard: http://127.0.0.1:" in srv.stdout
    assert "--admin-token" in srv.stdout


@pytest.mark.parametrize("flag", [[], ["--no-admin"]])
def test_a_generated_admin_token_is_printed_once(server_factory: ServerFactory,
                                                 flag: list[str]) -> None:
    srv = server_factory(["-m", "tornado_mcp", "demo", *flag])
    srv.stop()
    lines = [line for line in srv.stdout.splitlines() if line.startswith("dashboard:")]
    if flag:
        assert lines == []
    else:
        assert len(lines) == 1 and "(token: " in lines[0]
        assert "--admin-token" not in lines[0]


def login_cookie_behind_a_tls_proxy(base_url: str, token: str) -> str:
    """The dashboard's Set-Cookie for a login that a TLS proxy says came over https."""
    request = urllib.request.Request(
        base_url + "/admin/login", data=f"token={token}".encode(), method="POST",
        headers={"X-Forwarded-Proto": "https",
                 "Content-Type": "application/x-www-form-urlencoded"})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(request, timeout=10)
    except urllib.error.HTTPError as exc:  # the 303 after a login
        assert exc.code == 303, exc.code
        return str(exc.headers["Set-Cookie"]).lower()
    raise AssertionError("the login did not redirect")


@pytest.mark.parametrize("flag", [[], ["--xheaders"]])
def test_xheaders_makes_the_dashboard_cookie_secure_behind_a_tls_proxy(
        server_factory: ServerFactory, flag: list[str]) -> None:
    srv = server_factory(["-m", "tornado_mcp", "demo", "--admin-token", "given-secret-4242",
                          *flag])
    cookie = login_cookie_behind_a_tls_proxy(srv.base_url, "given-secret-4242")
    assert cookie.startswith("tornado_mcp_admin=")
    assert ("; secure" in cookie) == bool(flag)
