"""Server CPU per request as callgrind instruction counts.

Run: ``python -m bench.callgrind [--requests 300] [--warmup 100]
[--modes legacy-sse,legacy-json,modern]
[--targets tornado-mcp,defaults,defaults-async,embedded,embedded-async,bare,bare-read]
[--json]``.

Targets: ``tornado-mcp`` is the bench configuration (``--body-timeout none
--sync-handler-threads none``: the transport's own cost); ``defaults`` the same server as
a user runs it (a 60 s body timeout, the plain ``def`` echo tool in the thread pool);
``defaults-async`` the defaults with the echo tool an ``async def``; ``embedded`` and
``embedded-async`` the same tools mounted by the embedding API (``transport.routes()``) into
a host application as Tornado ships it, with the library's defaults (the path an
application's developer gets: the endpoint an ordinary handler); ``bare`` bare Tornado
as it ships; ``bare-read`` bare Tornado reading 8 KiB at a time, as the tornado-mcp servers
do (``--read-chunk``): the like-for-like ceiling, beside the one the targets name.

For each S1 mode and each target, the server is started under
``valgrind --tool=callgrind --instr-atstart=no`` (valgrind runs the tool in the
process it was started as, so the pid the bench started is the measured Python
process; this is checked). On one keep-alive connection the S1 preparation runs
(the session for legacy modes, one checked echo), then the warm-up echoes; then
instrumentation is switched on with ``callgrind_control``, the measured echoes are
sent on the same connection, instrumentation is switched off and the counters
dumped. Instructions per request = the dump's total / the number of requests.
Counts repeat to within a fraction of a percent, unlike wall-clock CPU on a shared
machine. Needs valgrind (``apt-get install -y valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib.metadata
import json
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.client import Connection, expect_result
from bench.scenarios.s1_throughput import ECHO_TEXT, MODES, Mode, echo_body, prepare
from bench.servers import (
    DEFAULT_OURS,
    BenchError,
    ServerOptions,
    ServerProcess,
    Target,
    async_echo_target,
    bare_target,
    defaults_target,
    embedded_target,
    ours_target,
    pin_self_to_loadgen_cpu,
    start_server,
)
from tornado_mcp.cli import READ_CHUNK

READY_TIMEOUT_S = 180.0  # Python's imports run several times slower under valgrind
CONTROL_TIMEOUT_S = 60.0
DUMP_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 30.0
FIRST_ID = 1_000_000  # request ids of one width, so every measured body has the same size
TARGET_NAMES = {"tornado-mcp": "ours", "ours": "ours", "defaults": "defaults",
                "defaults-async": "defaults-async", "embedded": "embedded",
                "embedded-async": "embedded-async", "bare": "bare", "bare-read": "bare-read"}
DEFAULT_TARGETS = "tornado-mcp,defaults,defaults-async,embedded,embedded-async,bare,bare-read"


def under_callgrind(target: Target, out_file: Path) -> Target:
    """``target`` with its command run under callgrind, instrumentation off at start."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("valgrind is not installed: apt-get install -y valgrind")
    argv = [
        valgrind,
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out_file}",
    ]

    def build(port: int, options: ServerOptions) -> list[str]:
        return [*argv, *target.command(port, options)]

    return dataclasses.replace(target, build=build)


def check_is_callgrind(pid: int) -> None:
    """The process we started must be the callgrind tool itself (not a wrapper)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="ascii") as fh:
            comm = fh.read().strip()
    except OSError as exc:
        raise BenchError(f"process {pid} is gone") from exc
    if not comm.startswith("callgrind"):
        raise BenchError(f"process {pid} is {comm!r}, not callgrind running the server")


def callgrind_control(pid: int, *args: str) -> None:
    """Run ``callgrind_control ARGS PID``; it exits 0 even when it found no such task."""
    exe = shutil.which("callgrind_control")
    if exe is None:
        raise SystemExit("callgrind_control is not installed (it comes with valgrind)")
    proc = subprocess.run(
        [exe, *args, str(pid)],
        capture_output=True,
        timeout=CONTROL_TIMEOUT_S,
        check=False,
        text=True,
    )
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 or f"PID {pid}:" not in out or "OK." not in out:
        raise BenchError(f"callgrind_control {' '.join(args)} {pid} failed: {out.strip()}")


def dump_files(out_file: Path) -> set[Path]:
    return set(out_file.parent.glob(out_file.name + ".*"))


def read_total(path: Path) -> int | None:
    """The instruction total of a callgrind dump ("totals:", else "summary:")."""
    found: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("totals", "summary") and value.split():
            found[key] = int(value.split()[0])
    return found.get("totals", found.get("summary"))


def dump_and_read(pid: int, out_file: Path) -> int:
    """Dump the counters of ``pid`` and return the dump's instruction total."""
    before = dump_files(out_file)
    callgrind_control(pid, "--dump")
    deadline = time.monotonic() + DUMP_TIMEOUT_S
    for _ in range(int(DUMP_TIMEOUT_S / 0.1) + 1):
        for path in sorted(dump_files(out_file) - before):
            total = read_total(path)
            if total is not None:
                return total
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    raise BenchError(f"no callgrind dump next to {out_file} within {DUMP_TIMEOUT_S}s")


