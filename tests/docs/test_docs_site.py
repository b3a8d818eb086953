"""The documentation site (mkdocs.yml: the guides in docs/ and an API reference generated
from the docstrings) builds with ``mkdocs build --strict``; a broken link or anchor, a page
missing from the navigation or from disk, or an API entry naming nothing fails the build.
The reference documents every public name by its public import path, and every public
name has a docstring.

Public names: ``tornado_mcp.__all__``, the ``__all__`` of ``tornado_mcp.cluster``,
``.auth`` and ``.tasks``, the public classes and functions of ``tornado_mcp.stdio`` and
``tornado_mcp.testing``, and ``admin_ui.mount``.
"""

from __future__ import annotations

import contextlib
import html
import importlib
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tornado.web
from browser_support import chromium
from conftest import REPO_ROOT
from mcp_http import serving

pytestmark = [pytest.mark.timeout(300)]

API_DIR = REPO_ROOT / "docs" / "api"
ENTRY = re.compile(r"^::: (\S+)\s*$", re.MULTILINE)
BUILD_TIMEOUT = 180.0


def public_names_of(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        exported = [name for name, value in vars(module).items()
                    if not name.startswith("_")
                    and (inspect.isclass(value) or inspect.isfunction(value))
                    and getattr(value, "__module__", "").startswith(module_name)]
    return {f"{module_name}.{name}" for name in exported}


def public_names() -> set[str]:
    names = {"admin_ui.mount"}
    for module in ("tornado_mcp", "tornado_mcp.stdio", "tornado_mcp.testing",
                   "tornado_mcp.cluster", "tornado_mcp.auth", "tornado_mcp.tasks"):
        names |= public_names_of(module)
    return names


def reference_entries() -> list[str]:
    """The names the reference documents (a class's members listed apart not included)."""
    names = [name for page in sorted(API_DIR.glob("*.md"))
             for name in ENTRY.findall(page.read_text(encoding="utf-8"))]
    return [name for name in names if name.rsplit(".", 1)[0] not in names]


# The classes whose page lists their members in an order of its own (what users call
# first), and the members kept apart under "Lower level".
ORDERED = {"tornado_mcp.Server": "server.md", "tornado_mcp.Transport": "transport.md",
           "tornado_mcp.Context": "handlers.md"}
MEMBERS = re.compile(r"^::: (\S+)\n    options:\n(?:      .*\n)*?      members:\n"
                     r"((?:        - \S+\n)+)", re.MULTILINE)


def listed_members(cls: str) -> tuple[list[str], list[str]]:
    """``(members listed with the class, members documented apart)`` on its page."""
    text = (API_DIR / ORDERED[cls]).read_text(encoding="utf-8")
    listed = next(m.group(2) for m in MEMBERS.finditer(text) if m.group(1) == cls)
    apart = [name.rsplit(".", 1)[1] for name in ENTRY.findall(text)
             if name.rsplit(".", 1)[0] == cls]
    return [line.strip()[2:] for line in listed.splitlines()], apart


@pytest.mark.parametrize("cls", sorted(ORDERED))
def test_an_ordered_class_documents_every_public_member_once(cls: str) -> None:
    module, name = cls.rsplit(".", 1)
    target = getattr(importlib.import_module(module), name)
    public = {member for member in dir(target) if not member.startswith("_")}
    listed, apart = listed_members(cls)
    assert len(listed + apart) == len(set(listed + apart)), "a member is documented twice"
    assert set(listed + apart) == public


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "--config-file", str(config), "--site-dir", str(site)],
                          cwd=config.parent, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT, check=False)


def test_the_reference_names_every_public_name_by_its_public_path() -> None:
    entries = reference_entries()
    assert len(entries) == len(set(entries)), "a name is documented twice"
    assert set(entries) == public_names()


