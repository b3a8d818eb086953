"""marshmallow's error messages, flattened one way for every caller.

``ValidationError.messages`` nests: ``{"field": ["msg"]}``, ``{"outer": {"inner": [...]}}``,
``{0: {...}}`` for list items, ``{"_schema": [...]}`` for an error of an object as a whole.
:func:`error_messages` walks that once, in order, giving each message with the path of the
field it is about; the wire shapes (:mod:`tornado_mcp.protocol.shapes`), tool argument
conversion (:mod:`tornado_mcp.schema.convert`) and the dashboard's forms each format those
pairs their own way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

#: Where a message belongs: field names (and list indexes) from the outermost in.
Path = tuple[str | int, ...]
#: The key marshmallow files an error of the enclosing object itself under.
SCHEMA_KEY = "_schema"


def error_messages(messages: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Each message in ``messages`` with its path, in order; a ``_schema`` key adds nothing
    to the path (its messages are about the object it sits in)."""
    if isinstance(messages, Mapping):
        for key, inner in messages.items():
            step = key if isinstance(key, int) else str(key)
            yield from error_messages(inner, path if step == SCHEMA_KEY else (*path, step))
    elif isinstance(messages, list | tuple):
        for inner in messages:
            yield from error_messages(inner, path)
    else:
        yield path, str(messages)


def first_error(messages: Any) -> tuple[Path, str] | None:
    """The first message of ``messages`` with its path, or ``None`` when it holds none."""
    return next(error_messages(messages), None)


def dotted(path: Path) -> str:
    """``("items", 0, "name")`` as ``items.0.name``."""
    return ".".join(str(step) for step in path)
