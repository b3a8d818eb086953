"""Every reference the docs and the package's docstrings make to the code resolves, so none
can go stale: a path (``tests/...``, ``tornado_mcp/...``, a bare ``name.py``) names a file
that exists; a Sphinx role (``:class:``, ``:func:``, ``:mod:``, ``:attr:``, ``:meth:``,
``:data:``, ``:exc:``), an mkdocstrings ``::: name`` or ``[text][name]`` and a backticked
``tornado_mcp.`` dotted name each import (a module) or ``getattr`` (a name in one), an
attribute counting when its class assigns or annotates it.

A role's target resolves as a reader looks it up: absolute, then in the docstring's class,
its module, the module's package and their parents, else a name of exactly one object of
ours (``Cluster.start``); a leading ``.`` is relative, as in an import
(``:class:`~.skills.SkillFile``` in ``tornado_mcp/server/``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tornado_mcp", "admin_ui")
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

ROLE = re.compile(r":(?:py:)?(class|func|mod|attr|meth|data|exc|obj):`([^`]+)`")
#: A path into the repository, written out (``tests/http/test_bounds.py``,
#: ``tornado_mcp/transport/``); ``*`` and ``...`` stand for what a reader fills in.
PATH = re.compile(r"(?<![\w/.-])((?:tests|tornado_mcp|admin_ui|examples|bench|docs)/[\w./*-]*)")
#: A path inside the package written from its root, as docs/architecture.md does
#: (``transport/exchange.py``, ``engine/``).
SUBPACKAGES = sorted(p.name for p in (ROOT / "tornado_mcp").iterdir()
                     if (p / "__init__.py").exists())
PACKAGE_PATH = re.compile(
    rf"(?<![\w/.-])((?:{'|'.join(SUBPACKAGES)})/(?:[\w/]*\.py\b|[\w/]*/(?![\w/])))")
#: A Python file named on its own (``seams.py``): one of that name exists somewhere.
BARE_FILE = re.compile(r"(?<![\w/.-])([A-Za-z_]\w*\.py)\b")
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)", re.M)
AUTOREF = re.compile(r"\]\[((?:tornado_mcp|admin_ui)\.[\w.]+)\]")
DOTTED = re.compile(r"`((?:tornado_mcp|admin_ui)(?:\.\w+)+)(?:\(\))?`")
#: Files a doc names that the reader makes (its examples), not files of ours.
NOT_OURS = {"server.py", "app.py", "notes.py", "counter.py", "test_counter.py",
            "notes_app.py", "test_notes.py", "jupyter_server_config.py"}
#: Dotted names that are not Python objects, with what they are.
NOT_MODULES = {
    "tornado_mcp.jupyter_tools": "the entry-point group tools are registered in",
    "tornado_mcp.scaleout.RedisBus": "what docs/deploy.md says is gone",
}
#: References kept on purpose to what no longer exists: (file, target) -> why.
HISTORY = {
    ("docs/performance.md", "tornado_mcp/transport/direct.py"):
        "a row of the measurement log names the module measured then (issue 29 replaced it)",
    ("docs/performance.md", "tornado_mcp/transport/lean.py"):
        "a row of the measurement log names the module measured then (issue 29 replaced it)",
}
#: Where the benchmarks write what they measure (ignored by git).
GENERATED = ("bench/results/",)


@dataclass(frozen=True)
class Ref:
    where: str  # file:line
    kind: str  # path, file, or a role
    target: str
    module: str = ""  # the docstring's module ("" in docs/)
    cls: str = ""  # the docstring's class, dotted within the module


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _docstrings(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, text, class) of each docstring and ``#:`` comment of a module."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)

    def visit(node: ast.AST, cls: str) -> Iterator[tuple[int, str, str]]:
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            yield body[0].lineno, body[0].value.value, cls
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, f"{cls}.{child.name}" if cls else child.name)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from visit(child, cls)

    yield from visit(tree, "")
    classes = [(n.lineno, n.end_lineno or n.lineno, n.name) for n in ast.walk(tree)
               if isinstance(n, ast.ClassDef)]
    for number, line in enumerate(source.splitlines(), 1):
        if line.lstrip().startswith("#:"):
            owner = max((c for c in classes if c[0] <= number <= c[1]),
                        key=lambda c: c[0], default=None)
            yield number, line.lstrip()[2:], owner[2] if owner else ""


def _refs_in(text: str, where: str, module: str = "", cls: str = "") -> Iterator[Ref]:
    for match in ROLE.finditer(text):
        yield Ref(where, match[1], match[2], module, cls)
    for match in PATH.finditer(text):
        yield Ref(where, "path", match[1])
    for match in PACKAGE_PATH.finditer(text):
        yield Ref(where, "path", f"tornado_mcp/{match[1]}")
    for match in BARE_FILE.finditer(text):
        yield Ref(where, "file", match[1])
    for pattern in (DIRECTIVE, AUTOREF, DOTTED):
        for match in pattern.finditer(text):
            yield Ref(where, "name", match[1])


def all_refs() -> list[Ref]:
    found: list[Ref] = []
    for doc in DOCS:
        rel = doc.relative_to(ROOT).as_posix()
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            found += _refs_in(line, f"{rel}:{number}")
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel, module = path.relative_to(ROOT).as_posix(), _module_name(path)
            for start, text, cls in _docstrings(path):
                found += _refs_in(text, f"{rel}:{start}", module, cls)
    return found


@functools.cache
def _python_files() -> frozenset[str]:
    # Not under a hidden directory (.venv, .venv-py313, .peers, caches) nor node_modules:
    # the files of installed packages are not ours.
    names = set()
    for _where, directories, files in os.walk(ROOT):
        directories[:] = [d for d in directories
                          if not d.startswith(".") and d != "node_modules"]  # not walked
        names.update(f for f in files if f.endswith(".py"))
    return frozenset(names)


def path_exists(target: str) -> bool:
    target = target.rstrip(".,:;")
    if target.startswith(GENERATED):
        return True
    if (ROOT / f"{target}.py").exists():  # a module named by its path
        return True
    if "*" in target or "..." in target or "{" in target:
        return any(ROOT.glob(target.replace("...", "*").split("{")[0].rstrip("/") + "*"))
    return (ROOT / target).exists()


def _import(name: str) -> Any:
    """The object ``name`` (dotted) names: its longest importable module prefix, then
    attributes; ``LookupError`` when nothing does."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:  # not a module, or one that cannot import alone: no answer
            continue
        for depth, attr in enumerate(parts[i:], i):
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif depth == len(parts) - 1 and inspect.isclass(obj) and _assigned(obj, attr):
                return obj
            else:
                raise LookupError(name)
        return obj
    raise LookupError(name)


