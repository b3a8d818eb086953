"""The shape of the code: small modules and classes, no import cycles, layers that hold.

Read from the source with ``ast``, so these hold for every module, including ones that
no other test imports.  Every import counts: module-level, function-local and
``if TYPE_CHECKING:`` ones alike, a call of ``importlib.import_module`` or ``__import__``
with a literal name, and a dotted name read off an imported module (``tornado.web.X`` after
``import tornado``); a module named only at run time is refused unless listed with why.
Each check is a function of a :class:`Tree`, and a test writes a deliberate fault into a
copy of the packages to see each one caught.  When a lower layer needs an object of an upper one, it
declares a :class:`typing.Protocol` for what it uses (as ``ClusterMember`` in
``tornado_mcp/transport/core.py`` does) instead of importing the class.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import io
import shutil
import textwrap
import tokenize
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tornado.web

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("tornado_mcp", "admin_ui")
#: The size rules count code lines: not blank lines, comments or docstrings, so
#: explaining the code never costs room for it.  A module may hold ``MAX_MODULE_CODE``
#: code lines and a class ``MAX_CLASS_CODE``, unless ``tests/sizes.toml`` records more for
#: it; a recorded figure only goes down (this test says when it can), and a commit that
#: raises one says why.
MAX_MODULE_CODE = 400
MAX_CLASS_CODE = 250
SIZES = ROOT / "tests" / "sizes.toml"

#: Module (or package) -> layer.  A module imports only from its own layer or a lower one.
#: The longest matching entry decides; ``tornado_mcp`` itself is the facade (its
#: ``__init__``) only.
LAYERS = {
    # L0, the wire vocabulary and pure values; the thread pool plain handlers run in (it
    # knows nothing of MCP)
    "tornado_mcp.protocol": 0, "tornado_mcp.options": 0, "tornado_mcp.introspection": 0,
    "tornado_mcp.sync": 0,
    # L1, JSON Schema for Python types, validation, conversion
    "tornado_mcp.schema": 1,
    # L2, the protocol core
    "tornado_mcp.server": 2,
    # L3, the extensions built on the core (skills, MCP Apps), and the Server, which holds
    # the core's parts and the extensions together (with the old import paths of two
    # extensions, which only re-export them)
    "tornado_mcp.extensions": 3, "tornado_mcp.server.server": 3,
    "tornado_mcp.server.skills": 3, "tornado_mcp.server.apps": 3,
    # L4, transport-agnostic serving
    "tornado_mcp.engine": 4, "tornado_mcp.tasks": 4, "tornado_mcp.auth": 4,
    "tornado_mcp.issuer": 4,
    # L5, the transports
    "tornado_mcp.transport": 5, "tornado_mcp.stdio": 5,
    # L6, what is built on the transports, and the public facade
    "tornado_mcp.cluster": 6, "tornado_mcp.jupyter": 6, "tornado_mcp.authserver": 6,
    "tornado_mcp.cli": 6,
    "tornado_mcp.demo": 6, "tornado_mcp.dashboard": 6, "tornado_mcp.testing": 6,
    "tornado_mcp.pytest_plugin": 6, "tornado_mcp.__main__": 6, "tornado_mcp": 6,
    # L7, the dashboard (public API only)
    "admin_ui": 7,
}
#: The public facade: what users import.  No module of the package imports it (it imports
#: them all, and a module reaching a name through it hides where the name lives and
#: which layer it is in); each imports the module that defines the name.
FACADE = "tornado_mcp"
#: Siblings of one layer that must not import each other (importer, imported): in L3 the
#: extensions never import the Server that holds them (it is given to them as an
#: ExtensionHost); in L4 the engine may import tasks and auth, never the reverse; in L5
#: the two transports are apart.
FORBIDDEN_SIBLINGS = {
    ("tornado_mcp.extensions", "tornado_mcp.server.server"),
    ("tornado_mcp.tasks", "tornado_mcp.engine"),
    ("tornado_mcp.auth", "tornado_mcp.engine"),
    ("tornado_mcp.stdio", "tornado_mcp.transport"),
    ("tornado_mcp.transport", "tornado_mcp.stdio"),
}
#: Which Tornado modules each part of the package may import (``None``: any), by the
#: :data:`LAYERS` entry that places the importer, with why.  ``import tornado`` alone counts
#: as the whole of Tornado (``tornado.web`` is an attribute of it), and so does every
#: module left out: ``tornado.web``, ``tornado.httpserver`` and ``tornado.routing`` serve
#: HTTP, which only the transport and what is built on it do.
NO_TORNADO: frozenset[str] = frozenset()
TORNADO_MODULES: dict[str, tuple[frozenset[str] | None, str]] = {
    **{entry: (NO_TORNADO, "pure: the same code serves stdio, HTTP and the tests")
       for entry in ("tornado_mcp.protocol", "tornado_mcp.options",
                     "tornado_mcp.introspection", "tornado_mcp.schema", "tornado_mcp.server",
                     "tornado_mcp.server.server", "tornado_mcp.server.skills",
                     "tornado_mcp.server.apps", "tornado_mcp.extensions")},
    "tornado_mcp.sync": (NO_TORNADO, "a thread pool on asyncio, knowing nothing of MCP"),
    "tornado_mcp.engine": (NO_TORNADO, "the one pipeline of every transport runs on asyncio"),
    "tornado_mcp.tasks": (NO_TORNADO, "the engine's tasks, on asyncio like it"),
    "tornado_mcp.stdio": (NO_TORNADO, "stdin and stdout on asyncio, no HTTP at all"),
    "tornado_mcp.auth": (frozenset({"tornado.httpclient"}),
                         "an HTTP client of the identity provider (JWKS, RFC 7662)"),
    "tornado_mcp.issuer": (
        frozenset({"tornado.httpclient", "tornado.simple_httpclient", "tornado.netutil",
                   "tornado.iostream", "tornado.httputil"}),
        "fetches Client ID Metadata Documents: an HTTP client on its own SSRF-safe resolver, "
        "and the errors a bad peer raises through it"),
    **{entry: (None, "serves HTTP on Tornado, or is built on what does")
       for entry in ("tornado_mcp.transport", "tornado_mcp.cluster", "tornado_mcp.jupyter",
                     "tornado_mcp.authserver", "tornado_mcp.cli", "tornado_mcp.demo",
                     "tornado_mcp.dashboard", "tornado_mcp.testing",
                     "tornado_mcp.pytest_plugin", "tornado_mcp.__main__", "tornado_mcp",
                     "admin_ui")},
}
#: The one module of the library that may import the dashboard.
DASHBOARD_JOIN = "tornado_mcp.dashboard"

#: Known ``if TYPE_CHECKING:`` edges that close a cycle or point up a layer, each to be
#: replaced by a Protocol and then deleted from here (a test fails when an entry is no
#: longer needed).  Nothing else may break the rules.
ALLOWED: set[tuple[str, str]] = set()
#: Known runtime edges that point up a layer, likewise to be removed.
ALLOWED_RUNTIME: set[tuple[str, str]] = {
    # ``tornado_mcp.tasks.RedisTaskStore``, a lazy re-export of the Redis store (function-local).
    ("tornado_mcp.tasks", "tornado_mcp.cluster.task_store"),
}
#: Calls that import a module named at run time, so no test can read the edge: each is
#: refused unless listed here (importer, the function the call is in) with why.  A call with
#: a literal name (or a module-level constant holding one) is an import like any other.
DYNAMIC_IMPORTS: dict[tuple[str, str], str] = {
    ("tornado_mcp.stdio", "load_server"):
        "the user's server, named on the command line (module:attr or path/to/file.py:attr)",
    ("tornado_mcp.jupyter.extension", "_import"):
        "the tool functions the MCPExtension.tools trait names (module:function)",
}
#: The functions that import a module by name, and those that load a file as one.
IMPORTERS = frozenset({"import_module", "__import__"})
FILE_LOADERS = frozenset({"spec_from_file_location"})
#: Top-level packages outside ours whose submodules the rules name (only Tornado), so an
#: import of one is resolved to the submodule it reaches (``from tornado import web``).
RULED_EXTERNAL = frozenset({"tornado"})


def _modules(root: Path) -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


@dataclass(frozen=True)
class Edge:
    """One import: ``kind`` is "module" (runs on import), "local" (inside a function) or
    "typing" (under ``if TYPE_CHECKING:``, for the type checker only); ``path`` is the
    importing file, relative to the tree's root."""

    source: str
    target: str
    kind: str
    line: int
    path: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line} ({self.source}, {self.kind})"


