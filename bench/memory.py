"""What a listen stream and a legacy session cost in memory, measured on a running server.

    python -m bench.memory [--streams 200] [--sessions 200]

Starts ``examples/conformance_server.py`` in its own process, measures its resident set
size (RSS), then opens ``--streams`` listen streams each naming 1,024 distinct URIs that
fill ``max_resource_subscription_bytes`` (64 KiB), and ``--sessions`` legacy sessions each
with an ``initialize`` of 64 KiB and 1,024 JSON values, the largest the defaults admit,
measuring the RSS after each step.  It prints the growth per stream and per session, the
figures docs/limits.md quotes as measured memory beside the retained bytes the snapshot
counts.  RSS includes everything the server holds for an item: the Python objects of its
URIs and their index entries, the stream's channel and handler, its connection's buffers.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import re
import subprocess
import sys
from typing import Any

import psutil

from .client import Connection, dumps, legacy_headers, listen_body, modern_headers
from .servers import REPO_DIR

URIS = 1024
URI_BYTES = 64 * 1024
ENDPOINT = re.compile(rb"MCP endpoint: http://127\.0\.0\.1:(\d+)/mcp")


def uris_for(stream: int) -> list[str]:
    """1,024 distinct URIs of this stream, together exactly 64 KiB of UTF-8."""
    head = [f"test://s{stream}/r{i}/" for i in range(URIS)]
    pad = (URI_BYTES - sum(len(u) for u in head)) // URIS
    uris = [u + "x" * pad for u in head]
    uris[-1] += "x" * (URI_BYTES - sum(len(u) for u in uris))
    return uris


def big_initialize(req_id: int) -> bytes:
    """An ``initialize`` of 1,024 JSON values, padded to just under 64 KiB."""
    values = {f"k{i}": "v" for i in range(503)}  # with the rest: 1,023 values
    params: dict[str, Any] = {"protocolVersion": "2025-11-25",
                              "capabilities": {"experimental": {"pad": values}},
                              "clientInfo": {"name": "memory", "version": "1", "p": ""}}
    msg = {"jsonrpc": "2.0", "id": req_id, "method": "initialize", "params": params}
    params["clientInfo"]["p"] = "x" * (64 * 1024 - 64 - len(dumps(msg)))
    return dumps(msg)


async def measure(streams: int, sessions: int) -> dict[str, Any]:
    proc = subprocess.Popen(
        [sys.executable, "examples/conformance_server.py", "--no-admin", "--port", "0",
         "--log-level", "warning", "--max-listen-subscriptions", "none",
         "--max-sessions", "none"], cwd=str(REPO_DIR), stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 30)
        found = ENDPOINT.search(line)
        assert found is not None, line
        port = int(found.group(1))
        server = psutil.Process(proc.pid)
        conns: list[Connection] = []

        async def settle() -> int:
            gc.collect()
            await asyncio.sleep(0.5)
            return int(server.memory_info().rss)

        warm = Connection(port)
        await warm.connect()
        conns.append(warm)
        base = await settle()
        held = []
        for i in range(streams):
            conn = Connection(port)
            await conn.connect()
            conns.append(conn)
            stream = await conn.open_stream("POST", "/mcp", modern_headers(
                "subscriptions/listen"), listen_body(i, uris_for(i)))
            ack = await stream.next_message(10)
            assert ack is not None and ack.get("method", "").endswith("acknowledged"), ack
            held.append(stream)
        after_streams = await settle()
        for i in range(sessions):
            r = await warm.request("POST", "/mcp", legacy_headers(), big_initialize(i))
            assert r.status == 200, r.body[:200]
        after_sessions = await settle()
        for conn in conns:
            await conn.close()
        return {
            "streams": streams, "sessions": sessions, "base_rss": base,
            "per_stream_bytes": (after_streams - base) / max(streams, 1),
            "per_session_bytes": (after_sessions - after_streams) / max(sessions, 1),
            "stream_uri_bytes": URI_BYTES, "session_initialize_bytes": len(big_initialize(0)),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.streams, args.sessions))
    print(json.dumps(figures, indent=2))
    kib = 1024
    print(f"a listen stream of {URIS} URIs ({URI_BYTES // kib} KiB of URIs): "
          f"{figures['per_stream_bytes'] / kib:,.0f} KiB of server memory")
    print(f"a session with a {figures['session_initialize_bytes'] // kib} KiB initialize: "
          f"{figures['per_session_bytes'] / kib:,.0f} KiB of server memory")


if __name__ == "__main__":
    main()
