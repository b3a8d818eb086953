"""MkDocs hooks for the documentation site (mkdocs.yml names this file; it is not a page).

* The home page is README.md's overview and quickstart: ``index.md`` holds a marker that
  becomes the README's introduction and its sections named in :data:`HOME_SECTIONS`, with
  links into ``docs/`` made relative to the site (one text, two places, no drift).
* ```python fragment``` fences (a convention of tests/docs/test_docs_run.py: shown, not run)
  become plain ```python``` fences, which Markdown renders as code.
* Sphinx roles left in docstrings (:class:`~tornado_mcp.Server`, :func:`run`, ...) render
  as the code they name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

FRAGMENT_FENCE = re.compile(r"^```python fragment[ \t]*$", re.MULTILINE)
ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj|const):"
                  r"<code>(~)?(?:([^<]*?) &lt;([^<]*)&gt;|([^<]*))</code>")
README = Path(__file__).resolve().parent.parent / "README.md"
HOME_MARKER = "<!-- README: overview and quickstart -->"
#: The README's sections the home page shows after its overview, in this order.
HOME_SECTIONS = ("Add MCP to a Tornado app", "What it does", "The dashboard",
                 "More than one process")
#: The introduction's first paragraph is the overview; its bullet list is "What it does".
FEATURES_HEADING = "What it does"
DEV_COMMANDS = re.compile(r"\A\s*```sh\n.*?^```\s*$", re.MULTILINE | re.DOTALL)


def readme_home(readme: str) -> str:
    """The home page's body from the README: its overview paragraph, then the sections of
    :data:`HOME_SECTIONS`, links into ``docs/`` rewritten for the site."""
    body = readme.split("\n", 1)[1]  # after the "# tornado-mcp" title
    intro, *rest = re.split(r"^## ", body, flags=re.MULTILINE)
    intro = DEV_COMMANDS.sub("", intro).strip()  # the contributor's commands stay there
    overview, _, features = intro.partition("\n\n")
    sections = {FEATURES_HEADING: features.strip()}
    for section in rest:
        heading, _, text = section.partition("\n")
        sections[heading.strip()] = text.strip()
    parts = [overview] + [f"## {name}\n\n{sections[name]}" for name in HOME_SECTIONS]
    home = re.sub(r"\[docs/([^\]]+)\]\(docs/", r"[\1](", "\n\n".join(parts))
    return re.sub(r"\]\(docs/", "](", home) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    page = kwargs.get("page")
    if page is not None and page.file.src_uri == "index.md" and HOME_MARKER in markdown:
        markdown = markdown.replace(HOME_MARKER, readme_home(README.read_text("utf-8")))
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
