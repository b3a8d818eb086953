"""The programs of docs/skills.md and docs/apps.md (their ```python blocks, in order, as
one program each, the way tests/docs/test_docs_run.py runs the others) run and exit 0: each
asserts what the page says the server answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from test_docs_run import RUN_TIMEOUT, RUNNER, program

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("page", ["skills.md", "apps.md"])
def test_the_extension_program_runs(page: str, tmp_path: Path) -> None:
    source = program(REPO_ROOT / "docs" / page)
    assert "asyncio.run(" in source  # it talks to the server, not only builds it
    script = tmp_path / f"{Path(page).stem}_program.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUNNER, str(script)], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
                          capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
