"""S1: tools/call echo throughput at 1, 16 and 64 connections.

Modes: legacy stateful with SSE replies, legacy stateful JSON mode, and modern
2026-07-28 (no session). For each mode every target's server is started, then for
each connection count the targets are loaded back to back (turn by turn). The
bare Tornado ceiling answers ``/mcp-sse`` for the SSE mode and ``/mcp`` otherwise, sent
the same request bytes as the MCP servers (their headers and bodies, which it ignores).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.client import (
    Connection,
    expect_result,
    legacy_headers,
    modern_headers,
    open_legacy_session,
    tools_call_body,
)
from bench.loadgen import run_load
from bench.scenarios.common import Config
from bench.servers import BenchError, ServerOptions, ServerProcess, Target, start_server

ECHO_TEXT = "hi"


@dataclass(frozen=True)
class Mode:
    name: str
    options: ServerOptions
    modern: bool
    bare_path: str


MODES = (
    Mode("legacy-sse", ServerOptions(), modern=False, bare_path="/mcp-sse"),
    Mode("legacy-json", ServerOptions(json_response=True), modern=False, bare_path="/mcp"),
    Mode("modern", ServerOptions(), modern=True, bare_path="/mcp"),
)


async def prepare(
    server: ServerProcess, mode: Mode, conn: Connection | None = None
) -> tuple[str, dict[str, str]]:
    """Open a session if needed, check one echo, return (path, headers) for the load.

    On ``conn`` when given (left open, so the caller can go on with it on the same
    keep-alive connection), else on a connection of its own, closed afterwards.
    """
    own = conn is None
    if conn is None:
        conn = Connection(server.port)
    try:
        if server.target.kind == "bare":
            # The same request bytes an MCP server gets (its headers, a session id of the
            # same length, the 2026-07-28 envelope), which bare Tornado parses and ignores:
            # the distance to it is what a server does with them.
            path = mode.bare_path
            headers = modern_headers("tools/call", "echo") if mode.modern \
                else legacy_headers(BARE_SESSION_ID)
            resp = await conn.request(
                "POST", path, headers,
                tools_call_body(1, "echo", {"text": ECHO_TEXT}, mode.modern))
        elif mode.modern:
            path = "/mcp"
            headers = modern_headers("tools/call", "echo")
            resp = await conn.request(
                "POST", path, headers, tools_call_body(1, "echo", {"text": ECHO_TEXT}, True)
            )
        else:
            path = "/mcp"
            session_id = await open_legacy_session(conn)
            headers = legacy_headers(session_id)
            resp = await conn.request(
                "POST", path, headers, tools_call_body(2, "echo", {"text": ECHO_TEXT}, False)
            )
        result = expect_result(resp, f"{server.target.label} {mode.name} echo")
        content = result.get("content") or [{}]
        if content[0].get("text") != ECHO_TEXT:
            raise BenchError(f"{server.target.label} {mode.name}: echo returned {result!r}")
        return path, headers
    finally:
        if own:
            await conn.close()


def echo_body(mode: Mode, target: Target) -> str:
    """The echo request body for ``target`` in ``mode`` (bare Tornado's too: the same
    bytes), its JSON-RPC id as ``__ID__``."""
    raw = tools_call_body(999_999_999, "echo", {"text": ECHO_TEXT}, mode.modern).decode()
    return raw.replace("999999999", "__ID__", 1)


#: What bare Tornado is sent as ``Mcp-Session-Id`` in the legacy modes: as long as the ids
#: the servers give out (32 hex digits).
BARE_SESSION_ID = "0" * 32


def run(targets: Sequence[Target], cfg: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for mode in MODES:
        chosen = [t for t in targets if t.kind == "bare" or not mode.modern or t.supports_modern]
        if not chosen:
            continue
        servers: list[ServerProcess] = []
        try:
            for target in chosen:
                servers.append(start_server(target, mode.options, log_dir=cfg.log_dir))
            prepared = {s.target.name: asyncio.run(prepare(s, mode)) for s in servers}
            for turn, connections in enumerate(cfg.s1_connections):
                order = servers[turn % len(servers) :] + servers[: turn % len(servers)]
                for server in order:
                    path, headers = prepared[server.target.name]
                    result = run_load(
                        server,
                        path=path,
                        headers=headers,
                        body=echo_body(mode, server.target),
                        connections=connections,
                        duration_s=cfg.s1_duration_s,
                        use_wrk=cfg.use_wrk,
                        warmup_s=cfg.s1_warmup_s,
                    )
                    row = {"mode": mode.name, "target": server.target.name, **result.as_dict()}
                    rows.append(row)
                    cfg.log(
                        f"  S1 {mode.name:<11} c={connections:<3} {server.target.label:<15} "
                        f"{result.rps:>9.1f} req/s  p50 {result.p50_ms:.2f} ms  "
                        f"p99 {result.p99_ms:.2f} ms  cpu {result.cpu_us_per_req:.0f} us/req"
                        + (f"  ERRORS {result.errors}" if result.errors else "")
                    )
        finally:
            for server in servers:
                with contextlib.suppress(Exception):
                    server.stop()
    errors = sum(int(r["errors"]) for r in rows)
    return {"rows": rows, "errors": errors}
