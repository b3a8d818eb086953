"""With ``hide_unauthorized``, a tool, prompt or resource the caller may not use answers
exactly as a name nothing answers to (same HTTP status, same JSON-RPC error, the name
aside), over HTTP in both eras and over stdio, for an anonymous caller and for one lacking
the scope: the server cannot be enumerated by calling names.  Without the option, the
refusal still names the scope (403/401)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import tornado.web
from mcp_http import final, running

from tornado_mcp import ANONYMOUS, Principal, Server

pytestmark = pytest.mark.timeout(60)

SECRET = "admin:write"
RAN: list[str] = []

# (method, params naming the hidden target, the same naming nothing)
CASES = [
    ("tools/call", {"name": "admin_only", "arguments": {}},
     {"name": "no_such_tool", "arguments": {}}),
    ("prompts/get", {"name": "admin_prompt"}, {"name": "no_such_prompt"}),
    ("resources/read", {"uri": "admin://report"}, {"uri": "admin://nothing"}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "admin_prompt"},
                             "argument": {"name": "x", "value": ""}},
     {"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
      "argument": {"name": "x", "value": ""}}),
]


def hidden_server() -> Server:
    server = Server("hidden")

    @server.tool(scopes=[SECRET])
    async def admin_only() -> str:
        RAN.append("tool")
        return "secret"

    @server.tool()
    async def open_tool() -> str:
        return "open"

    @server.prompt(scopes=[SECRET])
    async def admin_prompt(x: str = "") -> str:
        RAN.append("prompt")
        return "secret"

    @server.resource("admin://report", scopes=[SECRET])
    async def report() -> str:
        RAN.append("resource")
        return "secret"

    @server.completion()
    async def complete(ref: dict[str, Any], argument: dict[str, Any]) -> list[str]:
        RAN.append("completion")
        return ["secret"]

    return server


def from_header(handler: tornado.web.RequestHandler) -> Principal:
    user = handler.request.headers.get("X-User")
    return Principal.of(user, ["other:scope"]) if user else ANONYMOUS


def scrub(name: str, answer: Any) -> str:
    return json.dumps(answer, sort_keys=True).replace(name, "NAME")


def named(params: dict[str, Any]) -> str:
    ref = params.get("ref")
    return str(params.get("name") or params.get("uri") or (ref or {}).get("name"))


@pytest.mark.parametrize("user", [None, "dave"])
@pytest.mark.parametrize(("method", "hidden", "unknown"), CASES)
async def test_hidden_answers_as_unknown_over_http_modern(
        method: str, hidden: dict[str, Any], unknown: dict[str, Any], user: str | None) -> None:
    RAN.clear()
    headers = {"X-User": user} if user else {}
    async with running(hidden_server(), authenticate=from_header,
                       hide_unauthorized=True) as srv:
        a = await srv.modern(method, hidden, headers=headers)
        b = await srv.modern(method, unknown, headers=headers)
    assert a.status == b.status and a.status < 500, (a.status, a.body, b.status, b.body)
    assert scrub(named(hidden), a.json) == scrub(named(unknown), b.json)
    assert "error" in a.json and SECRET not in a.body.decode()
    assert RAN == []


@pytest.mark.parametrize(("method", "hidden", "unknown"), CASES)
async def test_hidden_answers_as_unknown_over_http_legacy(
        method: str, hidden: dict[str, Any], unknown: dict[str, Any]) -> None:
    RAN.clear()
    async with running(hidden_server(), authenticate=from_header,
                       hide_unauthorized=True) as srv:
        sid = await srv.initialize()
        answers = []
        for params in (hidden, unknown):
            r = await srv.post({"jsonrpc": "2.0", "id": 7, "method": method,
                                "params": params}, session=sid)
            answers.append((r.status, final(r)))
    (sa, a), (sb, b) = answers
    assert sa == sb and sa < 500
    assert scrub(named(hidden), a) == scrub(named(unknown), b)
    assert "error" in a and RAN == []


async def test_hidden_resource_subscription_answers_as_unknown_and_delivers_nothing() -> None:
    server = hidden_server()
    server.track_subscriptions()
    async with running(server, authenticate=from_header, hide_unauthorized=True) as srv:
        sid = await srv.initialize()
        answers = []
        for uri in ("admin://report", "admin://nothing"):
            r = await srv.post({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe",
                                "params": {"uri": uri}}, session=sid)
            answers.append((r.status, final(r)))
        assert answers[0] == answers[1] and answers[0][0] == 200
        session = srv.transport.engine.sessions.get(sid)
        assert session is not None
        tracker = server.subscriptions
        assert tracker is not None and not tracker.subscribed(session, "admin://report")


async def test_without_hiding_the_refusal_names_the_scope() -> None:
    async with running(hidden_server(), authenticate=from_header) as srv:
        r = await srv.modern("tools/call", {"name": "admin_only", "arguments": {}},
                             headers={"X-User": "dave"})
        assert r.status == 403 and SECRET in r.json["error"]["message"]
        r = await srv.modern("tools/call", {"name": "admin_only", "arguments": {}})
        assert r.status == 401


STDIO_SERVER = '''
import sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/.."]
from test_hidden_as_unknown import hidden_server
from tornado_mcp import Principal
from tornado_mcp.stdio import run

run(hidden_server(), principal=Principal.of("dave", ["other:scope"]), hide_unauthorized=True)
'''


INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "hidden", "version": "1"}}}


async def test_hidden_answers_as_unknown_over_stdio(tmp_path: Path) -> None:
    script = tmp_path / "hidden.py"
    script.write_text(STDIO_SERVER)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), str(Path(__file__).parent),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    messages = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for n, (method, hidden, unknown) in enumerate(CASES):
        for m, params in enumerate((hidden, unknown)):
            messages.append({"jsonrpc": "2.0", "id": 2 * n + m, "method": method,
                             "params": params})
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.close()
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    answers = {a["id"]: a for a in map(json.loads, out.splitlines())}
    for n, (method, hidden, unknown) in enumerate(CASES):
        a, b = answers.pop(2 * n), answers.pop(2 * n + 1)
        assert "error" in a, (method, a)
        a["id"] = b["id"] = None
        assert scrub(named(hidden), a) == scrub(named(unknown), b)