@dataclass(frozen=True)
class DynamicImport:
    """A call that imports a module whose name is only known at run time."""

    source: str
    function: str
    line: int
    path: str
    call: str


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _kind(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    child, typing_only, local = node, False, False
    for parent in _ancestors(node, parents):
        if isinstance(parent, ast.If) and _is_type_checking(parent.test) \
                and child in parent.body:  # not the ``else:`` branch, which runs
            typing_only = True
        local = local or isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef)
        child = parent
    return "typing" if typing_only else "local" if local else "module"


def _function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str:
    """The name of the innermost function ``node`` is in ("" at module level)."""
    for parent in _ancestors(node, parents):
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return parent.name
    return ""


@functools.cache
def _external_module(name: str) -> bool:
    """Whether ``name`` is a module of a :data:`RULED_EXTERNAL` package (not a name in one)."""
    if name.split(".")[0] not in RULED_EXTERNAL:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent that is a module, not a package
        return False


class _Scanner:
    """Every import of one module: statements, calls of :data:`IMPORTERS`, and dotted names
    read off an imported module (``import tornado_mcp`` then ``tornado_mcp.Transport``)."""

    def __init__(self, name: str, path: str, source: str, modules: frozenset[str]) -> None:
        self.name, self.path, self.modules = name, path, modules
        self.tree = ast.parse(source)
        self.parents = {child: node for node in ast.walk(self.tree)
                        for child in ast.iter_child_nodes(node)}
        self.is_package = path.endswith("__init__.py")
        self.edges: list[Edge] = []
        self.dynamic: list[DynamicImport] = []
        #: Names bound to a module by an import (``import a.b`` binds ``a``), with the
        #: import's kind ("typing" when only ``if TYPE_CHECKING:`` imports bind it).
        self.bound: dict[str, tuple[str, str]] = {}
        #: Module-level names bound to a string constant (a module named once).
        self.constants = {t.id: n.value.value for n in self.tree.body
                          if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                          and isinstance(n.value.value, str)
                          for t in n.targets if isinstance(t, ast.Name)}

    def _is_module(self, name: str) -> bool:
        return name in self.modules or _external_module(name)

    def _add(self, target: str, node: ast.AST, kind: str | None = None) -> None:
        self.edges.append(Edge(self.name, target, kind or _kind(node, self.parents),
                               getattr(node, "lineno", 0), self.path))

    def _bind(self, name: str, module: str, node: ast.AST) -> None:
        kind = _kind(node, self.parents)
        earlier = self.bound.get(name)
        if earlier is None or earlier[1] == "typing":
            self.bound[name] = (module, kind)

    def _absolute(self, module: str, level: int) -> str:
        if not level:
            return module
        anchor = self.name.split(".")
        anchor = anchor if self.is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (level - 1)]
        return ".".join([*anchor, module] if module else anchor)

    def scan(self) -> _Scanner:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self._add(alias.name, node)
                    top = alias.name.split(".")[0]
                    self._bind(alias.asname or top, alias.name if alias.asname else top, node)
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(node.module or "", node.level)
                for alias in node.names:  # ``from . import jsonio`` imports the submodule
                    full = f"{base}.{alias.name}"
                    target = full if self._is_module(full) else base
                    self._add(target, node)
                    if target == full:
                        self._bind(alias.asname or alias.name, full, node)
            elif isinstance(node, ast.Call):
                self._call(node)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Attribute) \
                    and not isinstance(self.parents[node], ast.Attribute):
                self._dotted(node)
        return self

    def _call(self, node: ast.Call) -> None:
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else \
            func.id if isinstance(func, ast.Name) else None
        if called not in IMPORTERS | FILE_LOADERS:
            return
        arg = node.args[0] if node.args else None
        literal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
            else self.constants.get(arg.id) if isinstance(arg, ast.Name) else None
        if called in IMPORTERS and literal is not None and not literal.startswith("."):
            self._add(literal, node)
        else:
            self.dynamic.append(DynamicImport(self.name, _function(node, self.parents),
                                              node.lineno, self.path, ast.unparse(node)))

    def _dotted(self, node: ast.Attribute) -> None:
        """``a.b.c`` where ``a`` names an imported module: an import of the longest dotted
        prefix that is a module (``tornado_mcp.Transport`` after ``import tornado_mcp.x``
        reads the facade; ``tornado.web.X`` after ``import tornado.httpclient`` reaches
        ``tornado.web``, which Tornado's package imports on first access)."""
        parts: list[str] = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            parts.insert(0, value.attr)
            value = value.value
        if not isinstance(value, ast.Name) or value.id not in self.bound:
            return
        base, bound_kind = self.bound[value.id]
        for i in range(len(parts), -1, -1):
            full = ".".join([base, *parts[:i]])
            if self._is_module(full):
                self._add(full, node, "typing" if bound_kind == "typing" else None)
                return


