"""What an endpoint says matches what its configuration can do: stateless legacy mode
advertises no notifications it cannot deliver, a modern-only endpoint answers a 2025
``initialize`` by saying it serves only 2026-07-28, and a Host or Origin refusal names the
option that would allow it.  All over real HTTP.
"""

from __future__ import annotations

from typing import Any

from mcp_http import LEGACY, MODERN, running

from tornado_mcp import Server


def notebook() -> Server:
    server = Server("notebook")

    @server.tool()
    def echo(text: str) -> str:
        return text

    @server.resource("note://{name}")
    def note(name: str) -> str:
        return name

    @server.prompt()
    def hello() -> str:
        return "hello"

    @server.on_subscribe
    def subscribe(uri: str) -> None:
        pass

    return server


def init_msg(version: str = LEGACY) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {},
                       "clientInfo": {"name": "c", "version": "1"}}}


async def test_stateless_initialize_advertises_no_subscribe_or_list_changed() -> None:
    async with running(notebook(), stateless=True) as srv:
        r = await srv.post(init_msg())
        caps = r.json["result"]["capabilities"]
        assert caps["tools"] == {}
        assert caps["prompts"] == {}
        assert caps["resources"] == {}
        assert "logging" in caps
        # ... because nothing could carry them: there is no GET stream.
        get = await srv.request("GET", None, {"Accept": "text/event-stream"})
        assert get.status == 405


async def test_stateful_initialize_still_advertises_them() -> None:
    async with running(notebook()) as srv:
        r = await srv.post(init_msg())
        caps = r.json["result"]["capabilities"]
        assert caps["tools"] == {"listChanged": True}
        assert caps["resources"] == {"listChanged": True, "subscribe": True}


async def test_modern_only_endpoint_answers_a_2025_initialize_with_the_versions_it_serves(
        ) -> None:
    async with running(notebook(), protocol_versions=[MODERN]) as srv:
        r = await srv.post(init_msg())
        assert r.status == 400
        error = r.json["error"]
        assert error["code"] == -32022
        assert "header is required" not in error["message"]
        assert "2026-07-28" in error["message"] and "initialize" in error["message"]
        assert error["data"] == {"supported": [MODERN], "requested": LEGACY}
        assert r.json["id"] == 0


async def test_a_wrong_host_refusal_names_allowed_hosts() -> None:
    async with running(notebook()) as srv:
        r = await srv.post(init_msg(), headers={"Host": "mcp.example.com"})
        assert r.status == 403
        message = r.json["error"]["message"]
        assert "Invalid Host header" in message and "allowed_hosts" in message


async def test_a_wrong_origin_refusal_names_allowed_origins() -> None:
    async with running(notebook()) as srv:
        r = await srv.post(init_msg(), headers={"Origin": "https://app.example"})
        assert r.status == 403
        message = r.json["error"]["message"]
        assert "Invalid Origin header" in message and "allowed_origins" in message
