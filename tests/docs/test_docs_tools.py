"""The Python blocks of docs/tools.md run as written, each on its own (blocks fenced
``python fragment`` are excerpts and are only compiled).  The testing section of
docs/getting-started.md is files the reader saves: tests/docs/test_docs_run.py runs them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
FENCE = re.compile(r"^```python( fragment)?\n(.*?)^```", re.M | re.S)


def blocks(name: str, section: str | None) -> list[tuple[bool, str]]:
    text = (DOCS / name).read_text()
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [(bool(m[1]), m[2]) for m in FENCE.finditer(text)]


@pytest.mark.parametrize("name, section", [("tools.md", None)])
def test_python_blocks_run(name: str, section: str | None, tmp_path: Path) -> None:
    found = blocks(name, section)
    assert found
    for i, (fragment, code) in enumerate(found):
        compile(code, f"{name}[{i}]", "exec")
        if fragment or "app.listen(" in code:  # excerpts, and servers that run forever
            continue
        script = tmp_path / f"block{i}.py"
        script.write_text(code)
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=60, cwd=DOCS.parent,
                              env={"PYTHONPATH": str(DOCS.parent), "PATH": ""})
        assert done.returncode == 0, f"{name} block {i}:\n{done.stderr}"
