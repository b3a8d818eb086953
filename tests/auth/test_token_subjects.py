"""Who a bearer token's caller is: its ``sub`` (a user), else its ``client_id`` (a client
acting for itself), in separate namespaces; a token naming neither is refused.  Two
tokens that are different callers never share a session, a task or sealed state, over
real HTTP against the real authorization server's keys."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import LEGACY, MODERN, Running, init_msg, modern_meta, result_of, rpc
from oauth_support import TOOLS, mint, oauth_setup

from tornado_mcp.auth import InvalidToken
from tornado_mcp.auth.verifier import principal_of

pytestmark = pytest.mark.timeout(60)
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
STATE_TOOL = "test_input_required_result_request_state"


def bearer(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


async def whoami(srv: Running, token: str) -> Any:
    return await srv.modern("tools/call", {"name": "whoami", "arguments": {}},
                            headers=bearer(token, **{"Mcp-Name": "whoami"}))


async def test_tokens_without_a_subject_are_refused_and_share_nothing() -> None:
    async with oauth_setup() as s:
        for azp in ("client-one", "client-two"):
            token = mint(s.authz, s.srv.url, sub=None, client_id=None, azp=azp)
            r = await whoami(s.srv, token)
            assert r.status == 401, r.body
            message = "token names no subject: it has neither a sub nor a client_id claim"
            assert r.json["error"]["message"] == f"Unauthorized: {message}"
            assert 'error="invalid_token"' in r.headers["Www-Authenticate"]
            opened = await s.srv.post(init_msg(), headers=bearer(token))
            assert opened.status == 401
        assert len(s.srv.transport.sessions) == 0
        assert s.srv.transport.snapshot().refusals["auth_invalid"] == 4


@pytest.mark.parametrize("claims", [{"sub": 42}, {"sub": ""}, {"sub": None, "client_id": 7},
                                    {"sub": None, "client_id": ""}, {"sub": ["alice"]}])
async def test_a_subject_that_is_not_a_non_empty_string_is_refused(
        claims: dict[str, Any]) -> None:
    async with oauth_setup() as s:
        r = await whoami(s.srv, mint(s.authz, s.srv.url, **claims))
        assert r.status == 401, r.body
        assert "claim is not a non-empty string" in r.json["error"]["message"]


async def test_a_client_named_like_a_user_is_not_that_user() -> None:
    async with oauth_setup() as s:
        srv = s.srv
        user = mint(srv_authz := s.authz, srv.url, sub="alice", client_id="app")
        client = mint(srv_authz, srv.url, sub=None, client_id="alice")
        # both are called "alice", by different kinds of names
        for token in (user, client):
            me = result_of(await whoami(srv, token))
            assert me["structuredContent"]["subject"] == "alice"
        # a legacy session opened by the user is not the client's
        opened = await srv.post(init_msg(), headers=bearer(user))
        sid = opened.headers["Mcp-Session-Id"]
        assert (await srv.post(rpc("ping", None, 2), session=sid,
                               headers=bearer(user))).status == 200
        stolen = await srv.post(rpc("ping", None, 3), session=sid, headers=bearer(client))
        assert stolen.status == 404
        assert stolen.json["error"] == {"code": -32600, "message": "Session not found"}
        # nor is a task the user started, or the state sealed for the user
        created = await srv.modern("tools/call", {"name": "slow_compute",
                                                  "arguments": {"seconds": 0.01}},
                                   meta=modern_meta(TASKS), headers=bearer(user))
        task_id = created.json["result"]["taskId"]
        for token, known in ((user, True), (client, False)):
            got = (await srv.modern("tasks/get", {"taskId": task_id}, meta=modern_meta(TASKS),
                                    headers=bearer(token, **{"Mcp-Name": task_id}))).json
            assert ("result" in got) is known, got
        first = result_of(await srv.modern(
            "tools/call", {"name": STATE_TOOL, "arguments": {}},
            meta=modern_meta({"elicitation": {}}),
            headers=bearer(user, **{"Mcp-Name": STATE_TOOL})))
        answer = {"confirm": {"action": "accept", "content": {"ok": True}}}
        for token, ok in ((client, False), (user, True)):
            r = await srv.modern("tools/call", {"name": STATE_TOOL, "arguments": {},
                                                "inputResponses": answer,
                                                "requestState": first["requestState"]},
                                 meta=modern_meta({"elicitation": {}}),
                                 headers=bearer(token, **{"Mcp-Name": STATE_TOOL}))
            assert (r.status == 200 and "result" in r.json) is ok, r.body
        assert LEGACY and MODERN  # both eras were used above


def test_the_namespaces_make_different_callers() -> None:
    user = principal_of({"sub": "alice", "client_id": "app", "scope": TOOLS})
    client = principal_of({"client_id": "alice"})
    assert (user.subject, client.subject) == ("alice", "alice")
    assert (user.caller, client.caller) == ("bearer:user:alice", "bearer:client:alice")
    with pytest.raises(InvalidToken, match="names no subject"):
        principal_of({"azp": "x"})
