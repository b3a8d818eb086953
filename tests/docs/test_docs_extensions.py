"""The programs of docs/skills.md and docs/apps.md (their ```python blocks, in order, as
one program each, the way tests/docs/test_docs_run.py runs the others) run and exit 0: each
asserts what the page says the server answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO_ROOT
from test_docs_run import program, run_program

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("page", ["skills.md", "apps.md"])
def test_the_extension_program_runs(page: str, tmp_path: Path) -> None:
    # It talks to the server, not only builds it.
    assert "asyncio.run(" in program(REPO_ROOT / "docs" / page)
    done = run_program(page, tmp_path)
    assert done.returncode == 0, done.stderr
