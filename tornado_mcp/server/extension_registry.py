"""Registration for the extensions a server serves itself: MCP Apps views
(:mod:`tornado_mcp.server.apps`) and agent skills (:mod:`tornado_mcp.server.skills`).
:class:`~tornado_mcp.server.registry.Registry` inherits these methods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .apps import APP_MIME_TYPE, AppViews, Html, View, view_meta
from .skills import Producer, Skill, SkillCatalog

if TYPE_CHECKING:
    from .contract import Handler
    from .primitives import Resource


class ExtensionRegistry:
    """``server.app(...)``, ``server.skill(...)`` and their catalogs."""

    if TYPE_CHECKING:
        def add_resource(self, fn: Handler, uri: str, name: str | None = None,
                         **kwargs: Any) -> Resource: ...

        def _changed(self, kind: str) -> None: ...

    # -- extensions in the capabilities --------------------------------------------------
    _extensions: dict[str, dict[str, Any]] | None = None

    def declares_extension(self, name: str) -> bool:
        """Whether the capabilities advertise extension ``name``."""
        return name in (self._extensions or {})

    def listing_changed(self, kind: str) -> None:
        """What a list of ``kind`` shows changed (an extension's items): drop its cache."""
        self._changed(kind)

    def declare_extension(self, name: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise extension ``name`` (e.g. ``io.modelcontextprotocol/tasks``) in the
        capabilities, as ``capabilities.extensions[name] = settings``."""
        if self._extensions is None:
            self._extensions = {}
        self._extensions[name] = dict(settings or {})
        self._changed("extensions")

    # -- MCP Apps (io.modelcontextprotocol/ui; see tornado_mcp.server.apps) -----------------
    _apps: AppViews | None = None

    @property
    def app_views(self) -> AppViews | None:
        """The MCP Apps views, once any is registered (else ``None``)."""
        return self._apps

    @property
    def skill_catalog(self) -> SkillCatalog | None:
        """The skills catalog, once any skill is registered (else ``None``)."""
        return self._skills

    @property
    def apps(self) -> AppViews:
        """The views this server serves (made on first use)."""
        if self._apps is None:
            self._apps = AppViews(self)  # type: ignore[arg-type]
        return self._apps

    def app(self, uri: str, html: Html, name: str | None = None, *,
            title: str | None = None, description: str | None = None,
            csp: dict[str, Iterable[str]] | None = None,
            permissions: Iterable[str] | None = None, domain: str | None = None,
            prefers_border: bool | None = None) -> View:
        """Register a view: the ``ui://`` resource at ``uri`` serving ``html`` (its text, a
        :class:`~pathlib.Path` read at each read, or a function returning it) as
        ``text/html;profile=mcp-app``, with ``csp`` (``connectDomains``,
        ``resourceDomains``, ``frameDomains``, ``baseUriDomains``), ``permissions``
        (``camera``, ``microphone``, ``geolocation``, ``clipboardWrite``), ``domain`` and
        ``prefers_border`` as its ``_meta.ui``.  A tool shows it with ``ui=uri``."""
        meta_ui = view_meta(uri, csp, permissions, domain, prefers_border)
        view = View(uri, html, meta_ui)
        self.apps.add(view)

        def read_view() -> dict[str, Any]:
            return view.read()

        self.add_resource(read_view, uri, name or uri.removeprefix("ui://"), title=title,
                          description=description, mime_type=APP_MIME_TYPE,
                          meta={"ui": meta_ui} if meta_ui else None)
        return view

    # -- skills (io.modelcontextprotocol/skills; see tornado_mcp.server.skills) -------------
    _skills: SkillCatalog | None = None

    @property
    def skills(self) -> SkillCatalog:
        """The skills this server serves (made on first use; its bounds are settable)."""
        if self._skills is None:
            self._skills = SkillCatalog(self)  # type: ignore[arg-type]
        return self._skills

    def skill(self, directory: str | Path, prefix: str | None = None) -> Skill:
        """Serve the skill in ``directory`` (holding ``SKILL.md``) at
        ``skill://[<prefix>/]<name>/``; see :meth:`SkillCatalog.add_directory`."""
        return self.skills.add_directory(directory, prefix)

    def skills_from(self, directory: str | Path, prefix: str | None = None) -> list[Skill]:
        """Serve every skill directory below ``directory``; see
        :meth:`SkillCatalog.add_tree`."""
        return self.skills.add_tree(directory, prefix)

    def add_skill(self, name: str, skill_md: str,
                  files: Mapping[str, str | bytes | Producer] | None = None,
                  prefix: str | None = None) -> Skill:
        """Serve a skill made in code; see :meth:`SkillCatalog.add`."""
        return self.skills.add(name, skill_md, files, prefix)
