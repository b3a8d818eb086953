"""The shape of the code: small modules and classes, no import cycles, layers that hold.

Read from the source with ``ast``, so these hold for every module, including ones that
no other test imports.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tornado_mcp", "admin_ui")
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300
#: The modules allowed to import Tornado's web layer (directly or through each other).
WEB_LAYER = ("tornado_mcp", "tornado_mcp.__main__", "tornado_mcp.cli", "tornado_mcp.dashboard",
             "tornado_mcp.transport", "tornado_mcp.testing", "tornado_mcp.pytest_plugin",
             "tornado_mcp.jupyter")
#: The one module of the library that may import the dashboard.
DASHBOARD_JOIN = "tornado_mcp.dashboard"


def _modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


MODULES = dict(_modules())


def _in_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _runtime_imports(name: str, path: Path, top_level_only: bool) -> set[str]:
    """Modules ``name`` imports at run time (not under ``TYPE_CHECKING``); with
    ``top_level_only``, only those imported when the module itself is imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or _in_type_checking(node, parents):
            continue
        if top_level_only and any(isinstance(p, ast.FunctionDef | ast.AsyncFunctionDef)
                                  for p in _ancestors(node, parents)):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = name.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:  # ``from . import jsonio`` imports the submodule
            full = f"{base}.{alias.name}"
            found.add(full if full in MODULES else base)
    return found


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    return {name: _runtime_imports(name, path, top_level_only) for name, path in MODULES.items()}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_and_classes_stay_small(name: str) -> None:
    source = MODULES[name].read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"{name} is over {MAX_MODULE_LINES} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_CLASS_LINES, f"{name}.{node.name} is {length} lines"


def test_no_import_cycle_between_modules() -> None:
    graph = {name: {m for m in deps if m in MODULES and m != name}
             for name, deps in _graph(top_level_only=True).items()}
    # A package's __init__ re-exporting its own submodules is not a cycle: importing a
    # submodule runs its package first by design.
    for name, deps in graph.items():
        deps -= {m for m in list(deps) if name.startswith(m + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                cycle = [*trail[trail.index(dep):], dep] if dep in trail else [node, dep]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if dep not in state:
                visit(dep, [*trail, dep])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_only_the_join_module_imports_the_dashboard() -> None:
    graph = _graph(top_level_only=False)
    importers = sorted(name for name, deps in graph.items()
                       if name.startswith("tornado_mcp")
                       and any(d == "admin_ui" or d.startswith("admin_ui.") for d in deps))
    assert importers == [DASHBOARD_JOIN]


def test_the_protocol_core_does_not_import_the_web_layer() -> None:
    graph = _graph(top_level_only=False)

    def in_web_layer(name: str) -> bool:
        return name in WEB_LAYER or any(name.startswith(w + ".") for w in WEB_LAYER[1:])

    for name in sorted(MODULES):
        if not name.startswith("tornado_mcp") or in_web_layer(name):
            continue
        seen, todo = set(), [name]
        while todo:
            current = todo.pop()
            for dep in graph.get(current, ()):
                assert not (dep == "tornado.web" or dep.startswith("tornado.web.")), \
                    f"{name} reaches tornado.web through {current}"
                assert dep == name or not in_web_layer(dep) or dep not in MODULES, \
                    f"{name} imports the web layer module {dep} (through {current})"
                if dep in MODULES and dep not in seen:
                    seen.add(dep)
                    todo.append(dep)


def test_the_dashboard_reads_the_library_through_its_public_api() -> None:
    for name, path in MODULES.items():
        if not name.startswith("admin_ui"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name) \
                    and node.value.id in ("transport", "t", "server", "options"):
                pytest.fail(f"{name} reads {node.value.id}.{node.attr}")
