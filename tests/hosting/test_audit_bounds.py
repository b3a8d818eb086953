"""What one audit record keeps is bounded, whatever the client sends: the name it called,
its request id and the caller's name are kept to 256 bytes of UTF-8 each (a longer one is
cut and marked), and the ring counts its bytes, shown in ``Transport.snapshot().audit`` and
on the dashboard's audit API.  Over HTTP in both eras and over stdio (its log line)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
import tornado.web
from admin_support import TOKEN, running_admin
from mcp_http import Running, final, running

from tornado_mcp import Principal, Server
from tornado_mcp.engine.audit import MAX_AUDIT_FIELD_BYTES, ROW_OVERHEAD_BYTES, bounded

pytestmark = pytest.mark.timeout(120)

MB = 1024 * 1024


def small_server() -> Server:
    server = Server("audited")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def test_a_field_at_the_bound_is_kept_whole_and_one_byte_over_is_cut() -> None:
    at = "n" * MAX_AUDIT_FIELD_BYTES
    assert bounded(at) == at
    over = bounded(at + "x")
    assert over == at + f"…[{MAX_AUDIT_FIELD_BYTES + 1} bytes]"
    wide = "é" * MAX_AUDIT_FIELD_BYTES  # two bytes each: cut on a character boundary
    cut = bounded(wide)
    assert cut.startswith("é" * (MAX_AUDIT_FIELD_BYTES // 2) + "…")
    assert f"[{2 * MAX_AUDIT_FIELD_BYTES} bytes]" in cut


async def test_a_hundred_1mb_names_and_ids_keep_a_bounded_trail_over_legacy_http() -> None:
    async with running(small_server()) as srv:
        sid = await srv.initialize()
        for i in range(100):
            name = f"{i:03d}" + "x" * MB
            rid = f"{i:03d}" + "i" * MB
            r = await srv.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                "params": {"name": name, "arguments": {}}}, session=sid)
            assert r.status == 200 and final(r)["error"]["code"] == -32602
        audit = srv.transport.snapshot().audit
        assert audit is not None and audit.records == 100 and audit.recorded_total == 100
        records = srv.transport.audit(limit=100)
        for record in records:
            assert len(record.name.encode()) <= MAX_AUDIT_FIELD_BYTES + 20
            assert len(record.request_id.encode()) <= MAX_AUDIT_FIELD_BYTES + 20
            assert record.name.endswith(f"…[{MB + 3} bytes]")
        per_record = audit.bytes / audit.records
        assert ROW_OVERHEAD_BYTES + 2 * MAX_AUDIT_FIELD_BYTES < per_record < 1500, per_record


async def test_the_ring_counts_its_bytes_and_forgets_the_oldest() -> None:
    async with running(small_server(), max_audit_entries=3) as srv:
        sizes = []
        for i, n in enumerate((10, 100, 300, 10, 10)):
            r = await srv.modern("tools/call", {"name": "u" * n, "arguments": {}},
                                 request_id=i)
            assert r.status == 400
            sizes.append(srv.transport.snapshot().audit.bytes)  # type: ignore[union-attr]
        audit = srv.transport.snapshot().audit
        assert audit is not None and audit.records == 3 and audit.recorded_total == 5
        # a name 90 bytes longer weighs 90 bytes more; the 300-byte one is kept as 256
        # bytes and its 14-byte marker; once full, each record pushes the oldest out
        base = sizes[0]
        assert sizes == [base, 2 * base + 90, 3 * base + 90 + 260, 3 * base + 90 + 260,
                         3 * base + 260]
        srv.transport.options.update({"max_audit_entries": 1})
        one = srv.transport.snapshot().audit
        assert one is not None and one.records == 1 and one.bytes == base


def principal_from_header(handler: tornado.web.RequestHandler) -> Principal:
    return Principal.of(handler.request.headers.get("X-User", "anon"))


async def test_the_dashboard_shows_the_trail_size_and_pages_stay_small() -> None:
    async with running_admin(authenticate=principal_from_header) as admin:
        srv = Running.remote(int(admin.base.rsplit(":", 1)[1]))
        base = admin.base + "/admin"  # the dashboard
        user = {"X-User": "p" * (32 * 1024)}
        r = await srv.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "a", "version": "1"}}},
                           headers=user)
        sid = r.headers["Mcp-Session-Id"]
        for _ in range(5):
            r = await srv.post({"jsonrpc": "2.0", "id": "r" * MB, "method": "tools/call",
                                "params": {"name": "y" * MB, "arguments": {}}},
                               session=sid, headers=user)
            assert r.status == 200 and final(r)["error"]["code"] == -32602
        async with httpx.AsyncClient(timeout=10) as client:
            r = await client.get(f"{base}/api/audit?limit=5",
                                 headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200
        page = r.json()
        assert len(r.content) < 5 * 2000, len(r.content)
        assert page["trail"]["records"] == 5 and page["trail"]["recorded_total"] == 5
        assert 5 * ROW_OVERHEAD_BYTES < page["trail"]["bytes"] < 5 * 1500
        assert all(len(item["principal"]) < 300 for item in page["items"])


STDIO = '''
from tornado_mcp import Server
from tornado_mcp.stdio import run

server = Server("audited-stdio")

@server.tool()
def echo(text: str) -> str:
    return text

run(server, log_level="INFO", max_line_bytes=4 * 1024 * 1024)
'''


async def test_over_stdio_the_audit_line_is_bounded(tmp_path: Path) -> None:
    script = tmp_path / "audited.py"
    script.write_text(STDIO)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(script), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "a", "version": "1"}}}
    call = {"jsonrpc": "2.0", "id": "i" * MB, "method": "tools/call",
            "params": {"name": "n" * MB, "arguments": {}}}
    proc.stdin.write(json.dumps(init).encode() + b"\n" + json.dumps(call).encode() + b"\n")
    proc.stdin.close()
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    answers = [json.loads(line) for line in out.splitlines()]
    assert answers[1]["error"]["code"] == -32602
    audit_lines = [line for line in err.splitlines() if b"tornado_mcp.audit" in line]
    assert len(audit_lines) == 1 and len(audit_lines[0]) < 2000, len(audit_lines[0])
    assert b"ERROR" not in err and b"Traceback" not in err
