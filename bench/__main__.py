"""Run the bench: ``python -m bench [--smoke] [--only S1,S4] [--out FILE] [--docs FILE]``.

Each scenario starts the servers it needs (each in its own process on loopback),
measures them turn by turn in this one invocation, and stops them. Prints a
markdown report (figures, ratios, targets) and writes the raw figures as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import importlib.metadata
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import report
from bench.loadgen import wrk_path
from bench.scenarios import s1_throughput, s2_churn, s3_memory, s4_fanout, s5_abuse
from bench.scenarios.common import Config
from bench.servers import (
    DEFAULT_OURS,
    DEFAULTS_OURS,
    REPO_DIR,
    Target,
    bare_target,
    cpu_count,
    defaults_target,
    embedded_target,
    ours_target,
    pin_self_to_loadgen_cpu,
    raise_fd_limit,
    sdk_target,
    ts_target,
)
from tornado_mcp.cli import READ_CHUNK

SCENARIOS: dict[str, Callable[[Sequence[Target], Config], dict[str, Any]]] = {
    "S1": s1_throughput.run,
    "S2": s2_churn.run,
    "S3": s3_memory.run,
    "S4": s4_fanout.run,
    "S5": s5_abuse.run,
}
TS_DIR = REPO_DIR / "bench" / "fixtures" / "ts_server"
DEFAULT_TS = "node bench/fixtures/ts_server/server.mjs"
DOCS_START = "<!-- bench:results:start -->"
DOCS_END = "<!-- bench:results:end -->"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "absent"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _wrk_version() -> str:
    exe = wrk_path()
    if exe is None:
        return "absent"
    proc = subprocess.run([exe, "--version"], capture_output=True, timeout=10, check=False)
    first = (proc.stdout or proc.stderr).decode(errors="replace").splitlines()
    return first[0].split(" [")[0].removeprefix("wrk ") if first else "unknown"


def _ours_available(command: str) -> tuple[bool, str]:
    parts = shlex.split(command)
    scripts = [p for p in parts if p.endswith(".py")]
    for script in scripts:
        path = Path(script) if os.path.isabs(script) else REPO_DIR / script
        if not path.exists():
            return False, f"our server ({script} not found)"
    return True, ""


def build_targets(args: argparse.Namespace) -> tuple[list[Target], list[str]]:
    wanted = [t.strip() for t in args.targets.split(",") if t.strip()]
    targets: list[Target] = []
    skipped: list[str] = []
    for name in wanted:
        if name in ("ours", "uvloop"):
            ok, why = _ours_available(args.ours_cmd)
            if ok:
                targets.append(ours_target(args.ours_cmd, uvloop=name == "uvloop"))
            elif args.require_ours:
                raise SystemExit(f"cannot run {why}")
            else:
                skipped.append(why)
        elif name == "defaults":
            ok, why = _ours_available(args.defaults_cmd)
            if ok:
                targets.append(defaults_target(args.defaults_cmd))
            else:
                skipped.append(why)
        elif name == "embedded":
            targets.append(embedded_target())
        elif name == "sdk":
            targets.append(sdk_target())
        elif name == "bare":
            targets.append(bare_target())
        elif name == "bare-read":
            targets.append(bare_target(READ_CHUNK))
        elif name == "ts":
            if args.ts_cmd:
                targets.append(ts_target(args.ts_cmd))
            elif (TS_DIR / "node_modules").is_dir() and shutil.which("node"):
                targets.append(ts_target(DEFAULT_TS))
            else:
                skipped.append(
                    "TypeScript SDK (set up with: npm --prefix bench/fixtures/ts_server ci)"
                )
        else:
            raise SystemExit(f"unknown target {name!r} (ours, uvloop, sdk, bare, bare-read, ts)")
    return targets, skipped


def update_docs(path: Path, markdown: str, command: str) -> None:
    text = path.read_text(encoding="utf-8")
    start, end = text.find(DOCS_START), text.find(DOCS_END)
    if start < 0 or end < start:
        raise SystemExit(f"{path} has no {DOCS_START} ... {DOCS_END} section")
    block = f"{DOCS_START}\n\nCommand: `{command}`\n\n{markdown}\n{DOCS_END}"
    path.write_text(text[:start] + block + text[end + len(DOCS_END) :], encoding="utf-8")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny counts and durations (seconds)")
    parser.add_argument("--only", default="", help="comma-separated scenarios, e.g. S1,S4")
    parser.add_argument(
        "--targets",
        default="ours,defaults,embedded,sdk,bare,bare-read,ts",
        help="comma-separated: ours (the bench configuration), defaults and embedded (S1 "
             "only), uvloop, "
        "sdk, bare, bare-read (S1 only: bare Tornado reading as our servers do), ts (ts only "
        "when its fixture is installed)",
    )
    parser.add_argument(
        "--ours-cmd", default=DEFAULT_OURS, help="our server's command (without --port)"
    )
    parser.add_argument(
        "--defaults-cmd",
        default=DEFAULTS_OURS,
        help="our server with its defaults, measured beside it in S1 (without --port)",
    )
    parser.add_argument(
        "--ts-cmd", default="", help=f"TypeScript SDK command (default: {DEFAULT_TS})"
    )
    parser.add_argument("--require-ours", action="store_true", help="fail if our server is missing")
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--out", default="bench/results/latest.json", help="JSON output path")
    parser.add_argument("--markdown", default="", help="also write the markdown report here")
    parser.add_argument(
        "--render", default="", help="only re-render the report of an existing JSON result file"
    )
    parser.add_argument(
        "--docs", default="", help="replace the results section of this markdown file"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text(encoding="utf-8"))
        markdown = report.render(saved)
        print(markdown)
        if args.docs:
            update_docs(Path(args.docs), markdown, saved["meta"].get("command", "python -m bench"))
        return 0
    only = [s.strip().upper() for s in args.only.split(",") if s.strip()] or list(SCENARIOS)
    unknown = [s for s in only if s not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenario(s) {unknown}; choose from {list(SCENARIOS)}")
    if args.loadgen == "wrk" and wrk_path() is None:
        raise SystemExit("wrk is not installed: apt-get install -y wrk")
    use_wrk = args.loadgen == "wrk" or (args.loadgen == "auto" and wrk_path() is not None)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    log_dir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    if args.smoke:
        cfg = Config.smoke_config(use_wrk=use_wrk, log_dir=log_dir, log=log)
    else:
        cfg = Config(use_wrk=use_wrk, log_dir=log_dir, log=log)
    targets, skipped = build_targets(args)
    if not targets:
        raise SystemExit("no target to run")
    fd_limit = raise_fd_limit()
    pin_self_to_loadgen_cpu()

    versions = {
        d: _version(d) for d in ("tornado", "mcp", "uvicorn", "orjson", "httptools", "uvloop")
    }
    versions["python"] = platform.python_version()
    versions["wrk"] = _wrk_version()
    results: dict[str, Any] = {
        "meta": {
            "started": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": _cpu_model(),
            "cpus": cpu_count(),
            "kernel": platform.release(),
            "loadgen": "wrk" if use_wrk else "python (asyncio fallback)",
            "fd_limit": fd_limit,
            "targets": {t.name: t.label for t in targets},
            "skipped": skipped,
            "versions": versions,
            "config": cfg.as_dict(),
            "server_logs": str(log_dir),
            "command": shlex.join(
                ["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)]
            ),
        },
        "scenarios": {},
    }
    for name in skipped:
        log(f"skipping {name}")
    failed = False
    t_start = time.monotonic()
    for key in only:
        log(f"== {key} ({', '.join(t.label for t in targets)})")
        t0 = time.monotonic()
        # The defaults are S1's second configuration of our server; the other scenarios
        # measure the bench configuration only.
        chosen = targets if key == "S1" else [t for t in targets
                                               if t.name not in ("defaults", "embedded",
                                                                 "bare-read")]
        try:
            section = SCENARIOS[key](chosen, cfg)
        except Exception as exc:  # keep going: one broken scenario must not hide the rest
            log(traceback.format_exc())
            section = {"rows": [], "errors": 1, "error": f"{type(exc).__name__}: {exc}"}
        section["seconds"] = round(time.monotonic() - t0, 1)
        if section.get("errors"):
            failed = True
            log(f"   {key} had {section['errors']} error(s) {section.get('error_samples', '')}")
        results["scenarios"][key] = section
    results["meta"]["seconds"] = round(time.monotonic() - t_start, 1)

    markdown = report.render(results)
    print(markdown)
    out = Path(args.out)
    if not out.is_absolute():
        out = REPO_DIR / out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {out}")
    if args.markdown:
        Path(args.markdown).write_text(markdown, encoding="utf-8")
    if args.docs:
        update_docs(Path(args.docs), markdown, results["meta"]["command"])
        log(f"updated {args.docs}")
    if failed:
        log(f"server logs kept in {log_dir}")
    else:
        shutil.rmtree(log_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
