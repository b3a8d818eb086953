"""Transport options changed live on a running server apply to the next request and are
reported by the snapshot; existing sessions are kept."""

from __future__ import annotations

import json

from mcp_http import example_server, init_msg, running


async def test_lowered_max_sessions_refuses_new_but_keeps_existing_sessions() -> None:
    async with running(example_server(), max_sessions=3) as srv:
        sids = [await srv.initialize() for _ in range(3)]
        srv.transport.options.update({"max_sessions": 1}, actor="test")
        r = await srv.post(init_msg())
        assert r.status == 503 and r.json["error"]["code"] == -32603
        assert "(1) reached" in r.json["error"]["message"]
        assert "Mcp-Session-Id" not in r.headers
        assert {s.id for s in srv.transport.sessions} == set(sids)
        for sid in sids:
            ping = await srv.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, session=sid)
            assert ping.status == 200 and ping.messages[-1]["result"] == {}
        srv.transport.options.update({"max_sessions": 4})
        assert (await srv.post(init_msg())).status == 200
        assert len(srv.transport.sessions) == 4


async def test_lowered_max_request_bytes_applies_to_the_next_request() -> None:
    async with running(example_server()) as srv:
        sid = await srv.initialize()
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping",
                           "params": {"pad": "x" * 500}}).encode()
        ok = await srv.post(None, session=sid, raw=body)
        assert ok.status == 200
        srv.transport.options.update({"max_request_bytes": len(body) - 1})
        r = await srv.post(None, session=sid, raw=body)
        assert r.status == 413 and r.json["error"]["code"] == -32600
        srv.transport.options.update({"max_request_bytes": len(body)})
        assert (await srv.post(None, session=sid, raw=body)).status == 200


async def test_snapshot_reports_the_live_limits() -> None:
    async with running(example_server(), max_sessions=7) as srv:
        assert srv.transport.snapshot().limits["max_sessions"] == 7
        srv.transport.options.update({"max_sessions": 9})
        assert srv.transport.snapshot().limits["max_sessions"] == 9
