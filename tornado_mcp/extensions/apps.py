"""MCP Apps: tools with an interactive view (the ``io.modelcontextprotocol/ui`` extension,
SEP-1865).

    server.app("ui://weather/dashboard", DASHBOARD_HTML,
               csp={"connectDomains": ["https://api.example.com"]}, prefers_border=True)

    @server.tool(ui="ui://weather/dashboard")
    def weather(city: str) -> Forecast: ...

:meth:`Server.app <tornado_mcp.Server.app>` registers the view: a
``ui://`` resource served as ``text/html;profile=mcp-app``, with its ``_meta.ui``
(``csp``, ``permissions``, ``domain``, ``prefersBorder``) on the listing and on every read.
``ui=`` on a tool sets its ``_meta.ui``: a registered view's URI, or the whole
``{"resourceUri": ..., "visibility": [...]}``; a URI no view is registered at raises
:class:`AppError` and the tool is not registered.  The first view declares the extension.

The UI metadata goes only to clients that declared the extension with the
``text/html;profile=mcp-app`` MIME type (``capabilities.extensions["io.modelcontextprotocol
/ui"].mimeTypes``): to any other client the tools show no ``_meta.ui``, the tools only the
view may call (``visibility: ["app"]``) are not listed, and the ``ui://`` resources are not
listed either (hiding is not access control: use ``scopes=`` for that).

Bounds: a view's HTML is at most :data:`MAX_VIEW_BYTES` bytes (checked when it is given as
text, and at every read when it comes from a file or a function); a server has at most
:data:`MAX_VIEWS` views.  CSP origins are checked, so none can smuggle a directive into the
host's policy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..server.context import Context
    from ..server.primitives import Tool
    from .host import ExtensionHost

__all__ = ["APP_MIME_TYPE", "MAX_VIEWS", "MAX_VIEW_BYTES", "UI_EXTENSION", "AppError",
           "AppViews", "View"]

UI_EXTENSION = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
#: A view's HTML is at most this many bytes.
MAX_VIEW_BYTES = 4 * 1024 * 1024
#: Views one server serves at most.
MAX_VIEWS = 1000

CSP_KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")
VISIBILITY = ("model", "app")
#: An origin a CSP directive may name: scheme, host (``*.`` allowed first), optional port.
_ORIGIN = re.compile(r"^(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                     r"(?::[0-9]{1,5})?$")
_UI_URI = re.compile(r"^ui://[^\s]+$")

#: What a view's HTML may be: the text, a file read at each read, or a function.
Html = str | Path | Callable[[], str]


class AppError(ValueError):
    """A view or a tool's ``ui=`` that cannot be served as given."""


@dataclass(frozen=True)
class View:
    """A registered view: its ``ui://`` URI, its HTML source and its ``_meta.ui``."""

    uri: str
    html: Html
    meta_ui: dict[str, Any]

    def read(self) -> dict[str, Any]:
        """The ``resources/read`` contents of the view."""
        if isinstance(self.html, Path):
            text = self.html.read_text(encoding="utf-8")
        elif callable(self.html):
            text = self.html()
        else:
            text = self.html
        check_size(self.uri, text)
        entry: dict[str, Any] = {"mimeType": APP_MIME_TYPE, "text": text}
        if self.meta_ui:
            entry["_meta"] = {"ui": self.meta_ui}
        return entry


def check_size(uri: str, text: str) -> None:
    size = len(text.encode("utf-8"))
    if size > MAX_VIEW_BYTES:
        raise AppError(f"{uri}: the view's HTML is {size} bytes, over the limit of "
                       f"{MAX_VIEW_BYTES}")


def view_meta(uri: str, csp: dict[str, Iterable[str]] | None,
              permissions: Iterable[str] | None, domain: str | None,
              prefers_border: bool | None) -> dict[str, Any]:
    """A view's ``_meta.ui``, checked."""
    if not _UI_URI.fullmatch(uri):
        raise AppError(f"{uri!r}: a view's URI must be a ui:// URI")
    meta: dict[str, Any] = {}
    if csp:
        out: dict[str, list[str]] = {}
        for key, origins in csp.items():
            if key not in CSP_KEYS:
                raise AppError(f"{uri}: csp key {key!r} is not one of {', '.join(CSP_KEYS)}")
            listed = [origins] if isinstance(origins, str) else list(origins)
            for origin in listed:
                if not isinstance(origin, str) or not _ORIGIN.fullmatch(origin):
                    raise AppError(f"{uri}: csp {key} entry {origin!r} is not an origin "
                                   "(scheme://host[:port], '*.' allowed before the host)")
            out[key] = listed
        meta["csp"] = out
    if permissions:
        granted = list(permissions)
        for name in granted:
            if name not in PERMISSIONS:
                raise AppError(f"{uri}: permission {name!r} is not one of "
                               f"{', '.join(PERMISSIONS)}")
        meta["permissions"] = {name: {} for name in granted}
    if domain is not None:
        meta["domain"] = domain
    if prefers_border is not None:
        meta["prefersBorder"] = bool(prefers_border)
    return meta