async def _echo(conn: Connection, path: str, headers: dict[str, str], body: str, n: int) -> None:
    payload = body.replace("__ID__", str(FIRST_ID + n), 1).encode()
    resp = await conn.request("POST", path, headers, payload, REQUEST_TIMEOUT_S)
    result = expect_result(resp, f"echo {n}")
    content = result.get("content") or [{}]
    if content[0].get("text") != ECHO_TEXT:
        raise BenchError(f"echo {n} returned {result!r}")


async def _drive(
    server: ServerProcess, mode: Mode, out_file: Path, requests: int, warmup: int
) -> int:
    conn = Connection(server.port)
    try:
        path, headers = await prepare(server, mode, conn)
        body = echo_body(mode, server.target)
        for n in range(warmup):
            await _echo(conn, path, headers, body, n)
        # The connection is idle while callgrind_control runs: blocking here is fine.
        callgrind_control(server.pid, "--instr=on")
        for n in range(warmup, warmup + requests):
            await _echo(conn, path, headers, body, n)
        callgrind_control(server.pid, "--instr=off")
        return dump_and_read(server.pid, out_file)
    finally:
        await conn.close()


def measure(
    target: Target, mode: Mode, requests: int, warmup: int, work_dir: Path
) -> dict[str, Any]:
    out_file = work_dir / f"callgrind.{target.name}.{mode.name}.out"
    server = start_server(
        under_callgrind(target, out_file),
        mode.options,
        log_dir=work_dir,
        ready_timeout=READY_TIMEOUT_S,
    )
    try:
        check_is_callgrind(server.pid)
        total = asyncio.run(_drive(server, mode, out_file, requests, warmup))
        server.check_alive()
    finally:
        server.stop()
    return {
        "mode": mode.name,
        "target": target.name,
        "label": target.label,
        "path": mode.bare_path if target.kind == "bare" else "/mcp",
        "instructions": total,
        "per_request": round(total / requests),
    }


