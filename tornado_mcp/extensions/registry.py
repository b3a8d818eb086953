"""The extensions a server serves itself, held together: MCP Apps views
(:mod:`tornado_mcp.extensions.apps`) and agent skills (:mod:`tornado_mcp.extensions.skills`).

A :class:`~tornado_mcp.Server` owns one :class:`Extensions` (``server.extensions``); its
``app``, ``skill``, ``skills_from`` and ``add_skill`` hand the work to it.  Each
extension is made on first use, declares itself in the capabilities then, and registers
what it serves (a view's ``ui://`` resource, the skills' methods) in the server's
:class:`~tornado_mcp.server.registry.Registry`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .apps import APP_MIME_TYPE, AppViews, Html, View, view_meta
from .skills.catalog import SkillCatalog

if TYPE_CHECKING:
    from .host import ExtensionHost


class Extensions:
    """The MCP Apps views and the skills catalog of one server, each made on first use."""

    def __init__(self, host: ExtensionHost) -> None:
        self.host = host
        #: The MCP Apps views, once any is registered (else ``None``).
        self.app_views: AppViews | None = None
        #: The skills catalog, once any skill is registered (else ``None``).
        self.skill_catalog: SkillCatalog | None = None

    @property
    def apps(self) -> AppViews:
        """The views the server serves (made on first use)."""
        if self.app_views is None:
            self.app_views = AppViews(self.host)
        return self.app_views

    @property
    def skills(self) -> SkillCatalog:
        """The skills the server serves (made on first use; its bounds are settable)."""
        if self.skill_catalog is None:
            self.skill_catalog = SkillCatalog(self.host)
        return self.skill_catalog

    def app(self, uri: str, html: Html, name: str | None = None, *,
            title: str | None = None, description: str | None = None,
            csp: dict[str, Iterable[str]] | None = None,
            permissions: Iterable[str] | None = None, domain: str | None = None,
            prefers_border: bool | None = None) -> View:
        """Register a view and the ``ui://`` resource serving it (see
        :meth:`Server.app <tornado_mcp.Server.app>`)."""
        meta_ui = view_meta(uri, csp, permissions, domain, prefers_border)
        view = View(uri, html, meta_ui)
        self.apps.add(view)

        def read_view() -> dict[str, Any]:
            return view.read()

        self.host.registry.add_resource(
            read_view, uri, name or uri.removeprefix("ui://"), title=title,
            description=description, mime_type=APP_MIME_TYPE,
            meta={"ui": meta_ui} if meta_ui else None)
        return view
