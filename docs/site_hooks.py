"""MkDocs hooks for the documentation site (mkdocs.yml names this file; it is not a page).

* ```python fragment``` fences (a convention of tests/test_docs_run.py: shown, not run)
  become plain ```python``` fences, which Markdown renders as code.
* Sphinx roles left in docstrings (:class:`~tornado_mcp.Server`, :func:`run`, ...) render
  as the code they name.
"""

from __future__ import annotations

import re
from typing import Any

FRAGMENT_FENCE = re.compile(r"^```python fragment[ \t]*$", re.MULTILINE)
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):"
                  r"<code>(~)?(?:([^<]*?) &lt;([^<]*)&gt;|([^<]*))</code>")


def on_page_markdown(markdown: str, **_: Any) -> str:
    return FRAGMENT_FENCE.sub("```python", markdown)


def _role(m: re.Match[str]) -> str:
    if m.group(2) is not None:  # :class:`text <target>`
        return f"<code>{m.group(2)}</code>"
    target = m.group(4)
    if m.group(1):  # ~a.b.C shows C
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return ROLE.sub(_role, html)
