"""Requests in flight in the legacy era: duplicate ids, ``notifications/cancelled``, and
server-to-client requests (round trip, capability, errors, timeout, session binding).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp_http import (
    ALL_CAPS,
    TIMEOUT,
    assert_refused,
    final,
    post_stream,
    probe_server,
    rpc,
    running,
)

# -- in-flight ids and cancellation ---------------------------------------------------------------

async def test_duplicate_in_flight_request_id_is_409_and_the_first_survives() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, 7), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        dup = await srv.post(rpc("ping", request_id=7), session=sid)
        assert_refused(dup, 409, -32600,
                       "Conflict: Request id is already in flight for this session",
                       request_id=7)
        probe.gate.set()
        await p.wait_closed()
        assert p.messages[-1]["result"]["content"][0]["text"] == "released"
        again = await srv.post(rpc("ping", request_id=7), session=sid)  # finished: reusable
        assert final(again) == {"jsonrpc": "2.0", "id": 7, "result": {}}


async def test_notifications_cancelled_cancels_the_running_handler() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "c-1"), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        c = await srv.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": "c-1", "reason": "changed my mind"}},
                           session=sid)
        assert c.status == 202
        await asyncio.wait_for(probe.cancelled.wait(), TIMEOUT)
        await p.wait_closed()
        assert p.messages == []  # a cancelled request gets no response
        session = srv.transport.sessions.get(sid)
        assert session is not None and not session.in_flight


# -- server-to-client requests --------------------------------------------------------------------

CLIENT_RESULTS: dict[str, dict[str, Any]] = {
    "sampling": {"role": "assistant", "content": {"type": "text", "text": "42"},
                 "model": "m", "stopReason": "endTurn"},
    "elicitation": {"action": "accept", "content": {"name": "Ada"}},
    "roots": {"roots": [{"uri": "file:///tmp", "name": "tmp"}]},
    "ping": {},
}


METHODS = {"sampling": "sampling/createMessage", "elicitation": "elicitation/create",
           "roots": "roots/list", "ping": "ping"}


@pytest.mark.parametrize("kind", list(METHODS))
async def test_server_to_client_request_round_trip(kind: str) -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        g = await srv.get_stream(sid)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": kind}}, "t"), sid)
        msgs = await p.wait_messages(1)
        request = msgs[0]
        assert request["method"] == METHODS[kind] and "id" in request
        assert request["id"] != "t"
        if kind == "elicitation":
            assert request["params"]["mode"] == "form"
            assert request["params"]["message"] == "Name?"
        reply = await srv.post({"jsonrpc": "2.0", "id": request["id"],
                                "result": CLIENT_RESULTS[kind]}, session=sid)
        assert reply.status == 202 and reply.body == b""
        await p.wait_closed()
        assert p.messages[-1]["id"] == "t"
        assert p.messages[-1]["result"]["structuredContent"] == {"got": CLIENT_RESULTS[kind]}
        assert probe.answers == [CLIENT_RESULTS[kind]]
        srv.server.notify_tools_list_changed()  # barrier: the request never hit the GET stream
        await g.wait_messages(1)
        assert [m["method"] for m in g.messages] == ["notifications/tools/list_changed"]
        g.close()


@pytest.mark.parametrize("kind", ["sampling", "elicitation", "roots"])
async def test_server_to_client_request_needs_the_client_capability(kind: str) -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities={})
        r = await srv.post(rpc("tools/call", {"name": "ask", "arguments": {"kind": kind}}),
                           session=sid)
        err = final(r)["error"]
        assert err["code"] == -32021
        assert err["message"] == "Missing required client capability"
        assert [m.get("method") for m in r.messages] == [None]  # nothing sent to the client
        assert probe.answers == []


async def test_client_error_response_fails_the_server_request() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "sampling"}}), sid)
        request = (await p.wait_messages(1))[0]
        r = await srv.post({"jsonrpc": "2.0", "id": request["id"],
                            "error": {"code": -1, "message": "User rejected"}}, session=sid)
        assert r.status == 202
        await p.wait_closed()
        err = p.messages[-1]["error"]
        assert err["code"] == -32603
        assert err["message"] == ("Client returned an error for sampling/createMessage "
                                  "request (code: -1): User rejected")
        assert probe.answers == []


async def test_server_to_client_request_times_out() -> None:
    server, probe = probe_server()
    async with running(server, server_to_client_request_timeout=0.2) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "roots"}}), sid)
        await p.wait_closed()
        request, cancel, response = p.messages
        assert request["method"] == "roots/list"
        assert cancel == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": request["id"],
                                     "reason": "Timed out after 0.2 seconds"}}
        assert response["error"]["code"] == -32001
        assert "roots/list" in response["error"]["message"]
        session = srv.transport.sessions.get(sid)
        assert session is not None and session.pending == {}
        late = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}},
                              session=sid)
        assert late.status == 202 and probe.answers == []


async def test_a_response_from_another_session_does_not_resolve_the_request() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        other = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "ping"}}), sid)
        request = (await p.wait_messages(1))[0]
        wrong = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {}},
                               session=other)
        assert wrong.status == 202
        assert not p.ended.is_set() and probe.answers == []
        right = await srv.post({"jsonrpc": "2.0", "id": request["id"], "result": {}},
                               session=sid)
        assert right.status == 202
        await p.wait_closed()
        assert probe.answers == [{}]


async def test_delete_wakes_a_pending_server_to_client_request() -> None:
    server, probe = probe_server()
    async with running(server) as srv:
        sid = await srv.initialize(capabilities=ALL_CAPS)
        p = await post_stream(srv, rpc("tools/call", {"name": "ask",
                                                      "arguments": {"kind": "ping"}}), sid)
        await p.wait_messages(1)
        assert (await srv.delete(sid)).status == 200
        await p.wait_closed()
        assert len(srv.transport.sessions) == 0 and probe.answers == []
        assert all("result" not in m for m in p.messages)
