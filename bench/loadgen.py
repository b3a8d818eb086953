"""Plain request load: Debian's ``wrk`` with bench/wrk/post.lua, or an asyncio fallback.

The fallback exists so the smoke test and machines without wrk still run every
scenario; its figures are marked ``"loadgen": "python"`` and are not comparable
with wrk's.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from bench.client import Connection
from bench.servers import (
    BENCH_DIR,
    HOST,
    LOADGEN_CPU,
    BenchError,
    ServerProcess,
    affinity_preexec,
)

WRK_SCRIPT = BENCH_DIR / "wrk" / "post.lua"
MAX_PY_REQUESTS = 2_000_000


@dataclass
class LoadResult:
    loadgen: str
    connections: int
    duration_s: float
    requests: int
    errors: int
    rps: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    server_cpu_s: float
    cpu_us_per_req: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def wrk_path() -> str | None:
    return shutil.which("wrk")


def _run_wrk(
    port: int,
    path: str,
    headers: Mapping[str, str],
    body: str,
    connections: int,
    duration_s: float,
) -> dict[str, Any]:
    exe = wrk_path()
    if exe is None:
        raise BenchError("wrk is not installed (apt-get install -y wrk)")
    env = dict(os.environ)
    env["BENCH_PATH"] = path
    env["BENCH_BODY"] = body
    env["BENCH_HEADERS"] = "\n".join(f"{k}: {v}" for k, v in headers.items())
    seconds = max(1, round(duration_s))
    argv = [
        exe,
        "-t1",
        f"-c{connections}",
        f"-d{seconds}s",
        "--timeout",
        "10s",
        "-s",
        str(WRK_SCRIPT),
        f"http://{HOST}:{port}{path}",
    ]
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        stdin=subprocess.DEVNULL,
        preexec_fn=affinity_preexec(LOADGEN_CPU),
    )
    try:
        out, err = proc.communicate(timeout=seconds + 30)
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.communicate(timeout=5)
        raise BenchError("wrk did not finish in time") from exc
    text = out.decode(errors="replace")
    for line in text.splitlines():
        if line.startswith("BENCH_JSON "):
            data: dict[str, Any] = json.loads(line[len("BENCH_JSON ") :])
            return data
    raise BenchError(f"wrk gave no result (rc={proc.returncode}): {text[-500:]} {err[-500:]!r}")


async def _py_load(
    port: int,
    path: str,
    headers: Mapping[str, str],
    body: str,
    connections: int,
    duration_s: float,
) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    counter = 0
    deadline = time.monotonic() + duration_s

    async def worker() -> None:
        nonlocal errors, counter
        conn = Connection(port)
        try:
            while time.monotonic() < deadline and counter < MAX_PY_REQUESTS:
                counter += 1
                payload = body.replace("__ID__", str(counter), 1).encode()
                t0 = time.perf_counter()
                try:
                    resp = await conn.request("POST", path, headers, payload, timeout=10.0)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, BenchError):
                    errors += 1
                    continue
                latencies.append(time.perf_counter() - t0)
                if resp.status >= 400:
                    errors += 1
        finally:
            await conn.close()

    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(connections))), duration_s + 30)
    elapsed = time.perf_counter() - start
    latencies.sort()

    def pct(p: float) -> int:
        if not latencies:
            return 0
        return int(latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] * 1e6)

    return {
        "requests": len(latencies),
        "duration_us": int(elapsed * 1e6),
        "err_status": errors,
        "p50_us": pct(50),
        "p99_us": pct(99),
        "max_us": int(latencies[-1] * 1e6) if latencies else 0,
        "mean_us": statistics.fmean(latencies) * 1e6 if latencies else 0.0,
    }


def run_load(
    server: ServerProcess,
    *,
    path: str,
    headers: Mapping[str, str],
    body: str,
    connections: int,
    duration_s: float,
    use_wrk: bool,
    warmup_s: float = 0.0,
) -> LoadResult:
    """Drive ``server`` with POSTs for ``duration_s``; measure its CPU across the run."""

    def drive(seconds: float) -> dict[str, Any]:
        if use_wrk:
            return _run_wrk(server.port, path, headers, body, connections, seconds)
        return asyncio.run(_py_load(server.port, path, headers, body, connections, seconds))

    if warmup_s > 0:
        drive(warmup_s)
    cpu0 = server.cpu_seconds()
    data = drive(duration_s)
    cpu1 = server.cpu_seconds()
    server.check_alive()
    requests = int(data["requests"])
    errors = sum(int(v) for k, v in data.items() if k.startswith("err_"))
    elapsed = max(1e-9, int(data["duration_us"]) / 1e6)
    cpu = cpu1 - cpu0
    return LoadResult(
        loadgen="wrk" if use_wrk else "python",
        connections=connections,
        duration_s=round(elapsed, 3),
        requests=requests,
        errors=errors,
        rps=round(requests / elapsed, 1),
        p50_ms=round(int(data["p50_us"]) / 1000, 3),
        p99_ms=round(int(data["p99_us"]) / 1000, 3),
        max_ms=round(int(data["max_us"]) / 1000, 3),
        server_cpu_s=round(cpu, 4),
        cpu_us_per_req=round(cpu / requests * 1e6, 1) if requests else 0.0,
    )