@functools.cache
def _scan(name: str, path: str, source: str, modules: frozenset[str]) -> _Scanner:
    return _Scanner(name, path, source, modules).scan()


class Tree:
    """The packages under ``root`` as these checks read them: this checkout, or a copy of
    it with a deliberate fault (the tests that the checks catch what they claim)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules = dict(_modules(root))
        names = frozenset(self.modules)
        self.paths = {name: path.relative_to(root).as_posix()
                      for name, path in self.modules.items()}
        self.edges: list[Edge] = []
        self.dynamic: list[DynamicImport] = []
        for name, path in self.modules.items():
            scanned = _scan(name, self.paths[name], path.read_text(encoding="utf-8"), names)
            self.edges += scanned.edges
            self.dynamic += scanned.dynamic

    def internal(self, edge: Edge) -> bool:
        """An import of another module of ours."""
        return edge.target in self.modules and edge.target != edge.source

    def graph(self) -> dict[str, set[str]]:
        """Who imports whom.  A submodule importing its own package is not a dependency
        (importing the submodule runs the package first by design); a type-only import
        within one package is Python's ordinary way for two modules of it to name each
        other's classes (the type checker's, never run), so it does not count as a cycle;
        across packages it does."""
        graph: dict[str, set[str]] = {name: set() for name in self.modules}
        for edge in self.edges:
            if self.internal(edge) and not edge.source.startswith(edge.target + ".") \
                    and not (edge.kind == "typing"
                             and _package(edge.source) == _package(edge.target)):
                graph[edge.source].add(edge.target)
        return graph


TREE = Tree(ROOT)
MODULES = TREE.modules
EDGES = TREE.edges


def _entry(name: str) -> str:
    """The :data:`LAYERS` entry that places ``name``."""
    matches = [key for key in LAYERS
               if name == key or (key != FACADE and name.startswith(key + "."))]
    assert matches, f"{name} has no layer: add it to LAYERS"
    return max(matches, key=len)


def _layer(name: str) -> int:
    return LAYERS[_entry(name)]


def _package(name: str) -> str:
    return name.rpartition(".")[0] if name.count(".") > 1 else name


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for dep in graph[todo.pop()]:
            if dep == goal:
                return True
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return False


def layer_breaks(tree: Tree) -> list[str]:
    """Imports that point up a layer, or between siblings kept apart."""
    broken = []
    for edge in tree.edges:
        if not tree.internal(edge) or (edge.source, edge.target) in ALLOWED | ALLOWED_RUNTIME:
            continue
        if edge.source == DASHBOARD_JOIN and _entry(edge.target) == "admin_ui":
            continue  # the one sanctioned join (see the tests below)
        source, target = _entry(edge.source), _entry(edge.target)
        if _layer(edge.target) > _layer(edge.source) or (source, target) in FORBIDDEN_SIBLINGS:
            broken.append(f"{edge.where} imports {edge.target}")
    return broken


def facade_imports(tree: Tree) -> list[str]:
    """Modules of the package that import its facade (``from tornado_mcp import X``,
    ``import tornado_mcp``, ``from .. import X`` reaching it from a subpackage)."""
    return [f"{edge.where} imports the facade {FACADE}: import the module that defines it"
            for edge in tree.edges
            if edge.target == FACADE and edge.source.startswith(FACADE + ".")]


def tornado_breaks(tree: Tree) -> list[str]:
    """Imports of a Tornado module that :data:`TORNADO_MODULES` does not give the importer."""
    broken = []
    for edge in tree.edges:
        if edge.target.split(".")[0] != "tornado":
            continue
        allowed, why = TORNADO_MODULES[_entry(edge.source)]
        if allowed is not None and edge.target not in allowed:
            broken.append(f"{edge.where} imports {edge.target}, which "
                          f"{_entry(edge.source)} may not ({why})")
    return broken


def dynamic_breaks(tree: Tree) -> list[str]:
    """Imports of a module named at run time that :data:`DYNAMIC_IMPORTS` does not list."""
    return [f"{d.path}:{d.line} ({d.source}) imports a module named at run time: {d.call}"
            for d in tree.dynamic if (d.source, d.function) not in DYNAMIC_IMPORTS]


def dashboard_private_reads(tree: Tree) -> list[str]:
    """Where the dashboard reads a private attribute of anything but its own objects:
    ``self``, ``cls``, ``super()`` and its own modules are its own; any other chain
    (``state.transport._sessions``, ``self.x._y``, ``a.b()._c``, ``getattr(t, "_y")``)
    reaches into the library, which it reads through its public API only."""
    found = []
    for name, path in tree.modules.items():
        if _entry(name) != "admin_ui":
            continue
        scanned = _scan(name, tree.paths[name], path.read_text(encoding="utf-8"),
                        frozenset(tree.modules))
        own = {"self", "cls"} | {bound for bound, (module, _) in scanned.bound.items()
                                 if module in tree.modules and _entry(module) == "admin_ui"}
        for node in ast.walk(scanned.tree):
            if isinstance(node, ast.Attribute):
                attr, target = node.attr, node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str):
                attr, target = node.args[1].value, node.args[0]
            else:
                continue
            if not attr.startswith("_") or attr.startswith("__"):
                continue
            if (isinstance(target, ast.Name) and target.id in own) or (
                    isinstance(target, ast.Call) and isinstance(target.func, ast.Name)
                    and target.func.id == "super" and not target.args):
                continue
            found.append(f"{tree.paths[name]}:{node.lineno} ({name}) reads "
                         f"{ast.unparse(target)}.{attr}: not the dashboard's own")
    return found


def code_lines(source: str) -> set[int]:
    """The numbers of ``source``'s lines that hold code: not blank, not only a comment,
    not part of a docstring."""
    tree = ast.parse(source)
    docs: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                docs.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
            tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return lines - docs


def sizes(source: str) -> dict[str, int]:
    """Code lines of the module (``""``) and of each class in it (by name)."""
    lines = code_lines(source)
    out = {"": len(lines)}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            span = range(node.lineno, (node.end_lineno or node.lineno) + 1)
            out[node.name] = sum(1 for line in span if line in lines)
    return out


def recorded_sizes() -> dict[str, int]:
    """``tests/sizes.toml``: ``"module" = N`` or ``"module:Class" = N`` code lines."""
    return {str(k): int(v) for k, v in tomllib.loads(SIZES.read_text()).items()}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_and_classes_stay_small(name: str) -> None:
    recorded = recorded_sizes()
    for part, lines in sizes(MODULES[name].read_text(encoding="utf-8")).items():
        key = f"{name}:{part}" if part else name
        limit = recorded.get(key, MAX_CLASS_CODE if part else MAX_MODULE_CODE)
        assert lines <= limit, (f"{key} has {lines} code lines, over {limit}: split it by "
                                "responsibility, or raise its line in tests/sizes.toml "
                                "and say why in the commit")


def test_recorded_sizes_only_go_down() -> None:
    """Each figure in ``tests/sizes.toml`` is over the default and within a few lines of
    what it records: as the code shrinks, so does its figure."""
    stale = []
    for key, limit in recorded_sizes().items():
        name, _, part = key.partition(":")
        actual = sizes(MODULES[name].read_text(encoding="utf-8")).get(part, 0)
        default = MAX_CLASS_CODE if part else MAX_MODULE_CODE
        if limit <= default or limit > actual + 5:
            stale.append(f"{key} = {limit}: now {actual} (default {default})")
    assert not stale, "tighten tests/sizes.toml:\n" + "\n".join(stale)


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name in MODULES if name.startswith("tornado_mcp.")
                and _entry(name) == "tornado_mcp"]
    assert unplaced == []


def test_imports_go_to_the_same_layer_or_a_lower_one() -> None:
    broken = layer_breaks(TREE)
    assert not broken, "\n".join(broken)


def test_no_module_of_the_package_imports_its_facade() -> None:
    broken = facade_imports(TREE)
    assert not broken, "\n".join(broken)


def test_each_part_imports_only_the_tornado_modules_it_may() -> None:
    broken = tornado_breaks(TREE)
    assert not broken, "\n".join(broken)


def test_the_tornado_table_keeps_http_serving_in_the_transport_and_above() -> None:
    """The table itself says what docs/architecture.md does: below the transports nothing
    imports ``tornado.web``, ``tornado.httpserver`` or ``tornado.routing``, and the first
    three layers and the engine import no Tornado at all."""
    assert set(TORNADO_MODULES) == set(LAYERS)
    for entry, (allowed, why) in TORNADO_MODULES.items():
        assert why
        if LAYERS[entry] < 4:
            assert allowed is not None
            assert not allowed & {"tornado", "tornado.web", "tornado.httpserver",
                                  "tornado.routing"}, entry
        if LAYERS[entry] < 3 or entry in ("tornado_mcp.engine", "tornado_mcp.tasks"):
            assert allowed == NO_TORNADO, entry


def test_modules_named_at_run_time_are_imported_only_where_listed() -> None:
    broken = dynamic_breaks(TREE)
    assert not broken, "\n".join(broken)
    used = {(d.source, d.function) for d in TREE.dynamic}
    assert set(DYNAMIC_IMPORTS) <= used, "drop from DYNAMIC_IMPORTS what no longer imports"


def test_no_import_cycle_between_modules() -> None:
    graph = TREE.graph()
    for source, target in ALLOWED:
        graph[source].discard(target)
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


def test_every_allowed_exception_is_still_needed() -> None:
    """The known exceptions only shrink: each is a type-only import (or, in
    :data:`ALLOWED_RUNTIME`, a runtime one) that still points up, or that alone closes a
    cycle once the other exceptions are taken out."""
    kinds: dict[tuple[str, str], set[str]] = {}
    for edge in EDGES:
        kinds.setdefault((edge.source, edge.target), set()).add(edge.kind)
    for pair in sorted(ALLOWED | ALLOWED_RUNTIME):
        source, target = pair
        assert pair in kinds, f"{source} no longer imports {target}: drop it from ALLOWED"
        if pair in ALLOWED:
            assert kinds[pair] == {"typing"}, f"{source} imports {target} at run time"
        graph = TREE.graph()
        for other in ALLOWED - {pair}:
            graph[other[0]].discard(other[1])
        upward = _layer(target) > _layer(source)
        assert upward or _reaches(graph, target, source), \
            f"{source} -> {target} neither points up nor closes a cycle: drop it from ALLOWED"


def test_only_the_join_module_imports_the_dashboard() -> None:
    importers = sorted({edge.source for edge in EDGES if edge.source.startswith("tornado_mcp")
                        and (edge.target == "admin_ui" or edge.target.startswith("admin_ui."))})
    assert importers == [DASHBOARD_JOIN]


def test_the_dashboard_reads_the_library_through_its_public_api() -> None:
    broken = dashboard_private_reads(TREE)
    assert not broken, "\n".join(broken)


# -- the checks catch what they claim: a deliberate fault in a copy of the code ------------

def faulty_copy(tmp_path: Path, path: str, code: str) -> Tree:
    """A copy of the packages with ``code`` appended to ``path`` (relative to the root)."""
    root = tmp_path / "copy"
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    target = root / path
    target.write_text(target.read_text(encoding="utf-8") + "\n\n" + code, encoding="utf-8")
    return Tree(root)


ENGINE = "tornado_mcp/engine/engine.py"
SERVER = "tornado_mcp/server/server.py"
DASHBOARD_API = "admin_ui/api.py"
FAULTS = {
    # the package's facade, reached from inside it
    "facade from": (facade_imports, ENGINE, "from tornado_mcp import Transport\n"),
    "facade from, a layer up": (layer_breaks, ENGINE, "from tornado_mcp import Transport\n"),
    "facade imported, read": (
        facade_imports, "tornado_mcp/cluster/core.py",
        "def probe():\n    import tornado_mcp\n    return tornado_mcp.Transport\n"),
    "facade read off a submodule's import": (
        facade_imports, "tornado_mcp/transport/core.py",
        "import tornado_mcp.server.server\n\n\ndef probe():\n"
        "    return tornado_mcp.Transport\n"),
    "facade from a subpackage, relative": (facade_imports, SERVER, "from .. import Transport\n"),
    "facade, typing only": (
        facade_imports, SERVER,
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from tornado_mcp import Context\n"),
    # Tornado modules a layer may not import
    "from tornado import web": (tornado_breaks, ENGINE, "from tornado import web\n"),
    "import tornado.web": (tornado_breaks, ENGINE, "def probe():\n    import tornado.web\n"),
    "import tornado": (tornado_breaks, SERVER, "import tornado\n"),
    "tornado.web read off tornado": (
        tornado_breaks, "tornado_mcp/auth/http.py",
        "import tornado.httpclient\n\n\ndef probe():\n    return tornado.web.RequestHandler\n"),
    "httpserver in auth": (
        tornado_breaks, "tornado_mcp/auth/http.py", "from tornado.httpserver import HTTPServer\n"),
    "routing in issuer": (
        tornado_breaks, "tornado_mcp/issuer/cimd.py", "from tornado.routing import Router\n"),
    "ioloop in stdio": (
        tornado_breaks, "tornado_mcp/stdio/connection.py", "from tornado.ioloop import IOLoop\n"),
    # imports by a call
    "import_module, literal": (
        layer_breaks, ENGINE,
        "def probe():\n    return importlib.import_module('tornado_mcp.transport.core')\n"),
    "__import__, literal": (layer_breaks, SERVER, "__import__('tornado_mcp.cluster')\n"),
    "import_module of a constant": (
        tornado_breaks, ENGINE,
        "WEB = 'tornado.web'\n\n\ndef probe():\n    return importlib.import_module(WEB)\n"),
    "import_module, non-literal": (
        dynamic_breaks, ENGINE, "def probe(name):\n    return importlib.import_module(name)\n"),
    "import_module, relative": (
        dynamic_breaks, SERVER,
        "def probe():\n    return importlib.import_module('.builtins', __package__)\n"),
    "a file loaded as a module": (
        dynamic_breaks, "tornado_mcp/cli.py",
        "def probe(where):\n    return importlib.util.spec_from_file_location('m', where)\n"),
    # the dashboard reading the library's private state
    "private off a chain": (
        dashboard_private_reads, DASHBOARD_API,
        "def probe(state):\n    return state.transport._sessions\n"),
    "private off self's attribute": (
        dashboard_private_reads, DASHBOARD_API,
        "class Probe:\n    def probe(self):\n        return self.x._y\n"),
    "private off a call": (
        dashboard_private_reads, DASHBOARD_API, "def probe(a):\n    return a.b()._c\n"),
    "private off a bare name": (
        dashboard_private_reads, DASHBOARD_API, "def probe(transport):\n    return transport._x\n"),
    "private by getattr": (
        dashboard_private_reads, DASHBOARD_API,
        "def probe(t):\n    return getattr(t, '_sessions')\n"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_deliberate_fault_in_a_copy_is_caught(tmp_path: Path, fault: str) -> None:
    check, path, code = FAULTS[fault]
    assert not check(TREE)
    found = check(faulty_copy(tmp_path, path, code))
    assert found and all(line.startswith(f"{path}:") for line in found), found


def test_the_dashboards_own_objects_are_its_own(tmp_path: Path) -> None:
    """``self``, ``cls``, ``super()`` and the dashboard's own modules: no fault."""
    code = ("from . import history\n\n\nclass Probe:\n    def probe(self):\n"
            "        return self._a, super()._b, history._c, getattr(self, '_d')\n")
    assert dashboard_private_reads(faulty_copy(tmp_path, DASHBOARD_API, code)) == []


