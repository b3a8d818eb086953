"""What ``import tornado_mcp`` costs: ``python -m bench.import_cost [--runs N]``.

Runs ``python -c "import tornado_mcp"`` in a fresh interpreter ``--runs`` times, and as
many times a bare ``python -c pass`` (the interpreter's own start-up), alternately so that
a busy moment of a shared machine falls on both, and prints the CPU time (user + system,
from the operating system's account of each finished child) of each: the median and the
lowest, and the import's own share (the median minus the bare start's median).  Run from
the repository root; the figures in ``docs/performance.md`` come from here.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

IMPORT = "import tornado_mcp"
BARE = "pass"


@dataclass(frozen=True)
class Cost:
    """CPU seconds of ``runs`` fresh interpreters running ``code``."""

    code: str
    runs: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def lowest(self) -> float:
        return min(self.runs)


def cpu_of(code: str, python: str = sys.executable) -> float:
    """CPU seconds (user + system) of one ``python -c CODE`` that must exit 0."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([python, "-c", code], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(runs: int, python: str = sys.executable,
            codes: Sequence[str] = (IMPORT, BARE)) -> list[Cost]:
    """Each of ``codes`` ``runs`` times, in turn, after one unmeasured warm-up each."""
    for code in codes:
        cpu_of(code, python)
    seen: dict[str, list[float]] = {code: [] for code in codes}
    for _ in range(runs):
        for code in codes:
            seen[code].append(cpu_of(code, python))
    return [Cost(code, tuple(seen[code])) for code in codes]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true",
                        help="print the figures as JSON: {code: [CPU seconds of each run]}")
    args = parser.parse_args(argv)
    imported, bare = measure(args.runs)
    if args.json:
        print(json.dumps({cost.code: cost.runs for cost in (imported, bare)}))
        return 0
    print(f"python {sys.version.split()[0]}, {args.runs} runs each; CPU seconds (user + system)")
    print("| command | median | lowest |")
    print("|---|---|---|")
    for cost in (imported, bare):
        print(f"| `python -c \"{cost.code}\"` | {cost.median:.3f} | {cost.lowest:.3f} |")
    print(f"the import's own share (median - median): {imported.median - bare.median:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