class AppViews:
    """The views one server serves (``server.apps``) and who is offered them."""

    def __init__(self, server: ExtensionHost) -> None:
        self.server = server
        self.views: dict[str, View] = {}

    def add(self, view: View) -> None:
        if view.uri not in self.views and len(self.views) >= MAX_VIEWS:
            raise AppError(f"{view.uri}: the server serves at most {MAX_VIEWS} views")
        if isinstance(view.html, str):
            check_size(view.uri, view.html)
        if self.server.registry.get_resource(view.uri) is not None and view.uri not in self.views:
            raise AppError(f"{view.uri} is already registered as a plain resource")
        self.views[view.uri] = view
        if not self.server.registry.declares_extension(UI_EXTENSION):
            self.server.registry.declare_extension(UI_EXTENSION)

    def tool_meta(self, ui: str | dict[str, Any], meta: dict[str, Any] | None
                  ) -> dict[str, Any]:
        """A tool's ``_meta`` with ``ui`` set from ``ui=``; refuses a view not registered."""
        spec: dict[str, Any] = {"resourceUri": ui} if isinstance(ui, str) else dict(ui)
        unknown = set(spec) - {"resourceUri", "visibility"}
        if unknown:
            raise AppError(f"ui= takes resourceUri and visibility, not {sorted(unknown)}")
        uri = spec.get("resourceUri")
        if uri is not None and uri not in self.views:
            raise AppError(f"ui={uri!r}: no view is registered at that URI (register it "
                           "first with server.app(uri, html))")
        visibility = spec.get("visibility")
        if visibility is not None:
            if isinstance(visibility, str) or not visibility or \
                    any(v not in VISIBILITY for v in visibility):
                raise AppError(f"ui visibility {visibility!r} must be a non-empty list of "
                               f"{' and '.join(VISIBILITY)}")
            spec["visibility"] = list(visibility)
        return {**(meta or {}), "ui": spec}

    # -- who sees what --------------------------------------------------------------------
    @staticmethod
    def client_has_ui(ctx: Context) -> bool:
        """The client declared the extension with the ``text/html;profile=mcp-app`` type."""
        caps = ctx.client_capabilities
        ext = caps.get("extensions") if isinstance(caps, dict) else None
        settings = ext.get(UI_EXTENSION) if isinstance(ext, dict) else None
        types = settings.get("mimeTypes") if isinstance(settings, dict) else None
        return isinstance(types, list) and APP_MIME_TYPE in types

    def tools_for(self, ctx: Context, tools: Iterable[Tool]) -> tuple[str, Iterable[Any]]:
        """The cache kind and the tools ``tools/list`` shows this client (read only when
        that kind's list is not cached)."""
        if not self.views or self.client_has_ui(ctx):
            return "tools", tools
        return "tools:plain", (_Plain(t) for t in tools if _model_visible(t))

    def resources_for(self, ctx: Context, items: Iterable[Any]) -> tuple[str, Iterable[Any]]:
        if not self.views or self.client_has_ui(ctx):
            return "resources", items
        return "resources:plain", (r for r in items if getattr(r, "uri", None)
                                   not in self.views)


def _model_visible(tool: Tool) -> bool:
    ui = (tool.meta or {}).get("ui")
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return visibility is None or "model" in visibility


class _Plain:
    """A tool as a client without the extension sees it: no UI metadata."""

    __slots__ = ("tool",)

    def __init__(self, tool: Tool) -> None:
        self.tool = tool

    def describe(self) -> dict[str, Any]:
        described = self.tool.describe()
        meta = {k: v for k, v in (described.get("_meta") or {}).items()
                if k not in ("ui", "ui/resourceUri")}
        if meta:
            described["_meta"] = meta
        else:
            described.pop("_meta", None)
        return described