# -- Tornado only through its public API -------------------------------------------------------

def _tornado_classes() -> tuple[type, ...]:
    """The Tornado classes the package builds on or holds instances of."""
    from tornado import http1connection, httpserver, httputil, iostream, web
    return (web.RequestHandler, web.Application, httputil.HTTPServerRequest,
            httputil.HTTPHeaders, httputil.HTTPMessageDelegate,
            httputil.HTTPServerConnectionDelegate, httputil.HTTPConnection,
            http1connection.HTTP1Connection, iostream.BaseIOStream, iostream.IOStream,
            httpserver.HTTPServer)


@functools.cache
def _private_names(cls: type) -> frozenset[str]:
    """The private names of ``cls`` and its Tornado bases: their methods and attributes,
    and every ``x._name`` their source assigns (``self._finished``,
    ``self.request._body_future``)."""
    return frozenset().union(*(_own_private_names(klass) for klass in cls.__mro__
                               if klass.__module__.startswith("tornado.")))


@functools.cache
def _own_private_names(klass: type) -> frozenset[str]:
    """The private names one Tornado class defines or assigns (read from its source once:
    ``RequestHandler`` is a base of many of the package's classes)."""
    names = {n for n in vars(klass) if n.startswith("_") and not n.startswith("__")}
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(klass)))):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            names.add(node.attr)
    return frozenset(names)


