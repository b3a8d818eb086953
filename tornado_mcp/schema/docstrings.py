"""Parameter descriptions from a docstring, in the three common styles.

    def forecast(city: str, days: int = 3) -> str:
        '''Forecast for a city.

        Args:
            city: The city's name, e.g. "Paris".
            days: How many days ahead,
                counted from today.
        '''

``param_docs(forecast.__doc__)`` gives ``{"city": 'The city\\'s name, e.g. "Paris".',
"days": "How many days ahead, counted from today."}``.  Google style (``Args:``,
``Arguments:``, ``Parameters:``, and ``Attributes:`` for a dataclass), NumPy style
(``Parameters`` underlined with dashes) and Sphinx style (``:param name: text``) are
understood; anything else yields no descriptions rather than wrong ones.
"""

from __future__ import annotations

import inspect
import re

_GOOGLE_HEADERS = frozenset({"args", "arguments", "parameters", "params", "attributes",
                             "keyword args", "keyword arguments", "fields"})
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_NUMPY_ENTRY = re.compile(r"^(?P<name>\w+)\s*(:.*)?$")
_SPHINX_ENTRY = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>\w+)\s*:\s*(?P<text>.*)$")


def param_docs(doc: str | None) -> dict[str, str]:
    """Map parameter names to their descriptions in ``doc`` (empty when there are none)."""
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, str] = {}
    _google(lines, found)
    _numpy(lines, found)
    _sphinx(lines, found)
    return {name: " ".join(text.split()) for name, text in found.items() if text.strip()}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _google(lines: list[str], found: dict[str, str]) -> None:
    i = 0
    while i < len(lines):
        header = lines[i].strip().rstrip(":").lower()
        if not (lines[i].strip().endswith(":") and header in _GOOGLE_HEADERS):
            i += 1
            continue
        base = _indent(lines[i])
        i += 1
        entry_indent: int | None = None
        current: str | None = None
        while i < len(lines):
            line = lines[i]
            if line.strip() and _indent(line) <= base:
                break
            if line.strip():
                if entry_indent is None:
                    entry_indent = _indent(line)
                match = _GOOGLE_ENTRY.match(line.strip())
                if _indent(line) == entry_indent and match:
                    current = match["name"]
                    found[current] = match["text"]
                elif current is not None and _indent(line) > entry_indent:
                    found[current] += " " + line.strip()
            i += 1


def _numpy(lines: list[str], found: dict[str, str]) -> None:
    for i in range(len(lines) - 1):
        if lines[i].strip().lower() not in ("parameters", "attributes", "other parameters"):
            continue
        if not re.fullmatch(r"-{3,}", lines[i + 1].strip()):
            continue
        base = _indent(lines[i])
        current: str | None = None
        for line in lines[i + 2:]:
            if not line.strip():
                continue
            if _indent(line) == base:
                match = _NUMPY_ENTRY.match(line.strip())
                if match is None:
                    break
                current = match["name"]
                found.setdefault(current, "")
            elif current is not None:
                found[current] = (found[current] + " " + line.strip()).strip()


def _sphinx(lines: list[str], found: dict[str, str]) -> None:
    current: str | None = None
    for line in lines:
        match = _SPHINX_ENTRY.match(line.strip())
        if match:
            current = match["name"]
            found[current] = match["text"]
        elif current is not None and line.strip() and not line.strip().startswith(":"):
            found[current] += " " + line.strip()
        else:
            current = None
