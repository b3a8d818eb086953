"""RFC 6570 URI templates, level 1 (``{var}``) plus reserved ``{+var}`` expansion.

Used in both directions: :meth:`UriTemplate.match` recovers the variables from a concrete
URI (for ``resources/read``), :meth:`UriTemplate.expand` builds one.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

_VAR = re.compile(r"\{(\+?)([A-Za-z0-9_.%]+)\}")
#: Longer URIs never match a template (see :meth:`UriTemplate.match`).
MAX_URI_LENGTH = 2048


class UriTemplate:
    __slots__ = ("_regex", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        pattern = []
        pos = 0
        for m in _VAR.finditer(template):
            pattern.append(re.escape(template[pos:m.start()]))
            reserved, name = m.group(1), m.group(2)
            self.variables.append(name)
            pattern.append(f"(?P<{_group(name)}>{'.+?' if reserved else '[^/?#]+'})")
            pos = m.end()
        pattern.append(re.escape(template[pos:]))
        self._regex = re.compile("".join(pattern) + r"\Z")

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` under this template, or ``None``.

        URIs longer than :data:`MAX_URI_LENGTH` never match: a template with two variables
        in one segment needs backtracking, so its cost grows with the square of the length.
        """
        if len(uri) > MAX_URI_LENGTH:
            return None
        m = self._regex.match(uri)
        if m is None:
            return None
        return {name: unquote(m.group(_group(name))) for name in self.variables}

    def expand(self, **values: str) -> str:
        def sub(m: re.Match[str]) -> str:
            reserved, name = m.group(1), m.group(2)
            return quote(str(values[name]), safe=":/?#[]@!$&'()*+,;=" if reserved else "")
        return _VAR.sub(sub, self.template)


def _group(name: str) -> str:
    return "v_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