def _assigned(cls: type, attr: str) -> bool:
    """Whether ``cls`` (or a base) annotates ``attr`` or assigns ``self.attr``."""
    for klass in cls.__mro__:
        if attr in getattr(klass, "__annotations__", {}) \
                or attr in getattr(klass, "__slots__", ()):
            return True
        try:
            source = inspect.getsource(klass)
        except (OSError, TypeError):
            continue
        if re.search(rf"\bself\.{re.escape(attr)}\s*(?::[^=\n]+)?=(?!=)", source) \
                or re.search(rf"\bself\.{re.escape(attr)}\s*,[^=\n]*=(?!=)", source) \
                or re.search(rf",\s*self\.{re.escape(attr)}\s*(?:,[^=\n]*)?=(?!=)", source):
            return True
    return False


@functools.cache
def _logger_names() -> frozenset[str]:
    """The names the package's loggers are created with (``tornado_mcp.audit``)."""
    return frozenset(re.findall(r"getLogger\(\"([\w.]+)\"\)", "\n".join(
        p.read_text(encoding="utf-8") for package in PACKAGES
        for p in (ROOT / package).rglob("*.py"))))


@functools.cache
def _modules() -> tuple[str, ...]:
    return tuple(_module_name(p) for package in PACKAGES
                 for p in sorted((ROOT / package).rglob("*.py")))


