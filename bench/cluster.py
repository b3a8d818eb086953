"""Cluster fan-out: ``python -m bench.cluster [--seconds S] [--processes 1,2,4]``; and the
deploy and failover soaks: ``--sigterm-cycles N``, ``--rolling-deploys N``,
``--failovers N`` (:mod:`bench.cluster_soak`).

For each process count N: one real redis-server (Unix socket), N server processes
(examples/conformance_server.py --redis-url), one subscriptions/listen stream on each.
The bench publishes ``resources/updated`` notifications through process 0 (one
``touch_resource`` call at a time, for ``--seconds``) and times when each arrives on
every stream.  It reports deliveries per second (over all streams), the p50/p99 latency
from the call's start to a stream's receipt, and the relay's cost: p50 latency on other
processes' streams minus that on process 0's own stream (the Redis round trip: XADD,
XREAD, delivery).  Short by design: seconds per configuration.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "cluster"), str(ROOT)]

from conftest import start_server  # noqa: E402
from mcp_http import Running, Stream  # noqa: E402
from redis_proc import RedisProc  # noqa: E402

URIS = 64


async def measure(n: int, seconds: float) -> dict[str, float]:
    redis = RedisProc()
    redis.start()
    servers = [start_server(["examples/conformance_server.py", "--no-admin", "--log-level",
                             "warning", "--redis-url", redis.url]) for _ in range(n)]
    uris = [f"test://r/{i}" for i in range(URIS)]
    streams = [await Running.remote(s.port).listen({"resourceSubscriptions": uris})
               for s in servers]
    try:
        for st in streams:
            await st.wait_messages(1)
        for st in streams:
            _time_arrivals(st)
        origin = Running.remote(servers[0].port)
        sent: list[float] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            i = len(sent)
            sent.append(time.monotonic())
            await origin.modern("tools/call", {"name": "touch_resource",
                                               "arguments": {"uri": uris[i % URIS]}}, i)
        total = len(sent)
        for st in streams:
            await st.wait_messages(1 + total, timeout=60)
        lat_own = [(t - s) * 1000 for t, s in zip(_times(streams[0]), sent, strict=False)]
        lat_all = [(t - s) * 1000 for st in streams
                   for t, s in zip(_times(st), sent, strict=False)]
        lat_other = [(t - s) * 1000 for st in streams[1:]
                     for t, s in zip(_times(st), sent, strict=False)]
        elapsed = max(max(_times(st)) for st in streams) - sent[0]
        q = statistics.quantiles(lat_all, n=100)
        result = {"processes": n, "notifications": total,
                  "deliveries_per_s": total * n / elapsed,
                  "p50_ms": q[49], "p99_ms": q[98],
                  "relay_ms": (statistics.median(lat_other) - statistics.median(lat_own))
                  if lat_other else 0.0}
        return result
    finally:
        for st in streams:
            st.close()
        for s in servers:
            s.stop()
        redis.stop()


def _time_arrivals(stream: Stream) -> None:
    """Record when each later message arrives, as the reader parses it."""
    arrivals: list[float] = []
    setattr(stream, "arrivals", arrivals)  # noqa: B010
    feed = stream.feed

    def timed(chunk: bytes) -> None:
        before = len(stream.messages)
        feed(chunk)
        arrivals.extend([time.monotonic()] * (len(stream.messages) - before))

    stream.feed = timed  # type: ignore[method-assign]


def _times(stream: Stream) -> list[float]:
    return list(getattr(stream, "arrivals", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--processes", default="1,2,4")
    parser.add_argument("--sigterm-cycles", type=int, default=0, metavar="N",
                        help="SIGTERM N processes on a busy feed; every one must exit")
    parser.add_argument("--rolling-deploys", type=int, default=0, metavar="N",
                        help="N rolling deploys of three processes behind nginx, under load")
    parser.add_argument("--failovers", type=int, default=0, metavar="N",
                        help="N Sentinel failovers under load")
    args = parser.parse_args()
    soaks = [(args.sigterm_cycles, "sigterm_cycles"), (args.rolling_deploys, "rolling_deploys"),
             (args.failovers, "failovers")]
    if any(n for n, _ in soaks):
        from bench import cluster_soak
        for n, name in soaks:
            if n:
                figures = asyncio.run(getattr(cluster_soak, name)(n))
                print("| " + " | ".join(figures) + " |")
                print("|" + "---|" * len(figures))
                print("| " + " | ".join(str(v) for v in figures.values()) + " |", flush=True)
        return
    print("| processes | notifications | deliveries/s | p50 ms | p99 ms | relay ms (p50) |")
    print("|---|---|---|---|---|---|")
    for n in (int(x) for x in args.processes.split(",")):
        r = asyncio.run(measure(n, args.seconds))
        print(f"| {n} | {int(r['notifications'])} | {r['deliveries_per_s']:.0f} | "
              f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['relay_ms']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