def run(
    targets: Sequence[Target],
    modes: Sequence[Mode],
    requests: int,
    warmup: int,
    work_dir: Path,
    log: Any = print,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    bare_done: dict[tuple[str, str], dict[str, Any]] = {}
    for mode in modes:
        for target in targets:
            if target.kind != "bare" and mode.modern and not target.supports_modern:
                continue
            key = (target.name, mode.bare_path, mode.modern)
            if target.kind == "bare" and key in bare_done:
                # Same path, headers and body as an earlier mode (bare Tornado is sent what
                # the MCP servers are: legacy and 2026-07-28 requests differ): measured once.
                row = {**bare_done[key], "mode": mode.name}
            else:
                t0 = time.monotonic()
                row = measure(target, mode, requests, warmup, work_dir)
                if target.kind == "bare":
                    bare_done[key] = row
                log(
                    f"  {mode.name:<11} {target.label:<12} {row['per_request']:>10,} instr/request"
                    f"  ({time.monotonic() - t0:.0f} s)"
                )
            rows.append(row)
    return rows


BARES = ("bare", "bare-read")


def ratios(rows: Sequence[dict[str, Any]], base: str = "bare") -> dict[str, dict[str, float]]:
    """Each MCP target / the ``base`` bare Tornado row, per target and mode (SSE mode
    against bare SSE framing): ``{"ours": {"modern": 1.3, ...}, "defaults": {...}}``."""
    out: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["target"] in BARES:
            continue
        bare = [r for r in rows if r["target"] == base and r["mode"] == row["mode"]]
        if bare:
            out.setdefault(row["target"], {})[row["mode"]] = (
                row["per_request"] / bare[0]["per_request"]
            )
    return out


def render(rows: Sequence[dict[str, Any]], targets: Sequence[Target], meta: dict[str, Any]) -> str:
    by_key = {(r["mode"], r["target"]): r for r in rows}
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    by_base = {base: ratios(rows, base) for base in BARES}
    columns = [(base, t, by_base[base][t.name]) for base in BARES
               for t in targets if t.name in by_base[base]]
    head = ["mode", *(t.label for t in targets),
            *(f"{t.label} ÷ {base}" for base, t, _ in columns)]
    lines = [
        f"callgrind instructions per `tools/call echo` request: {meta['requests']} requests "
        f"after {meta['warmup']} warm-up, one keep-alive connection",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for mode in modes:
        cells = [mode]
        for target in targets:
            row = by_key.get((mode, target.name))
            if row is None:
                cells.append("-")
            elif target.kind == "bare":
                cells.append(f"{row['per_request']:,} ({row['path']})")
            else:
                cells.append(f"{row['per_request']:,}")
        for _, _, by_mode in columns:
            ratio = by_mode.get(mode)
            cells.append("-" if ratio is None else f"{ratio:.3f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _valgrind_version() -> str:
    proc = subprocess.run(
        ["valgrind", "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    return proc.stdout.strip().removeprefix("valgrind-") or "unknown"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.callgrind", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--requests", type=int, default=300, help="measured requests")
    parser.add_argument("--warmup", type=int, default=100, help="requests before measuring")
    parser.add_argument(
        "--modes",
        default=",".join(m.name for m in MODES),
        help="comma-separated S1 modes: " + ", ".join(m.name for m in MODES),
    )
    parser.add_argument(
        "--targets",
        default=DEFAULT_TARGETS,
        help="comma-separated: tornado-mcp (or ours), defaults, defaults-async, embedded, "
             "embedded-async, bare, bare-read",
    )
    parser.add_argument(
        "--ours-cmd", default=DEFAULT_OURS, help="the bench configuration's command (no --port)"
    )
    parser.add_argument("--defaults-cmd", default="", help="the defaults' command (no --port)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.requests < 1 or args.warmup < 0:
        raise SystemExit("--requests must be at least 1 and --warmup at least 0")
    known = {m.name: m for m in MODES}
    wanted = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in wanted if m not in known]
    if unknown or not wanted:
        raise SystemExit(f"unknown mode(s) {unknown}; choose from {list(known)}")
    modes = [known[m] for m in wanted]
    targets: list[Target] = []
    for name in (t.strip() for t in args.targets.split(",") if t.strip()):
        if name not in TARGET_NAMES:
            raise SystemExit(f"unknown target {name!r} ({', '.join(TARGET_NAMES)})")
        kind = TARGET_NAMES[name]
        if any(t.name == kind for t in targets):
            continue
        if kind == "ours":
            targets.append(ours_target(args.ours_cmd))
        elif kind == "defaults":
            targets.append(defaults_target(args.defaults_cmd) if args.defaults_cmd
                           else defaults_target())
        elif kind == "defaults-async":
            targets.append(async_echo_target())
        elif kind in ("embedded", "embedded-async"):
            targets.append(embedded_target("async" if kind == "embedded-async" else "def"))
        elif kind == "bare":
            targets.append(bare_target())
        else:
            targets.append(bare_target(READ_CHUNK))
    if not targets:
        raise SystemExit("no target to run")
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed: apt-get install -y valgrind")
    pin_self_to_loadgen_cpu()

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    work_dir = Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
    meta = {
        "requests": args.requests,
        "warmup": args.warmup,
        "versions": {
            "python": platform.python_version(),
            "tornado": importlib.metadata.version("tornado"),
            "valgrind": _valgrind_version(),
        },
        "command": shlex.join(
            ["python", "-m", "bench.callgrind", *(sys.argv[1:] if argv is None else argv)]
        ),
    }
    log(f"== callgrind ({', '.join(t.label for t in targets)}); files in {work_dir}")
    try:
        rows = run(targets, modes, args.requests, args.warmup, work_dir, log)
    except (BenchError, OSError, TimeoutError, subprocess.TimeoutExpired) as exc:
        log(f"failed: {type(exc).__name__}: {exc}")
        log(f"server logs and callgrind files kept in {work_dir}")
        return 1
    shutil.rmtree(work_dir, ignore_errors=True)
    if args.json:
        rel = {base: {t: {m: round(v, 4) for m, v in by_mode.items()}
                      for t, by_mode in ratios(rows, base).items()} for base in BARES}
        print(json.dumps({"meta": meta, "rows": rows, "ratios": rel["bare"],
                          "ratios_same_read": rel["bare-read"]}, indent=2))
    else:
        print(render(rows, targets, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
