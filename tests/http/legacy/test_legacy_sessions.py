"""The legacy era's sessions: ``initialize`` and version negotiation, session ids, DELETE,
re-initialize, ``max_sessions`` and idle expiry.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import (
    LEGACY,
    TIMEOUT,
    assert_refused,
    example_server,
    final,
    init_msg,
    post_stream,
    probe_server,
    rpc,
    running,
)

ALL_LEGACY = ("2025-03-26", "2025-06-18", "2025-11-25")


# -- initialize, sessions, negotiation ------------------------------------------------------------

async def test_initialize_answers_json_with_a_random_visible_ascii_session_id() -> None:
    async with running(example_server()) as srv:
        ids = []
        for n in range(8):
            r = await srv.post(init_msg(request_id=n))
            assert r.status == 200
            assert r.content_type.startswith("application/json")
            assert r.json["id"] == n and r.json["result"]["serverInfo"]["name"]
            sid = r.headers["Mcp-Session-Id"]
            assert sid and all(0x21 <= ord(c) <= 0x7E for c in sid)
            assert len(sid) == 32  # 128 bits of randomness as hex
            ids.append(sid)
        assert len(set(ids)) == len(ids)
        # No shared prefix or counter: every character position varies across sessions.
        assert all(len({s[i] for s in ids}) > 1 for i in range(16))
        assert set(ids) == {s.id for s in srv.transport.sessions}


@pytest.mark.parametrize("version", ALL_LEGACY)
async def test_initialize_echoes_each_supported_legacy_version(version: str) -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(version))
        assert r.status == 200 and r.json["result"]["protocolVersion"] == version
        sid = r.headers["Mcp-Session-Id"]
        ping = await srv.post(rpc("ping", request_id=2), session=sid, version=version)
        assert final(ping) == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize("requested", ["1999-01-01", "2026-07-28", "2024-11-05"])
async def test_initialize_counter_offers_latest_for_an_unknown_version(requested: str) -> None:
    async with running(example_server()) as srv:
        r = await srv.post(init_msg(requested))
        assert r.status == 200 and r.json["result"]["protocolVersion"] == "2025-11-25"
        assert "Mcp-Session-Id" in r.headers


async def test_missing_session_id_is_400() -> None:
    async with running(example_server()) as srv:
        await srv.initialize()
        r = await srv.post(rpc("ping"))
        assert_refused(r, 400, -32600, "Missing session ID")
        n = await srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert_refused(n, 400, -32600, "Missing session ID")
        resp = await srv.post({"jsonrpc": "2.0", "id": "x", "result": {}})
        assert_refused(resp, 400, -32600, "Missing session ID")
        assert_refused(await srv.get(None), 400, -32600, "Missing session ID")
        d = await srv.request("DELETE", None, {"MCP-Protocol-Version": LEGACY})
        assert_refused(d, 400, -32600, "Missing session ID")


async def test_unknown_session_id_is_404_on_every_method() -> None:
    async with running(example_server()) as srv:
        await srv.initialize()
        bogus = "0" * 32
        assert_refused(await srv.post(rpc("ping"), session=bogus), 404, -32600,
                       "Session not found")
        n = await srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                           session=bogus)
        assert_refused(n, 404, -32600, "Session not found")
        assert_refused(await srv.get(bogus), 404, -32600, "Session not found")
        assert_refused(await srv.delete(bogus), 404, -32600, "Session not found")


async def test_delete_ends_the_session_then_its_id_is_404() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        other = await srv.initialize()
        d = await srv.delete(sid)
        assert d.status == 200 and d.json == {"success": True}
        assert d.content_type.startswith("application/json")
        assert_refused(await srv.post(rpc("ping"), session=sid), 404, -32600,
                       "Session not found")
        assert_refused(await srv.delete(sid), 404, -32600, "Session not found")
        assert [s.id for s in srv.transport.sessions] == [other]
        assert final(await srv.post(rpc("ping"), session=other))["result"] == {}


async def test_reinitialize_on_a_live_session_is_400_and_keeps_it() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(init_msg(request_id="second"), session=sid)
        assert_refused(r, 400, -32600, "already initialized", request_id="second")
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        assert len(srv.transport.sessions) == 1


# -- max_sessions ---------------------------------------------------------------------------------

async def test_max_sessions_at_the_cap_then_over_it() -> None:
    async with running(example_server(), max_sessions=3) as srv:
        sids = [await srv.initialize() for _ in range(3)]  # exactly at the cap: all fine
        assert len(srv.transport.sessions) == 3
        r = await srv.post(init_msg(request_id=9))
        assert_refused(r, 503, -32603,
                       "Service unavailable: maximum concurrent sessions (3) reached", 9)
        assert "Mcp-Session-Id" not in r.headers
        assert len(srv.transport.sessions) == 3
        assert {s.id for s in srv.transport.sessions} == set(sids)
        assert srv.transport.refusals["max_sessions"] == 1
        for sid in sids:  # nobody was evicted
            assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        assert (await srv.delete(sids[0])).status == 200
        assert (await srv.post(init_msg())).status == 200  # room again


async def test_max_sessions_none_removes_the_cap() -> None:
    async with running(example_server(), max_sessions=None) as srv:
        for _ in range(12):
            await srv.initialize()
        assert len(srv.transport.sessions) == 12


async def test_at_the_cap_an_expired_session_is_reclaimed() -> None:
    async with running(example_server(), max_sessions=1, session_idle_timeout=0.1) as srv:
        old = await srv.initialize()
        await asyncio.sleep(0.2)  # the idle clock must pass: no event can stand in for it
        new = await srv.initialize()
        assert [s.id for s in srv.transport.sessions] == [new] and new != old


# -- idle expiry ----------------------------------------------------------------------------------

async def test_idle_session_expires_and_answers_404() -> None:
    async with running(example_server(), session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        await asyncio.sleep(0.2)  # the idle clock only
        assert_refused(await srv.post(rpc("ping"), session=sid), 404, -32600,
                       "Session not found")
        assert len(srv.transport.sessions) == 0  # evicted on access
        assert_refused(await srv.get(sid), 404, -32600, "Session not found")


async def test_idle_expiry_reaped_without_access() -> None:
    async with running(example_server(), session_idle_timeout=0.1) as srv:
        await srv.initialize()
        await asyncio.sleep(0.2)  # the idle clock only
        assert srv.transport.sessions.reap() == 1
        assert len(srv.transport.sessions) == 0


async def test_a_session_with_a_request_in_flight_is_not_idle() -> None:
    server, probe = probe_server()
    async with running(server, session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        p = await post_stream(srv, rpc("tools/call", {"name": "block"}, "b1"), sid)
        await asyncio.wait_for(probe.started.wait(), TIMEOUT)
        await asyncio.sleep(0.25)  # well past the idle timeout, with the request in flight
        assert srv.transport.sessions.reap() == 0
        assert final(await srv.post(rpc("ping", request_id=2), session=sid))["result"] == {}
        probe.gate.set()
        msgs = await p.wait_messages(1)
        assert msgs[-1]["result"]["content"][0]["text"] == "released"


async def test_a_session_with_an_open_get_stream_is_not_idle() -> None:
    async with running(example_server(), session_idle_timeout=0.1) as srv:
        sid = await srv.initialize()
        g = await srv.get_stream(sid)
        await asyncio.sleep(0.25)  # the idle clock only
        assert srv.transport.sessions.reap() == 0
        assert final(await srv.post(rpc("ping"), session=sid))["result"] == {}
        g.close()
