"""Completion is authorized on what its ``ref`` resolves to: a caller without a prompt's
or template's scopes gets no values for it, however the ref is spelled; a ref naming
nothing is refused before the completion handler runs; and with ``hide_unauthorized`` a
hidden ref is answered exactly like an unknown one.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_http import rpc, running

from tornado_mcp import Context, Principal, Server

SECRET = frozenset({"secret"})


def leaky_server() -> tuple[Server, list[dict[str, Any]]]:
    """A server whose completion handler would answer anything it is asked."""
    server = Server("completions")
    asked: list[dict[str, Any]] = []

    @server.prompt(scopes=["secret"])
    def secret_prompt(topic: str) -> str:
        return topic

    @server.resource("secret://doc/{name}", scopes=["secret"])
    def secret_doc(name: str) -> str:
        return name

    @server.prompt()
    def open_prompt(topic: str) -> str:
        return topic

    @server.completion()
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any,
                 ctx: Context) -> list[str]:
        asked.append(ref)
        return ["classified-1", "classified-2"]

    return server, asked


def from_header(handler: Any) -> Principal | None:
    user = handler.request.headers.get("X-User")
    scopes = handler.request.headers.get("X-Scopes", "").split()
    return Principal.of(user, scopes) if user else None


def completion(ref: dict[str, Any]) -> dict[str, Any]:
    return rpc("completion/complete", {"ref": ref, "argument": {"name": "topic", "value": ""}})


async def ask(srv: Any, session: str, ref: dict[str, Any], scopes: str = "") -> tuple[int, Any]:
    r = await srv.post(completion(ref), session, headers={"X-User": "bob", "X-Scopes": scopes})
    body = r.messages[-1] if r.messages else r.json
    return r.status, body


async def open_session(srv: Any, scopes: str = "") -> str:
    r = await srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}},
        headers={"X-User": "bob", "X-Scopes": scopes})
    sid: str = r.headers["Mcp-Session-Id"]
    return sid


async def test_no_spelling_of_a_scoped_ref_yields_its_values() -> None:
    server, asked = leaky_server()
    async with running(server, authenticate=from_header) as srv:
        sid = await open_session(srv)
        status, body = await ask(srv, sid, {"type": "ref/prompt", "name": "secret_prompt"})
        assert status == 403 and "result" not in body
        for ref in ({"type": "ref/prompt", "name": "SECRET_PROMPT"},
                    {"type": "ref/prompt", "name": "no_such_prompt"},
                    {"type": "ref/resource", "uri": "SECRET://doc/{name}"},
                    {"type": "ref/resource", "uri": "nothing://{x}"}):
            status, body = await ask(srv, sid, ref)
            assert status == 200 and body["error"]["code"] == -32602, ref
            assert "classified" not in str(body)
        for uri in ("secret://doc/{name}", "secret://doc/{Name}"):  # the template, or a URI
            status, body = await ask(srv, sid, {"type": "ref/resource", "uri": uri})  # it reads
            assert status == 403 and "result" not in body
        assert asked == []  # the handler never ran for any of them


async def test_the_scope_lets_the_completion_through() -> None:
    server, asked = leaky_server()
    async with running(server, authenticate=from_header) as srv:
        sid = await open_session(srv, "secret")
        for ref in ({"type": "ref/prompt", "name": "secret_prompt"},
                    {"type": "ref/resource", "uri": "secret://doc/{name}"}):
            status, body = await ask(srv, sid, ref, "secret")
            assert status == 200
            assert body["result"]["completion"]["values"] == ["classified-1", "classified-2"]
        assert len(asked) == 2


@pytest.mark.parametrize("hidden", [{"type": "ref/prompt", "name": "secret_prompt"},
                                    {"type": "ref/resource", "uri": "secret://doc/{name}"}])
async def test_with_hiding_a_hidden_ref_answers_as_an_unknown_one(
        hidden: dict[str, Any]) -> None:
    server, asked = leaky_server()
    async with running(server, authenticate=from_header, hide_unauthorized=True) as srv:
        sid = await open_session(srv)
        answers = [await ask(srv, sid, ref) for ref in (
            hidden, {"type": "ref/prompt", "name": "no_such_prompt"})]
        assert answers[0] == answers[1]
        assert answers[0][1]["error"]["code"] == -32602
        assert asked == []
        visible = await ask(srv, sid, {"type": "ref/prompt", "name": "open_prompt"})
        assert visible[1]["result"]["completion"]["values"] == ["classified-1", "classified-2"]