def test_every_public_name_has_a_docstring() -> None:
    griffe = pytest.importorskip("griffe")  # what mkdocstrings reads the docstrings with
    packages = {name: griffe.load(name, search_paths=[str(REPO_ROOT)], resolve_aliases=True,
                                  resolve_external=False)
                for name in ("tornado_mcp", "admin_ui")}
    undocumented = []
    for name in sorted(public_names()):
        package, path = name.split(".", 1)
        obj = packages[package][path]
        if obj.is_alias:
            obj = obj.final_target
        if obj.docstring is None or not obj.docstring.value.strip():
            undocumented.append(name)
    assert undocumented == []


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from the repository (strictly), once for the tests that read it."""
    out = tmp_path_factory.mktemp("site") / "site"
    done = build(REPO_ROOT / "mkdocs.yml", out)
    assert done.returncode == 0, done.stderr[-4000:]
    return out


#: The tests that read the built site run in one worker, so it is built once.
ONE_SITE = pytest.mark.xdist_group("docs_site")


@ONE_SITE
def test_the_site_builds_strictly_with_every_name_in_the_reference(site: Path) -> None:
    anchors = set()
    for page in (site / "api").glob("*/index.html"):
        anchors |= set(re.findall(r'<h2 id="([^"]+)"', page.read_text(encoding="utf-8")))
    assert anchors >= public_names()
    guide = (site / "auth" / "index.html").read_text(encoding="utf-8")
    assert 'id="sync-handlers"' in guide  # headings after a ```python fragment``` block
    assert not (site / "site_hooks.py").exists()


@ONE_SITE
def test_the_home_page_is_the_readme_overview_and_quickstart(site: Path) -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    home = (site / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", home))
    assert "An embeddable Model Context Protocol server for Tornado" in text
    assert "Add MCP to a Tornado app" in text
    assert 'Server("greeter", version="1.0.0")' in html.unescape(text)  # the quickstart
    assert 'href="getting-started/"' in home  # README's docs/ links work on the site
    assert "docs/" not in re.sub(r'https?://[^"]+', "", " ".join(
        re.findall(r'href="([^"]+)"', home)))
    first_bullet = re.search(r"^\* \*\*(.+?)\*\*", readme, re.MULTILINE)
    assert first_bullet is not None and first_bullet.group(1) in text  # "What it does"


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """The site's sources (config, docs, README, both packages) in a directory of their
    own."""
    root = tmp_path / "src"
    for tree in ("docs", "tornado_mcp", "admin_ui"):
        shutil.copytree(REPO_ROOT / tree, root / tree,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO_ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copy2(REPO_ROOT / "README.md", root / "README.md")  # the home page's text
    return root


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def test_broken_links_and_missing_pages_fail_the_build(docs_copy: Path) -> None:
    append(docs_copy / "docs" / "tools.md", "\n[gone](no-such-page.md), "
                                            "[nowhere](limits.md#no-such-section)\n")
    (docs_copy / "docs" / "extra.md").write_text("# Not in the navigation\n")
    (docs_copy / "docs" / "api" / "results.md").unlink()
    done = build(docs_copy / "mkdocs.yml", docs_copy / "site")
    assert done.returncode != 0
    assert "'no-such-page.md'" in done.stderr
    assert "'#no-such-section'" in done.stderr
    assert "extra.md" in done.stderr
    assert "'api/results.md'" in done.stderr


def test_a_reference_entry_naming_nothing_fails_the_build(docs_copy: Path) -> None:
    append(docs_copy / "docs" / "api" / "errors.md", "\n::: tornado_mcp.NoSuchName\n")
    done = build(docs_copy / "mkdocs.yml", docs_copy / "site")
    assert done.returncode != 0
    assert "tornado_mcp.NoSuchName could not be found" in done.stderr


def served(site: Path) -> contextlib.AbstractAsyncContextManager[str]:
    """The built site over HTTP on a loopback port (search needs HTTP, not file://)."""
    return serving(tornado.web.Application([
        (r"/(.*)", tornado.web.StaticFileHandler,
         {"path": str(site), "default_filename": "index.html"})]))


WAIT_MS = 15_000


@ONE_SITE
@pytest.mark.browser
async def test_the_site_in_chromium(site: Path) -> None:
    """What a newcomer sees: the home page opens on the overview and the quickstart, in
    highlighted code; the API reference opens on Server and tool, resource, prompt; search
    finds a method; nothing is loaded from anywhere but the site."""
    expect = pytest.importorskip("playwright.async_api").expect
    async with served(site) as base, chromium(["--no-sandbox", "--disable-gpu"]) as browser:
        page = await browser.new_page(viewport={"width": 1400, "height": 1000})
        elsewhere: list[str] = []
        errors: list[str] = []
        page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:"))
                else elsewhere.append(r.url))
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        await page.goto(base + "/")
        await expect(page.locator("h1")).to_have_text(re.compile(r"^tornado-mcp"), timeout=WAIT_MS)
        quickstart = page.locator("h2#add-mcp-to-a-tornado-app")
        await expect(quickstart).to_be_visible(timeout=WAIT_MS)
        box = await quickstart.bounding_box()
        assert box is not None and box["y"] < 1000  # on the first screen
        code = page.locator(".highlight code").first
        await expect(code).to_contain_text('Server("greeter", version="1.0.0")',
                                          timeout=WAIT_MS)
        keyword = code.locator("span.kn").first  # "import", highlighted
        await expect(keyword).to_have_text("import", timeout=WAIT_MS)
        colours = await code.evaluate(
            "c => [getComputedStyle(c).color,"
            " getComputedStyle(c.querySelector('span.kn')).color]")
        assert colours[0] != colours[1], colours

        nav = page.locator("nav.md-nav--primary")
        api = nav.locator("li.md-nav__item--section", has_text="API reference")
        labels = [label.strip() for label in await api.locator(
            "nav li.md-nav__item a").all_inner_texts()]
        assert labels[:5] == ["Server", "Transport", "In a handler", "tornado_mcp.stdio",
                              "tornado_mcp.testing"], labels
        for name in ("Connecting clients", "Testing your server", "Examples",
                     "Troubleshooting", "Changelog"):
            await expect(nav.get_by_role("link", name=name, exact=True)).to_have_count(
                1, timeout=WAIT_MS)

        await page.goto(base + "/api/server/")
        headings = await page.eval_on_selector_all(
            "article h2[id], article h3[id]",
            "hs => hs.map(h => [h.id, h.getBoundingClientRect().top + window.scrollY])")
        assert [h[0] for h in headings[:4]] == [
            "tornado_mcp.Server", "tornado_mcp.Server.tool", "tornado_mcp.Server.resource",
            "tornado_mcp.Server.prompt"], headings[:6]
        assert headings[1][1] < 1000  # Server.tool: on the first screen
        lower = [h[0] for h in headings].index("lower-level")
        assert "tornado_mcp.Server.publish" in [h[0] for h in headings[lower:]]

        await page.locator("label.md-search__icon, .md-search__input").first.click()
        # The index loads in a worker; a query typed before it is ready is not run again,
        # and the search runs on key presses (as a reader types), not on a filled value.
        await expect(page.locator(".md-search-result__meta")).to_have_text(
            "Type to start searching", timeout=WAIT_MS)
        await page.locator("input.md-search__input").press_sequentially("track_subscriptions")
        await expect(page.locator(".md-search-result__item").first).to_be_visible(
            timeout=WAIT_MS)

        assert errors == []
        assert elsewhere == []
        await page.close()
