"""``import tornado_mcp`` costs little CPU, whatever extras are installed.

It used to cost 1.5-1.9 s of CPU where Jupyter is installed (0.3 s with the core
dependencies alone): ``tornado_mcp.schema.validate`` imported ``jsonschema`` with the
package, and ``jsonschema`` imports every format checker's backend it finds, among them
``rfc3987-syntax``, which builds a Lark grammar when imported.  Every server process the
suite starts paid it, and so did a host app.

Now the package imports no JSON Schema library until a tool's schema is checked, and
checking schemas builds no IRI grammar until a schema asks for an ``iri`` format to be
checked (:mod:`tornado_mcp.schema.library`).  The CPU figure itself is measured by
``python -m bench.import_cost`` (quoted in docs/performance.md, the budget 0.35 s); the
last test holds it to twice that budget, a margin for a loaded shared machine that is still
far below what the grammar alone cost.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

SCHEMA_LIBRARIES = {"jsonschema", "referencing", "jsonschema_specifications"}
GRAMMAR = {"rfc3987_syntax", "lark"}
BUDGET_S = 0.35
MARGIN = 2.0

# A server with typed tools: every schema is checked at declaration and validated on a call.
SERVER_WITH_TOOLS = """
import sys
from tornado_mcp import Server
from tornado_mcp.schema.validate import compile_schema

server = Server("import-cost")

@server.tool()
def add(a: int, b: int = 2) -> int:
    '''Add two numbers.'''
    return a + b

check = compile_schema({"type": "object", "properties": {
    "site": {"type": "string", "format": "iri"}, "n": {"type": "integer"}}})
assert check({"site": "not an IRI at all", "n": 1}) is None  # format is an annotation
assert check({"n": "one"}) == "arguments.n must be of type integer"
"""


def loaded_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after a fresh interpreter ran ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True, text=True, timeout=60, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_importing_the_package_imports_no_schema_library() -> None:
    loaded = loaded_after("import tornado_mcp")
    assert "tornado_mcp.transport" in loaded  # the whole package was imported
    assert loaded.isdisjoint(SCHEMA_LIBRARIES | GRAMMAR), sorted(
        loaded & (SCHEMA_LIBRARIES | GRAMMAR))


def test_checking_and_validating_schemas_builds_no_iri_grammar() -> None:
    loaded = loaded_after(SERVER_WITH_TOOLS)
    assert "jsonschema" in loaded  # the library did the checking
    assert loaded.isdisjoint(GRAMMAR), sorted(loaded & GRAMMAR)


@pytest.mark.skipif(importlib.util.find_spec("rfc3987_syntax") is None,
                    reason="rfc3987-syntax is not installed")
def test_a_schema_that_asks_for_iri_checking_gets_the_real_grammar() -> None:
    """With format checking asked for, the ``iri`` verdicts are rfc3987-syntax's own, and
    the module is the real one for anyone who imports it."""
    code = SERVER_WITH_TOOLS + """
assert "rfc3987_syntax" not in sys.modules
import jsonschema
checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
iri = jsonschema.Draft202012Validator({"format": "iri"}, format_checker=checker)
assert iri.is_valid("https://example.com/caf\\u00e9?q=1#top")
assert not iri.is_valid("no scheme here")
assert not iri.is_valid("http://exa mple.com/")
import rfc3987_syntax
assert hasattr(rfc3987_syntax, "syntax_parser"), "the stand-in was left in sys.modules"
"""
    loaded = loaded_after(code)
    assert loaded >= GRAMMAR  # built once a schema asked for it


def test_the_import_costs_at_most_twice_its_cpu_budget() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.import_cost", "--runs", "3", "--json"],
        capture_output=True, text=True, timeout=120, check=False, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    runs = json.loads(done.stdout)["import tornado_mcp"]
    assert min(runs) <= BUDGET_S * MARGIN, (
        f"import tornado_mcp took {min(runs):.2f} s of CPU at best of {len(runs)} runs; "
        f"python -m bench.import_cost measures it (budget {BUDGET_S} s)")
