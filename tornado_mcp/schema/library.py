"""The ``jsonschema`` library, imported when a schema is first checked, not with the package.

Importing ``jsonschema`` imports every format checker's backend it finds installed, whether
or not a schema ever asks for that format.  One of them is expensive: ``rfc3987-syntax``
(the ``iri`` and ``iri-reference`` formats; ``jsonschema[format-nongpl]`` pulls it in, and
Jupyter's ``nbformat`` pulls in that) builds some thirty Lark Earley parsers when imported,
about 2 s of CPU, which every process that imported ``tornado_mcp`` used to pay.

So this module

* imports ``jsonschema`` and ``referencing`` only when :func:`load` is first called (when a
  tool's schema is checked or validated), not when ``tornado_mcp`` is imported; and
* imports ``jsonschema`` with a stand-in for ``rfc3987_syntax`` whose
  ``is_valid_syntax`` imports the real module the first time it is called: the grammar is
  built when a schema asks for an ``iri`` format to be checked (tornado-mcp itself never
  does: in draft 2020-12 ``format`` is an annotation, and no metaschema uses ``iri``), and
  the verdicts are the real module's.  The stand-in leaves ``sys.modules`` once
  ``jsonschema`` is imported, so any other ``import rfc3987_syntax`` gets the real module.

When ``jsonschema`` or ``rfc3987_syntax`` is already imported, or ``rfc3987_syntax`` is not
installed, nothing is stood in for.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
import threading
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import referencing
    from jsonschema.protocols import Validator as LibraryValidator

#: The module whose import builds the IRI grammar.
IRI_GRAMMAR_MODULE = "rfc3987_syntax"

_import_lock = threading.Lock()


class Library:
    """What :mod:`tornado_mcp.schema.validate` uses of ``jsonschema`` and ``referencing``."""

    def __init__(self) -> None:
        import jsonschema_specifications
        import referencing
        import referencing.exceptions
        import referencing.jsonschema
        from jsonschema import exceptions, validators

        self.exceptions = exceptions
        self.referencing = referencing
        self.unresolvable = referencing.exceptions.Unresolvable
        self.specification_with = referencing.jsonschema.specification_with
        self.metaschemas: referencing.Registry[Any] = jsonschema_specifications.REGISTRY
        #: No ``retrieve``: a reference outside the schema and the metaschemas is
        #: unresolvable.
        self.no_remote: referencing.Registry[Any] = referencing.Registry()
        self.default: type[LibraryValidator] = validators.Draft202012Validator
        self.dialects: dict[str, type[LibraryValidator]] = {
            "https://json-schema.org/draft/2020-12/schema": validators.Draft202012Validator,
            "https://json-schema.org/draft/2019-09/schema": validators.Draft201909Validator,
            "http://json-schema.org/draft-07/schema": validators.Draft7Validator,
            "http://json-schema.org/draft-06/schema": validators.Draft6Validator,
            "http://json-schema.org/draft-04/schema": validators.Draft4Validator,
        }


@functools.cache
def load() -> Library:
    """Import the library (once; the IRI grammar deferred) and return what is used of it."""
    with _import_lock:
        if IRI_GRAMMAR_MODULE in sys.modules or "jsonschema" in sys.modules \
                or importlib.util.find_spec(IRI_GRAMMAR_MODULE) is None:
            return Library()
        stand_in = _grammar_stand_in()
        sys.modules[IRI_GRAMMAR_MODULE] = stand_in
        try:
            return Library()
        finally:
            if sys.modules.get(IRI_GRAMMAR_MODULE) is stand_in:
                del sys.modules[IRI_GRAMMAR_MODULE]


def _grammar_stand_in() -> types.ModuleType:
    stand_in = types.ModuleType(IRI_GRAMMAR_MODULE, "rfc3987_syntax, imported on first use")

    def is_valid_syntax(term: str, value: str) -> Any:
        real = importlib.import_module(IRI_GRAMMAR_MODULE)  # the stand-in has left by now
        assert real is not stand_in
        return real.is_valid_syntax(term, value)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    return stand_in
