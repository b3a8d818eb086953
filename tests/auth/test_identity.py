"""The caller's principal through everything a request can reach: legacy sessions (bound
to the caller that opened them), listen streams, server-to-client requests, the snapshot
and the dashboard, and lists filtered by scope when the server opts in.

The host application's own authentication is a hook here: it reads an ``X-User`` header
(standing in for a cookie) and grants the scopes named in ``X-Scopes``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import tornado.web
from mcp_http import (
    LEGACY,
    MODERN,
    Running,
    final,
    init_msg,
    modern_meta,
    rpc,
    running,
    wait_until,
)
from oauth_support import ADMIN, TOOLS, mint, oauth_setup, protected_server

from tornado_mcp import ANONYMOUS, Context, Principal
from tornado_mcp.dashboard import dashboard_routes

pytestmark = pytest.mark.timeout(60)
ADMIN_TOKEN = "admin-token-for-tests"


def from_header(handler: tornado.web.RequestHandler) -> Principal | None:
    user = handler.request.headers.get("X-User")
    scopes = (handler.request.headers.get("X-Scopes") or "").split()
    return Principal.of(user, scopes, {"password": "hunter2"}) if user else None


def as_user(user: str, scopes: str = "") -> dict[str, str]:
    return {"X-User": user, "X-Scopes": scopes}


async def open_session(srv: Running, headers: dict[str, str]) -> str:
    r = await srv.post(init_msg(capabilities={"roots": {}}), headers=headers)
    assert r.status == 200, r.body
    return r.headers["Mcp-Session-Id"]


async def test_a_session_is_usable_only_by_the_caller_that_opened_it() -> None:
    async with running(protected_server(), authenticate=from_header) as srv:
        sid = await open_session(srv, as_user("alice"))
        me = final(await srv.post(rpc("tools/call", {"name": "whoami"}), session=sid,
                                  headers=as_user("alice")))
        assert me["result"]["structuredContent"]["subject"] == "alice"
        # bob with alice's session id: no such session, as far as bob can tell
        for method in ("POST", "GET", "DELETE"):
            if method == "POST":
                r = await srv.post(rpc("tools/call", {"name": "whoami"}), session=sid,
                                   headers=as_user("bob"))
            elif method == "GET":
                r = await srv.get(sid, **as_user("bob"))
            else:
                r = await srv.request("DELETE", None, {"Mcp-Session-Id": sid,
                                                       "MCP-Protocol-Version": LEGACY,
                                                       **as_user("bob")})
            assert r.status == 404, (method, r.status)
            assert r.json["error"] == {"code": -32600, "message": "Session not found"}
        assert srv.transport.snapshot().refusals["auth_session_mismatch"] == 3
        # more scopes is still alice (a client that stepped up keeps its session)
        r = await srv.post(rpc("ping"), session=sid, headers=as_user("alice", "more"))
        assert r.status == 200
        # nobody at all: 401 before the session is even looked at
        r = await srv.post(rpc("ping"), session=sid)
        assert r.status == 401 and "Www-Authenticate" not in r.headers
        assert r.json["error"]["message"] == "Unauthorized: authentication required"


async def test_the_snapshot_and_dashboard_show_who_without_claims_or_tokens() -> None:
    async with oauth_setup(extra_routes=lambda t: dashboard_routes(t, "/admin", ADMIN_TOKEN)
                           ) as s:
        srv = s.srv
        token = mint(s.authz, srv.url, scope=f"{TOOLS} {ADMIN}", secret_claim="s3cr3t")
        auth = {"Authorization": f"Bearer {token}"}
        sid = await open_session(srv, auth)
        listen = await srv.open_stream("POST", json.dumps(rpc(
            "subscriptions/listen", {"notifications": {"toolsListChanged": True},
                                     "_meta": modern_meta()}, "listen-1")).encode(), {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen", **auth})
        try:
            await wait_until(lambda: srv.transport.snapshot().totals.listen_streams == 1)
            shown = {"subject": "alice", "scopes": [ADMIN, TOOLS], "method": "bearer"}
            snap = srv.transport.snapshot()
            assert [s.principal for s in snap.sessions] == [shown]
            assert [s.principal for s in snap.streams] == [shown]
            base = f"http://127.0.0.1:{srv.port}/admin/api"
            bodies = []
            for path in ("sessions", "streams", f"sessions/{sid}", "overview"):
                r = await srv.client.fetch(f"{base}/{path}", raise_error=False,
                                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
                assert r.code == 200, (path, r.code)
                bodies.append(r.body.decode())
            assert json.loads(bodies[0])["items"][0]["principal"] == shown
            assert json.loads(bodies[1])["items"][0]["principal"] == shown
            page = await srv.client.fetch(f"http://127.0.0.1:{srv.port}/admin/",
                                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            # refusals per reason, in /metrics too
            assert (await srv.post(rpc("ping"), headers={"Authorization": "Bearer x.y"}
                                   )).status == 401
            assert (await srv.post(rpc("ping"))).status == 401
            metrics = (await srv.client.fetch(
                f"http://127.0.0.1:{srv.port}/admin/metrics",
                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})).body.decode()
            for line in ('tornado_mcp_refusals_total{bound="auth_invalid"} 1.0',
                         'tornado_mcp_refusals_total{bound="auth_missing"} 1.0',
                         'tornado_mcp_refusals_total{bound="auth_insufficient_scope"} 0.0',
                         'tornado_mcp_refusals_total{bound="auth_session_mismatch"} 0.0',
                         'tornado_mcp_refusals_total{bound="max_bearer_token_bytes"} 0.0'):
                assert line in metrics.splitlines(), line
            for text in [*bodies, page.body.decode(), metrics]:
                assert token not in text and token[:30] not in text
                assert "s3cr3t" not in text and "secret_claim" not in text
        finally:
            listen.close()


async def test_anonymous_callers_are_not_shown_as_anyone() -> None:
    async with running(protected_server()) as srv:
        await srv.initialize()
        assert [s.principal for s in srv.transport.snapshot().sessions] == [None]
        me = await srv.modern("tools/call", {"name": "whoami", "arguments": {}})
        assert me.json["result"]["structuredContent"] == {
            "subject": None, "scopes": [], "method": "anonymous", "authenticated": False}


async def test_server_to_client_requests_run_with_the_callers_principal() -> None:
    server = protected_server()
    seen: list[Any] = []

    @server.tool()
    async def ask_roots(ctx: Context) -> str:
        result = await ctx.list_roots()
        seen.append((ctx.principal.subject, result))
        return ctx.principal.subject or "?"

    async with running(server, authenticate=from_header) as srv:
        sid = await open_session(srv, as_user("carol"))
        head = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY, **as_user("carol")}
        body = json.dumps(rpc("tools/call", {"name": "ask_roots"}, 7)).encode()
        stream = await srv.open_stream("POST", body, head)
        try:
            [request] = await stream.wait_messages(1)
            assert request["method"] == "roots/list"
            # the answer must come from the same caller: bob's is refused as 404
            answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}
            r = await srv.post(answer, session=sid, headers=as_user("bob"))
            assert r.status == 404
            r = await srv.post(answer, session=sid, headers=as_user("carol"))
            assert r.status == 202
            messages = await stream.wait_messages(2)
            assert messages[1]["result"]["content"][0]["text"] == "carol"
        finally:
            stream.close()
    assert seen == [("carol", {"roots": []})]


async def test_lists_hide_what_the_caller_may_not_call_when_asked() -> None:
    async with running(protected_server(), authenticate=from_header) as srv:
        async def names(method: str, key: str, field: str, scopes: str) -> set[str]:
            r = await srv.modern(method, {}, headers=as_user("dave", scopes))
            return {item[field] for item in r.json["result"][key]}

        assert "admin_only" in await names("tools/list", "tools", "name", "")  # not opted in
        srv.transport.options.update({"hide_unauthorized": True})
        assert "admin_only" not in await names("tools/list", "tools", "name", "")
        assert "whoami" in await names("tools/list", "tools", "name", "")
        assert "admin_only" in await names("tools/list", "tools", "name", ADMIN)
        assert "admin_prompt" not in await names("prompts/list", "prompts", "name", "")
        assert "admin_prompt" in await names("prompts/list", "prompts", "name", ADMIN)
        assert "admin://report" not in await names("resources/list", "resources", "uri", "")
        assert "admin://report" in await names("resources/list", "resources", "uri", ADMIN)
        # hidden, calling it without the scope answers as an unknown tool (never naming
        # the scope); shown again, it is 403 naming the scope
        r = await srv.modern("tools/call", {"name": "admin_only", "arguments": {}},
                             headers=as_user("dave"))
        assert r.status == 400
        assert r.json["error"]["message"] == "Unknown tool: admin_only"
        srv.transport.options.update({"hide_unauthorized": False})
        r = await srv.modern("tools/call", {"name": "admin_only", "arguments": {}},
                             headers=as_user("dave"))
        assert r.status == 403
        assert r.json["error"]["message"] == f"Forbidden: insufficient scope: requires {ADMIN}"


async def test_scopes_without_any_authentication_refuse_the_anonymous_caller() -> None:
    async with running(protected_server()) as srv:
        r = await srv.modern("tools/call", {"name": "admin_only", "arguments": {}})
        assert r.status == 401
        assert r.json["error"]["message"] == "Unauthorized: authentication required"
        ok = await srv.modern("tools/call", {"name": "whoami", "arguments": {}})
        assert ok.status == 200


async def test_an_async_hook_and_a_get_principal_override_both_feed_the_context() -> None:
    async def slow_hook(handler: tornado.web.RequestHandler) -> Principal | None:
        await asyncio.sleep(0)
        return from_header(handler)

    async with running(protected_server(), authenticate=slow_hook) as srv:
        r = await srv.modern("tools/call", {"name": "whoami", "arguments": {}},
                             headers=as_user("erin", "a b"))
        assert r.json["result"]["structuredContent"]["scopes"] == ["a", "b"]
    assert ANONYMOUS.as_dict()["authenticated"] is False


async def test_a_batch_call_lacking_a_scope_gets_its_own_error_and_the_others_run() -> None:
    async with running(protected_server(), authenticate=from_header) as srv:
        who = as_user("ada", TOOLS)
        r = await srv.post(init_msg(version="2025-03-26"), headers=who)
        sid = r.headers["Mcp-Session-Id"]
        before = srv.transport.snapshot().refusals["auth_insufficient_scope"]
        batch = [rpc("tools/call", {"name": "echo", "arguments": {"text": "one"}}, 1),
                 rpc("tools/call", {"name": "admin_only", "arguments": {}}, 2),
                 rpc("tools/call", {"name": "echo", "arguments": {"text": "three"}}, 3)]
        r = await srv.post(batch, session=sid, version="2025-03-26", headers=who)
        assert r.status == 200
        by_id = {m["id"]: m for m in r.json}
        assert by_id[1]["result"]["content"][0]["text"] == "one"
        assert by_id[2]["error"]["code"] == -32600 and "mcp:admin" in by_id[2]["error"]["message"]
        assert by_id[3]["result"]["content"][0]["text"] == "three"
        assert srv.transport.snapshot().refusals["auth_insufficient_scope"] == before + 1


async def test_tasks_belong_to_the_caller_and_how_they_authenticated() -> None:
    def by_way(handler: tornado.web.RequestHandler) -> Principal | None:
        way = handler.request.headers.get("X-Via")
        return Principal.of("alice", [TOOLS], method=way) if way else None

    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    async with running(protected_server(), authenticate=by_way) as srv:
        created = await srv.modern("tools/call", {"name": "slow_compute",
                                                  "arguments": {"seconds": 0.01}},
                                   meta=modern_meta(caps), headers={"X-Via": "host"})
        task_id = created.json["result"]["taskId"]

        async def get(way: str) -> Any:
            return (await srv.modern("tasks/get", {"taskId": task_id}, meta=modern_meta(caps),
                                     headers={"X-Via": way, "Mcp-Name": task_id})).json

        assert (await get("host"))["result"]["taskId"] == task_id
        other = await get("bearer")  # the same subject, authenticated another way
        assert other["error"]["code"] == -32602
        assert f"unknown task {task_id}" in other["error"]["message"]


async def test_watching_or_completing_a_scoped_primitive_needs_its_scopes() -> None:
    async with running(protected_server(), authenticate=from_header) as srv:
        ada, root = as_user("ada", TOOLS), as_user("root", f"{TOOLS} {ADMIN}")
        sid = await open_session(srv, ada)
        subscribe = rpc("resources/subscribe", {"uri": "admin://report"}, 5)
        refused = await srv.post(subscribe, session=sid, headers=ada)
        assert refused.status == 403 and "mcp:admin" in refused.json["error"]["message"]
        complete = rpc("completion/complete", {"ref": {"type": "ref/prompt",
                                                       "name": "admin_prompt"},
                                               "argument": {"name": "x", "value": ""}}, 6)
        assert (await srv.post(complete, session=sid, headers=ada)).status == 403
        listen = await srv.request("POST", json.dumps(rpc("subscriptions/listen", {
            "notifications": {"resourceSubscriptions": ["admin://report"]},
            "_meta": modern_meta()}, "l1")).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen", **ada})
        assert listen.status == 403
        assert not srv.transport.snapshot().streams
        root_sid = await open_session(srv, root)
        allowed = await srv.post(subscribe, session=root_sid, headers=root)
        assert allowed.status == 200 and final(allowed)["result"] == {}
