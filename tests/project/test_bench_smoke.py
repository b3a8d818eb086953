"""The bench in miniature: every scenario completes without errors (no timings asserted)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TS_FIXTURE = REPO / "bench" / "fixtures" / "ts_server"
SMOKE_TIMEOUT_S = 240

pytest.importorskip("mcp", reason="the bench compares against the official Python SDK")
pytest.importorskip("uvicorn", reason="the Python SDK fixture runs on uvicorn")


def _run_smoke(tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str, str]:
    """``python -m bench --smoke ...`` in a subprocess; returns (results, markdown, log)."""
    out = tmp_path / "smoke.json"
    markdown = tmp_path / "smoke.md"
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + path if path else "")
    argv = [sys.executable, "-m", "bench", "--smoke", "--out", str(out)]
    argv += ["--markdown", str(markdown), *extra]
    proc = subprocess.run(
        argv,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
        check=False,
    )
    detail = f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    assert proc.returncode == 0, detail
    results: dict[str, Any] = json.loads(out.read_text())
    return results, markdown.read_text(), detail


@pytest.mark.slow
def test_bench_smoke_every_scenario_completes(tmp_path: Path) -> None:
    argv = ["--targets", "ours,sdk,bare"]
    if (REPO / "examples" / "conformance_server.py").exists():
        argv.append("--require-ours")
    results, markdown, detail = _run_smoke(tmp_path, *argv)

    scenarios = results["scenarios"]
    assert set(scenarios) == {"S1", "S2", "S3", "S4", "S5"}, detail
    for key, section in scenarios.items():
        assert not section.get("error"), f"{key}: {section.get('error')}\n{detail}"
        assert section["errors"] == 0, f"{key}: {section}\n{detail}"
        assert section["rows"], f"{key} measured nothing\n{detail}"

    targets = set(results["meta"]["targets"])
    assert {"sdk", "bare"} <= targets
    # Every server under test shows up in each scenario it takes part in.
    for key in ("S1", "S2"):
        assert {row["target"] for row in scenarios[key]["rows"]} == targets, key
    for key in ("S3", "S5"):
        assert {row["target"] for row in scenarios[key]["rows"]} == targets - {"bare"}, key
    assert {row["mode"] for row in scenarios["S1"]["rows"]} == {
        "legacy-sse",
        "legacy-json",
        "modern",
    }
    s4_kinds = {(row["target"], row["kind"]) for row in scenarios["S4"]["rows"]}
    assert ("bare", "bare-sse") in s4_kinds
    for name in targets - {"bare"}:
        assert (name, "listen") in s4_kinds and (name, "legacy-get") in s4_kinds, s4_kinds

    assert results["meta"]["loadgen"].startswith("wrk" if shutil.which("wrk") else "python")
    assert "### Targets" in markdown


@pytest.mark.slow
@pytest.mark.skipif(
    not (TS_FIXTURE / "node_modules").is_dir() or shutil.which("node") is None,
    reason="TypeScript SDK fixture not installed (npm --prefix bench/fixtures/ts_server ci)",
)
def test_bench_smoke_typescript_sdk_fixture(tmp_path: Path) -> None:
    results, _, detail = _run_smoke(tmp_path, "--targets", "ts", "--only", "S1,S4")
    for key in ("S1", "S4"):
        section = results["scenarios"][key]
        assert section["errors"] == 0 and section["rows"], f"{key}: {section}\n{detail}"
    assert {row["kind"] for row in results["scenarios"]["S4"]["rows"]} == {"legacy-get"}
