"""``./dev test`` runs pytest in parallel workers with ``--dist loadgroup``, and the tests that
share an expensive module-scoped fixture (a Jupyter server, the built wheel, the docs site,
one conformance harness line's runs) carry one ``xdist_group`` mark so that one worker runs
them all and builds the fixture once.  pytest-xdist and pytest must agree for the mark to
mean anything (pytest 9.2 broke it silently: every group was spread over every worker), so
this runs a small suite the same way and asks where each test ran.  The tests marked
``alone`` run after the parallel run, on their own; the last test checks they are all
where ``./dev`` looks for them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

SUITE = '''
import json, os, pathlib
import pytest

OUT = pathlib.Path(__file__).parent / "ran"
GROUP = pytest.mark.xdist_group("shared")

def record(name):
    with open(OUT / name, "w") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"])

@GROUP
def test_grouped_a(): record("a")

@GROUP
def test_grouped_b(): record("b")

@GROUP
def test_grouped_c(): record("c")

@pytest.mark.parametrize("n", range(6))
def test_free(n): record(f"free{n}")
'''


def test_an_xdist_group_runs_in_one_worker(tmp_path: Path) -> None:
    (tmp_path / "ran").mkdir()
    (tmp_path / "test_groups.py").write_text(SUITE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup",
         "-p", "no:cacheprovider", "-p", "no:randomly", "test_groups.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ran = {p.name: p.read_text() for p in (tmp_path / "ran").iterdir()}
    assert len(ran) == 9, json.dumps(ran)
    assert ran["a"] == ran["b"] == ran["c"], ran
    assert len(set(ran.values())) > 1, ran  # the others were spread: the run was parallel


def test_every_test_run_alone_is_where_dev_looks_for_them() -> None:
    """``./dev test`` runs the tests marked ``alone`` after the parallel run with
    ``pytest -m alone tests/cluster`` (and leaves them out of the parallel run): one marked
    anywhere else would run nowhere."""
    tests = Path(__file__).resolve().parents[1]
    this = Path(__file__).resolve()
    marked = sorted(p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py")
                    if p != this and "pytest.mark.alone" in p.read_text(encoding="utf-8"))
    assert marked, "no test is marked alone"
    assert all(name.startswith("cluster/") for name in marked), marked
    dev = (tests.parent / "dev").read_text(encoding="utf-8")
    assert '-m "not alone"' in dev and "-m alone tests/cluster" in dev
