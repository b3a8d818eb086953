"""Does the extension slow Jupyter's own requests?  ``python -m bench.jupyter_overhead``.

Starts ``jupyter server`` twice on loopback -- without the extension and with it (the
dashboard's sampler running, an MCP session open) -- and times ``GET /api/contents`` on
each, over one kept-alive connection per server, ``--requests`` times, one request to
each server in turn, so that a busy moment of a shared machine falls on both.  Prints the
median and 95th percentile per server as a markdown table (the figures in
``docs/jupyter.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

TOKEN = "bench-token-0123456789abcdef"
START_TIMEOUT_S = 30.0


def start(tmp: Path, extension: bool) -> tuple[subprocess.Popen[bytes], int]:
    for d in ("root", "config", "data", "runtime"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    for i in range(20):
        (tmp / "root" / f"file{i}.txt").write_text("x" * 100, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER")}
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"),
               JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    exts = "{'tornado_mcp.jupyter': True}" if extension else "{}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--port=0", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={tmp / 'root'}",
         f"--IdentityProvider.token={TOKEN}", f"--ServerApp.jpserver_extensions={exts}"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    info = tmp / "runtime" / f"jpserver-{proc.pid}.json"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if info.exists():
            try:
                return proc, int(json.loads(info.read_text(encoding="utf-8"))["port"])
            except ValueError:
                pass  # being written
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("jupyter server did not start")


def timed(client: httpx.Client) -> float:
    """Milliseconds one ``GET /api/contents`` takes."""
    t0 = time.perf_counter()
    client.get("/api/contents").raise_for_status()
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="per server")
    args = parser.parse_args()
    auth = {"Authorization": f"token {TOKEN}"}
    with tempfile.TemporaryDirectory() as d:
        servers = {name: start(Path(d) / name, ext)
                   for name, ext in (("without the extension", False),
                                     ("with the extension", True))}
        try:
            clients = {name: httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=auth,
                                          timeout=10) for name, (_, port) in servers.items()}
            mcp = clients["with the extension"]
            opened = mcp.post("/mcp", headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream"}, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}})
            opened.raise_for_status()
            mcp.get("/mcp/admin/api/overview").raise_for_status()  # starts the sampler
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for i in range(20 + args.requests):  # the first 20 warm up
                for name, c in clients.items():
                    ms = timed(c)
                    if i >= 20:
                        samples[name].append(ms)
        finally:
            for proc, _ in servers.values():
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=10)
    print(f"GET /api/contents, {args.requests} requests per server, interleaved\n")
    print("| server | min ms | median ms | p95 ms |\n|---|---|---|---|")
    for name, xs in samples.items():
        p95 = statistics.quantiles(xs, n=20)[-1]
        print(f"| {name} | {min(xs):.2f} | {statistics.median(xs):.2f} | {p95:.2f} |")


if __name__ == "__main__":
    main()
