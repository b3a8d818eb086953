"""The documentation site (mkdocs.yml: the guides in docs/ and an API reference generated
from the docstrings) builds with ``mkdocs build --strict``; a broken link or anchor, a page
missing from the navigation or from disk, or an API entry naming nothing fails the build.
The reference documents every public name by its public import path, and every public
name has a docstring.

Public names: ``tornado_mcp.__all__``, the ``__all__`` of ``tornado_mcp.cluster``,
``.auth`` and ``.tasks``, the public classes and functions of ``tornado_mcp.stdio`` and
``tornado_mcp.testing``, and ``admin_ui.mount``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

pytestmark = [pytest.mark.timeout(300)]

API_DIR = REPO_ROOT / "docs" / "api"
ENTRY = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)
BUILD_TIMEOUT = 180.0


def public_names_of(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        exported = [name for name, value in vars(module).items()
                    if not name.startswith("_")
                    and (inspect.isclass(value) or inspect.isfunction(value))
                    and getattr(value, "__module__", "").startswith(module_name)]
    return {f"{module_name}.{name}" for name in exported}


def public_names() -> set[str]:
    names = {"admin_ui.mount"}
    for module in ("tornado_mcp", "tornado_mcp.stdio", "tornado_mcp.testing",
                   "tornado_mcp.cluster", "tornado_mcp.auth", "tornado_mcp.tasks"):
        names |= public_names_of(module)
    return names


def reference_entries() -> list[str]:
    return [name for page in sorted(API_DIR.glob("*.md"))
            for name in ENTRY.findall(page.read_text(encoding="utf-8"))]


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(config), "--site-dir", str(site)],
                          cwd=config.parent, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT, check=False)


def test_the_reference_names_every_public_name_by_its_public_path() -> None:
    entries = reference_entries()
    assert len(entries) == len(set(entries)), "a name is documented twice"
    assert set(entries) == public_names()


def test_every_public_name_has_a_docstring() -> None:
    griffe = pytest.importorskip("griffe")  # what mkdocstrings reads the docstrings with
    packages = {name: griffe.load(name, search_paths=[str(REPO_ROOT)], resolve_aliases=True,
                                  resolve_external=False)
                for name in ("tornado_mcp", "admin_ui")}
    undocumented = []
    for name in sorted(public_names()):
        package, path = name.split(".", 1)
        obj = packages[package][path]
        if obj.is_alias:
            obj = obj.final_target
        if obj.docstring is None or not obj.docstring.value.strip():
            undocumented.append(name)
    assert undocumented == []


def test_the_site_builds_strictly_with_every_name_in_the_reference(tmp_path: Path) -> None:
    done = build(REPO_ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    anchors = set()
    for page in (tmp_path / "site" / "api").glob("*/index.html"):
        anchors |= set(re.findall(r'<h2 id="([^"]+)"', page.read_text(encoding="utf-8")))
    assert anchors >= public_names()
    guide = (tmp_path / "site" / "auth" / "index.html").read_text(encoding="utf-8")
    assert 'id="sync-handlers"' in guide  # headings after a ```python fragment``` block
    assert not (tmp_path / "site" / "site_hooks.py").exists()


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """The site's sources (config, docs, both packages) in a directory of their own."""
    root = tmp_path / "src"
    for tree in ("docs", "tornado_mcp", "admin_ui"):
        shutil.copytree(REPO_ROOT / tree, root / tree,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO_ROOT / "mkdocs.yml", root / "mkdocs.yml")
    return root


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_broken_links_and_missing_pages_fail_the_build(docs_copy: Path) -> None:
    append(docs_copy / "docs" / "tools.md", "\n[gone](no-such-page.md), "
                                            "[nowhere](limits.md#no-such-section)\n")
    (docs_copy / "docs" / "extra.md").write_text("# Not in the navigation\n")
    (docs_copy / "docs" / "api" / "results.md").unlink()
    done = build(docs_copy / "mkdocs.yml", docs_copy / "site")
    assert done.returncode != 0
    assert "'no-such-page.md'" in done.stderr
    assert "'#no-such-section'" in done.stderr
    assert "extra.md" in done.stderr
    assert "'api/results.md'" in done.stderr


def test_a_reference_entry_naming_nothing_fails_the_build(docs_copy: Path) -> None:
    append(docs_copy / "docs" / "api" / "errors.md", "\n::: tornado_mcp.NoSuchName\n")
    done = build(docs_copy / "mkdocs.yml", docs_copy / "site")
    assert done.returncode != 0
    assert "tornado_mcp.NoSuchName could not be found" in done.stderr