def resolves(ref: Ref) -> bool:
    target = ref.target.strip()
    if "<" in target and target.endswith(">"):
        target = target[target.index("<") + 1:-1]
    target = target.lstrip("~!").removesuffix("()")
    if target in NOT_MODULES or target in _logger_names():
        return True
    if target.startswith("."):  # relative, as in an import (the package's own convention)
        dots = len(target) - len(target.lstrip("."))
        package = ref.module.split(".")
        is_package = (ROOT / Path(*package) / "__init__.py").exists()
        anchor = package if is_package else package[:-1]
        anchor = anchor[: len(anchor) - (dots - 1)]
        return bool(ref.module) and _ok(".".join([*anchor, target.lstrip(".")]))
    if hasattr(builtins, target.split(".")[0]) and _ok(f"builtins.{target}"):
        return True
    scopes = []
    if ref.module:
        parts = ref.module.split(".")
        if ref.cls:
            scopes.append(f"{ref.module}.{ref.cls}")
        scopes += [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
    scopes.append("")
    if any(_ok(f"{scope}.{target}" if scope else target) for scope in scopes):
        return True
    # As a reader finds it: a name (``Cluster.start``) for one object of ours (re-exports
    # of it count once).
    return len({id(_import(f"{module}.{target}")) for module in _modules()
                if _ok(f"{module}.{target}")}) == 1


@functools.cache
def _ok(name: str) -> bool:
    try:
        _import(name)
    except LookupError:
        return False
    return True


REFS = all_refs()


def broken(refs: list[Ref]) -> list[str]:
    out = []
    for ref in refs:
        if (ref.where.partition(":")[0], ref.target) in HISTORY:
            continue
        if ref.kind == "path":
            ok = path_exists(ref.target)
        elif ref.kind == "file":
            ok = ref.target in NOT_OURS or ref.target in _python_files()
        else:
            ok = resolves(ref)
        if not ok:
            out.append(f"{ref.where}: {ref.kind} {ref.target}")
    return out


def test_every_reference_in_the_docs_and_docstrings_resolves() -> None:
    stale = broken(REFS)
    assert not stale, "stale references:\n" + "\n".join(stale)


def test_every_reference_kept_on_purpose_is_still_written() -> None:
    written = {(ref.where.partition(":")[0], ref.target) for ref in REFS}
    assert set(HISTORY) <= written


@pytest.mark.parametrize("ref", [
    Ref("docs/limits.md:59", "path", "tests/test_bounds.py"),
    Ref("docs/architecture.md:1", "file", "stdio.py"),
    Ref("docs/architecture.md:1", "path", "tornado_mcp/transport/direct.py"),
    Ref("docs/api/transport.md:44", "name", "tornado_mcp.Transport.session_owner"),
    Ref("x.py:1", "class", "~.skill_files.SkillFile", "tornado_mcp.server.skill_methods"),
    Ref("x.py:1", "meth", "drain", "tornado_mcp.engine.engine"),
    Ref("x.py:1", "func", "owner_key", "tornado_mcp.tasks.record", "TaskRecord"),
    Ref("x.py:1", "mod", ".jsonrpc", "tornado_mcp.transport"),
    Ref("x.py:1", "attr", "Transport.no_such_attribute", "tornado_mcp.transport.core"),
], ids=lambda ref: f"{ref.kind} {ref.target}")
def test_a_stale_reference_is_caught(ref: Ref) -> None:
    """References of each kind that went stale in this repository's history."""
    assert broken([ref]) == [f"{ref.where}: {ref.kind} {ref.target}"]


@pytest.mark.parametrize("ref", [
    Ref("x.md:1", "path", "tests/http/test_bounds.py"),
    Ref("x.md:1", "path", "tornado_mcp/transport/"),
    Ref("x.md:1", "file", "seams.py"),
    Ref("x.py:1", "meth", "Engine.drain", "tornado_mcp.engine.engine"),
    Ref("x.py:1", "class", "~.skills.SkillFile", "tornado_mcp.server.skill_methods"),
    Ref("x.py:1", "mod", "..issuer.consent", "tornado_mcp.authserver.pages"),
    Ref("x.py:1", "attr", "Transport.cluster", "tornado_mcp.transport.core"),
    Ref("x.py:1", "meth", "Cluster.start", "tornado_mcp.transport.core"),
    Ref("x.py:1", "class", "typing.Protocol", "tornado_mcp.transport.core"),
    Ref("x.py:1", "exc", "ValueError", "tornado_mcp.options"),
], ids=lambda ref: f"{ref.kind} {ref.target}")
def test_a_live_reference_resolves(ref: Ref) -> None:
    assert broken([ref]) == []
