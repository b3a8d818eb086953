"""The shape of the code: small modules and classes, no import cycles, layers that hold.

Read from the source with ``ast``, so these hold for every module, including ones that
no other test imports.  Every import counts: module-level, function-local and
``if TYPE_CHECKING:`` ones alike.  When a lower layer needs an object of an upper one, it
declares a :class:`typing.Protocol` for what it uses (as ``ClusterMember`` in
``tornado_mcp/transport/core.py`` does) instead of importing the class.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import io
import textwrap
import tokenize
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tornado.web

ROOT = Path(__file__).resolve().parent.parent
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
#: Below this layer no module imports Tornado at all; below ``WEB_FREE_BELOW`` none
#: imports ``tornado.web``.
TORNADO_FREE_BELOW = 4
WEB_FREE_BELOW = 5
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


def _modules() -> Iterator[tuple[str, Path]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


MODULES = dict(_modules())


@dataclass(frozen=True)
class Edge:
    """One import: ``kind`` is "module" (runs on import), "local" (inside a function) or
    "typing" (under ``if TYPE_CHECKING:``, for the type checker only)."""

    source: str
    target: str
    kind: str
    line: int


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


def _imports(name: str, path: Path) -> list[Edge]:
    """Every import in module ``name``, resolved to absolute module names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    is_package = path.name == "__init__.py"
    found: list[Edge] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        kind = _kind(node, parents)
        if isinstance(node, ast.Import):
            found.extend(Edge(name, alias.name, kind, node.lineno) for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = name.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:  # ``from . import jsonio`` imports the submodule
            full = f"{base}.{alias.name}"
            found.append(Edge(name, full if full in MODULES else base, kind, node.lineno))
    return found


EDGES = [edge for name, path in MODULES.items() for edge in _imports(name, path)]


def _internal(edge: Edge) -> bool:
    """An import of another module of ours (a submodule importing its own package is not
    a dependency: importing the submodule runs the package first by design)."""
    s, t = edge.source, edge.target
    return t in MODULES and t != s and not s.startswith(t + ".")


def _entry(name: str) -> str:
    """The :data:`LAYERS` entry that places ``name``."""
    matches = [key for key in LAYERS
               if name == key or (key != "tornado_mcp" and name.startswith(key + "."))]
    assert matches, f"{name} has no layer: add it to LAYERS"
    return max(matches, key=len)


def _layer(name: str) -> int:
    return LAYERS[_entry(name)]


def _package(name: str) -> str:
    return name.rpartition(".")[0] if name.count(".") > 1 else name


def _graph() -> dict[str, set[str]]:
    """Who imports whom.  A type-only import within one package is Python's ordinary way
    for two modules of it to name each other's classes (the type checker's, never run),
    so it does not count as a cycle; across packages it does."""
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for edge in EDGES:
        if _internal(edge) and not (edge.kind == "typing"
                                    and _package(edge.source) == _package(edge.target)):
            graph[edge.source].add(edge.target)
    return graph


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
    broken = []
    for edge in EDGES:
        if not _internal(edge) or (edge.source, edge.target) in ALLOWED | ALLOWED_RUNTIME:
            continue
        if edge.source == DASHBOARD_JOIN and _entry(edge.target) == "admin_ui":
            continue  # the one sanctioned join (see the next tests)
        source, target = _entry(edge.source), _entry(edge.target)
        if _layer(edge.target) > _layer(edge.source) or (source, target) in FORBIDDEN_SIBLINGS:
            broken.append(f"{edge.source}:{edge.line} ({edge.kind}) imports {edge.target}")
    assert not broken, "\n".join(broken)


def test_low_layers_do_not_import_tornado() -> None:
    broken = []
    for edge in EDGES:
        layer = _layer(edge.source)
        web = edge.target == "tornado.web" or edge.target.startswith("tornado.web.")
        if (edge.target == "tornado" or edge.target.startswith("tornado.")) \
                and (layer < TORNADO_FREE_BELOW or (web and layer < WEB_FREE_BELOW)):
            broken.append(f"{edge.source}:{edge.line} imports {edge.target}")
    assert not broken, "\n".join(broken)


def test_no_import_cycle_between_modules() -> None:
    graph = _graph()
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
        graph = _graph()
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
    for name, path in MODULES.items():
        if not name.startswith("admin_ui"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name) \
                    and node.value.id in ("transport", "t", "server", "options"):
                pytest.fail(f"{name} reads {node.value.id}.{node.attr}")


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
    names: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("tornado."):
            continue
        names.update(n for n in vars(klass) if n.startswith("_") and not n.startswith("__"))
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
