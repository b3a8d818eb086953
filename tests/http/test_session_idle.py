"""A legacy session's idle timer: every request, notification and response it sends
resets it, so a busy session lives on; one left idle past ``session_idle_timeout`` is gone
(404), in both stateful response modes.
"""

from __future__ import annotations

import asyncio

import pytest
from mcp_http import example_server, rpc, running

pytestmark = pytest.mark.timeout(60)

TIMEOUT_S = 1.0


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_session_used_every_0_4_s_outlives_its_1_s_timeout(json_response: bool) -> None:
    async with running(example_server(), session_idle_timeout=TIMEOUT_S,
                       json_response=json_response) as srv:
        session = await srv.initialize()
        for i in range(8):  # 3.2 s in all: more than three timeouts
            await asyncio.sleep(0.4)
            r = await srv.post(rpc("tools/list", {}, i), session)
            assert r.status == 200, f"request {i} after {0.4 * (i + 1):.1f} s: {r.status}"


@pytest.mark.parametrize("json_response", [False, True])
async def test_notifications_and_responses_keep_a_session_alive(json_response: bool) -> None:
    async with running(example_server(), session_idle_timeout=TIMEOUT_S,
                       json_response=json_response) as srv:
        session = await srv.initialize()
        for i in range(4):
            await asyncio.sleep(0.4)
            note = await srv.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                  session)
            assert note.status == 202
            await asyncio.sleep(0.4)
            answer = await srv.post({"jsonrpc": "2.0", "id": f"s-{i}", "result": {}}, session)
            assert answer.status == 202
        r = await srv.post(rpc("tools/list", {}, 1), session)
        assert r.status == 200


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_session_idle_for_1_6_s_is_gone(json_response: bool) -> None:
    async with running(example_server(), session_idle_timeout=TIMEOUT_S,
                       json_response=json_response) as srv:
        session = await srv.initialize()
        await asyncio.sleep(1.6)
        r = await srv.post(rpc("tools/list", {}, 1), session)
        assert r.status == 404
        assert len(srv.transport.sessions) == 0