TORNADO_CLASSES = _tornado_classes()
#: Every private name of the Tornado classes the package uses (and of the delegate that
#: drives a ``RequestHandler``, which sets some of them on the request).
TORNADO_PRIVATE = frozenset().union(
    *(_private_names(c) for c in (*TORNADO_CLASSES, tornado.web._HandlerDelegate)))


def tornado_private_uses(name: str, source: str,
                         tornado_bases: dict[str, set[str]] | None = None) -> list[str]:
    """Where ``source`` (module ``name``) reaches a private Tornado name: imports one, or
    reads one off an object (``x._name``, ``getattr(x, "_name")``) that is not the
    instance itself; ``self._name`` counts in a class of ``tornado_bases`` (class name ->
    the private names it inherits from Tornado)."""
    tornado_bases = tornado_bases or {}
    found = []
    tree = ast.parse(source)
    own: dict[ast.AST, set[str]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            own[node] = tornado_bases.get(cls.name, set())
    for node in ast.walk(tree):
        attr = target = None
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tornado":
            found += [f"{name}:{node.lineno} imports {node.module}.{a.name}"
                      for a in node.names if a.name.startswith("_")]
        elif isinstance(node, ast.Attribute):
            attr, target = node.attr, node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            attr, target = node.args[1].value, node.args[0]
        if attr is None or not attr.startswith("_") or attr.startswith("__"):
            continue
        if isinstance(target, ast.Name) and target.id in ("self", "cls"):
            if attr in own.get(node, set()):
                found.append(f"{name}:{node.lineno} uses Tornado's private {attr}")
        elif attr in TORNADO_PRIVATE:
            found.append(f"{name}:{node.lineno} uses Tornado's private {attr}")
    return found


def _tornado_bases(name: str) -> dict[str, set[str]]:
    module = importlib.import_module(name)
    return {cls_name: _private_names(cls) for cls_name, cls in vars(module).items()
            if isinstance(cls, type) and cls.__module__ == name
            and issubclass(cls, TORNADO_CLASSES)}


def test_tornado_only_through_its_public_api() -> None:
    """No module of the package reaches a private Tornado name: none imported, none read
    off a Tornado object, none of its own Tornado bases' used by a handler
    (``transport/seams.py`` lists what the endpoint uses beyond the interfaces it
    implements, all public)."""
    from tornado_mcp.transport.seams import PRIVATE_NAMES
    broken = [use for name, path in MODULES.items()
              for use in tornado_private_uses(name, path.read_text(encoding="utf-8"),
                                              _tornado_bases(name))]
    assert not broken, "\n".join(broken)
    assert PRIVATE_NAMES == ()


@pytest.mark.parametrize("line", [
    "from tornado.web import _UIModuleNamespace",
    "def f(h): return h._finished",
    "def f(r): return r._body_future",
    "def f(c): return getattr(c, '_body_timeout', None)",
    "def f(s): return s._total_write_done_index",
    "class H:\n    def f(self): return self._transforms",
])
def test_a_private_tornado_name_is_caught(line: str) -> None:
    assert tornado_private_uses("tornado_mcp.probe", line,
                                {"H": _private_names(TORNADO_CLASSES[0])})
