"""The version matrix's one selection mechanism: ``VERSION_MATRIX`` in tests/conftest.py names
the tests of each group, ``pytest --matrix GROUP`` collects exactly those, and every entry
of ``dev``'s ``MATRIX`` names a group that exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, TESTS_ROOT, VERSION_MATRIX, in_matrix

DEV = (REPO_ROOT / "dev").read_text(encoding="utf-8")


def test_a_group_holds_its_paths_what_they_contain_and_the_folders_above_them() -> None:
    assert in_matrix("tornado", TESTS_ROOT)
    assert in_matrix("tornado", TESTS_ROOT / "http")
    assert in_matrix("tornado", TESTS_ROOT / "http" / "modern" / "test_anything.py")
    assert in_matrix("tornado", TESTS_ROOT / "hosting" / "test_cors.py")
    assert not in_matrix("tornado", TESTS_ROOT / "stdio")
    assert not in_matrix("tornado", TESTS_ROOT / "test_packaging.py")
    assert not in_matrix("tornado", TESTS_ROOT / "httpx_like")  # a name that starts alike
    assert not in_matrix("tornado", REPO_ROOT / "examples")
    assert in_matrix("python", TESTS_ROOT / "unit" / "test_options.py")


def collected(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-p", "no:xdist", *args],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_matrix_collects_exactly_the_tests_under_its_paths() -> None:
    paths = [str(Path("tests") / p) for p in VERSION_MATRIX["tornado"]]
    chosen = collected("--matrix", "tornado")
    assert chosen and chosen == collected(*paths)


def test_every_matrix_entry_of_dev_names_a_group() -> None:
    block = re.search(r"^MATRIX=\(\n(.*?)^\)", DEV, re.S | re.M)
    assert block is not None
    entries = [line.split() for line in re.findall(r'"([^"]+)"', block.group(1))]
    assert {entry[1] for entry in entries} == set(VERSION_MATRIX)
    assert {entry[0] for entry in entries} >= {"py312", "py313", "tornado64", "tornado65"}


def test_one_matrix_entry_runs_the_http_tests_on_the_fast_path() -> None:
    """Both ways of serving the endpoint pass the HTTP tests in every ``./dev test``: the
    main run mounts it as an ordinary handler, one matrix entry on the fast path."""
    block = re.search(r"^MATRIX=\(\n(.*?)^\)", DEV, re.S | re.M)
    assert block is not None
    entries = [line.split() for line in re.findall(r'"([^"]+)"', block.group(1))]
    assert all(len(entry) == 5 and entry[4] in ("-", "fast") for entry in entries), entries
    fast = [entry for entry in entries if entry[4] == "fast"]
    assert fast and all("http" in VERSION_MATRIX[entry[1]] for entry in fast)
