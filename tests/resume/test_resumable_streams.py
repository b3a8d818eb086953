"""Resumable legacy streams over real HTTP: ids that name the stream, the priming event
and ``retry``, the server closing a stream at will, ``GET`` + ``Last-Event-ID`` replaying
that stream only, refusals of ids that resume nothing, the bounds, and disconnects.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp_http import (
    Running,
    Stream,
    legacy_headers,
    modern_body,
    modern_header_lines,
    post_stream,
    probe_server,
    raw_request,
    rpc,
    running,
    wait_until,
)

from tornado_mcp import Context, Server
from tornado_mcp.transport.resume import NOT_RESUMABLE

RESUMABLE = {"resumable_streams": True, "sse_retry_interval": 0.25}


def events(raw: bytes) -> list[dict[str, Any]]:
    """Every SSE event block as its fields (``data`` parsed when not empty)."""
    out = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        fields: dict[str, Any] = {}
        for line in block.decode().split("\n"):
            if line and not line.startswith(":"):
                name, _, value = line.partition(": ")
                fields[name] = value
        if fields:
            if fields.get("data"):
                fields["data"] = json.loads(fields["data"])
            out.append(fields)
    return out


def stepped_server() -> tuple[Server, asyncio.Event]:
    server, _ = probe_server()
    go = asyncio.Event()

    async def steps(label: str, ctx: Context) -> str:
        ctx.info(f"{label}-1")
        polling = ctx.protocol_version == "2025-11-25"
        assert ctx.close_sse_stream() is polling  # older clients are never polled
        assert ctx.close_sse_stream() is False  # already closed
        await go.wait()
        ctx.info(f"{label}-2")
        return f"{label} done"

    server.add_tool(steps, "steps", description="logs, closes its stream, logs, returns")
    return server, go


async def resume_get(srv: Running, sid: str, last_event_id: str) -> Stream:
    return await srv.open_stream("GET", None, {**legacy_headers(sid),
                                               "Accept": "text/event-stream",
                                               "Last-Event-ID": last_event_id})


async def closed_post(srv: Running, sid: str, label: str, request_id: int) -> list[dict[str, Any]]:
    s = await post_stream(srv, rpc("tools/call", {"name": "steps", "arguments": {"label": label}},
                                   request_id), sid)
    await s.wait_closed()
    assert s.status == 200 and s.headers["Content-Type"] == "text/event-stream"
    return events(s.raw)


async def test_priming_retry_ids_and_replay_of_only_that_stream() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize()
        a = await closed_post(srv, sid, "a", 1)
        b = await closed_post(srv, sid, "b", 2)
        for evs, label in ((a, "a"), (b, "b")):
            # priming (an id, retry, empty data), the log message, then retry before close
            assert [sorted(e) for e in evs] == [["data", "id", "retry"],
                                                ["data", "event", "id"], ["retry"]]
            assert evs[0]["retry"] == "250" and evs[0]["data"] == ""
            assert evs[1]["data"]["params"]["data"] == f"{label}-1"
            assert evs[2]["retry"] == "250"
        key_a, key_b = a[0]["id"].split(".")[0], b[0]["id"].split(".")[0]
        assert key_a != key_b
        assert [e["id"] for e in a[:2]] == [f"{key_a}.0", f"{key_a}.1"]
        go.set()  # both handlers finish while their clients are away
        await wait_until(lambda: not next(iter(srv.transport.sessions)).in_flight)
        r = await resume_get(srv, sid, f"{key_a}.1")
        await r.wait_closed()
        assert r.status == 200
        replayed = events(r.raw)
        assert [e["id"] for e in replayed] == [f"{key_a}.2", f"{key_a}.3"]
        assert replayed[0]["data"]["params"]["data"] == "a-2"
        assert replayed[1]["data"] == {"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "a done"}]}}
        # From the priming event, stream b gives its three messages, none of stream a.
        r = await resume_get(srv, sid, f"{key_b}.0")
        await r.wait_closed()
        assert [e["data"].get("params", {}).get("data") or e["data"].get("id")
                for e in events(r.raw)] == ["b-1", "b-2", 2]


async def test_a_resumed_stream_carries_the_rest_live() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize()
        a = await closed_post(srv, sid, "a", 1)
        r = await resume_get(srv, sid, a[1]["id"])
        await r.started.wait()
        assert r.status == 200
        go.set()
        await r.wait_closed()  # the response ends the resumed stream
        assert [m.get("id") for m in r.messages] == [None, 1]


async def test_ids_that_resume_nothing_are_refused_with_a_clear_error() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid, other = await srv.initialize(), await srv.initialize()
        a = await closed_post(srv, sid, "a", 1)
        go.set()
        key = a[0]["id"].split(".")[0]
        for session, last, message in (
                (other, a[0]["id"], NOT_RESUMABLE),  # another session's stream
                (sid, "AAAAAAAAAAAA.0", NOT_RESUMABLE),  # forged: well-formed, unknown
                (sid, f"{key}.99", NOT_RESUMABLE),  # past the stream's last event
                (sid, "not-an-id", "Bad Request: Last-Event-ID is not an event id this "
                                   "server gave out"),
                (sid, f"{key}.1\u00e9" if False else f"{key}.01", "Bad Request: "
                 "Last-Event-ID is not an event id this server gave out")):
            r = await resume_get(srv, session, last)
            await r.wait_closed()
            assert r.status == 400, (last, r.raw)
            assert json.loads(r.raw)["error"] == {"code": -32600, "message": message}
        assert len(srv.transport.sessions) == 2  # a refusal ends no session


async def test_without_resumable_streams_last_event_id_is_ignored() -> None:
    async with running(probe_server()[0]) as srv:
        sid = await srv.initialize()
        s = await resume_get(srv, sid, "AAAAAAAAAAAA.0")
        await s.started.wait()
        assert s.status == 200  # the session's standalone GET stream, as before
        session = next(iter(srv.transport.sessions))
        await wait_until(lambda: session.get_channel is not None)
        s.close()


async def test_modern_requests_ignore_last_event_id() -> None:
    async with running(probe_server()[0], **RESUMABLE) as srv:
        body = modern_body("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        head = ["POST /mcp HTTP/1.1", f"Content-Length: {len(body)}", "Connection: close",
                *(f"{k}: {v}" for k, v in modern_header_lines("tools/call", "echo")),
                "Last-Event-ID: AAAAAAAAAAAA.0"]
        s = await raw_request(srv.port, head, [body])
        await s.wait_closed()
        assert s.status == 200
        result = json.loads(s.raw)["result"]
        assert result["content"][0]["text"] == "hi" and result["resultType"] == "complete"


async def test_older_sessions_get_ids_but_no_priming_event() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize(version="2025-06-18")
        s = await srv.open_stream("POST", json.dumps(rpc("tools/call", {
            "name": "steps", "arguments": {"label": "x"}})).encode(),
            {**legacy_headers(sid, version="2025-06-18")})
        await s.wait_messages(1)
        go.set()
        await s.wait_closed()
        evs = events(s.raw)[:1]
        # No priming event and no retry for a 2025-06-18 client; the ids are there.
        assert [sorted(e) for e in evs] == [["data", "event", "id"]]
        assert evs[0]["data"]["params"]["data"] == "x-1" and evs[0]["id"].endswith(".0")
        go.set()


async def test_session_retains_its_events_and_ending_it_drops_them() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize()
        before = srv.transport.snapshot().sessions[0].retained_bytes
        await closed_post(srv, sid, "a", 1)
        go.set()
        await wait_until(lambda: not next(iter(srv.transport.sessions)).in_flight)
        store = srv.transport.resumption.store
        kept = store.retained_bytes(sid)
        assert kept > 0
        snap = srv.transport.snapshot()
        assert snap.sessions[0].retained_bytes == before + kept
        assert snap.totals.retained_bytes == before + kept
        assert (await srv.delete(sid)).status == 200
        assert store.retained_bytes(sid) == 0


async def test_event_store_max_bytes_at_and_over_through_http() -> None:
    server, go = stepped_server()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize()
        await closed_post(srv, sid, "a", 1)
        go.set()
        await wait_until(lambda: not next(iter(srv.transport.sessions)).in_flight)
        store = srv.transport.resumption.store
        total = store.retained_bytes(sid)
        srv.transport.options.update({"event_store_max_bytes": total})  # at: all kept
        await closed_post(srv, sid, "b", 2)  # new events push the oldest out
        assert store.retained_bytes(sid) <= total
        assert srv.transport.snapshot().refusals["event_store_max_bytes"] > 0


async def test_a_disconnect_cancels_the_handler_unless_the_stream_is_resumable() -> None:
    server, probe = probe_server()

    async def chatty(ctx: Context) -> str:
        ctx.info("working")
        await probe.hold()
        return "finished"

    server.add_tool(chatty, "chatty", description="logs, then blocks")
    async with running(server) as srv:
        sid = await srv.initialize()
        s = await post_stream(srv, rpc("tools/call", {"name": "block", "arguments": {}}), sid)
        await probe.started.wait()
        s.close()  # no stream to resume: the result could never arrive
        await asyncio.wait_for(probe.cancelled.wait(), 10)
        await wait_until(lambda: not next(iter(srv.transport.sessions)).in_flight)
    probe.started.clear()
    probe.cancelled.clear()
    async with running(server, **RESUMABLE) as srv:
        sid = await srv.initialize()
        s = await post_stream(srv, rpc("tools/call", {"name": "chatty", "arguments": {}}, 7),
                              sid)
        await s.wait_messages(1)
        last = events(s.raw)[-1]["id"]
        s.close()  # resumable: not a cancellation, the handler runs on
        session = next(iter(srv.transport.sessions))
        await wait_until(lambda: session.in_flight and
                         all(h.channel is None or h.channel.closed
                             for h in srv.transport._handlers))
        assert not probe.cancelled.is_set()
        probe.gate.set()
        await wait_until(lambda: not session.in_flight)
        r = await resume_get(srv, sid, last)
        await r.wait_closed()
        assert [m["id"] for m in r.messages] == [7]
        assert r.messages[0]["result"]["content"][0]["text"] == "finished"
