"""Files and notebooks through Jupyter's contents manager, as MCP tools and resources.

Each tool is a small example of a good MCP tool: it goes through Jupyter's own manager (so
Jupyter's rules on paths, hidden files and the root directory hold), checks Jupyter's
authorizer through the caller's scopes, answers with structured content a model can read
without parsing prose, bounds what it returns, and turns every failure into a tool error
that says what to do.

* ``list_files(path="")`` -- a directory's entries (at most :data:`MAX_LIST_ENTRIES`).
* ``read_file(path)`` -- a text file (at most ``max_read_bytes``).
* ``read_notebook(path)`` -- a notebook's cells: type, source, execution count, outputs.
* ``notebook://{+path}`` -- each notebook as a resource (its JSON), with
  ``notifications/resources/updated`` when it is saved through Jupyter: to legacy sessions
  that sent ``resources/subscribe`` and to ``subscriptions/listen`` streams naming it.
"""

from __future__ import annotations

import inspect
import json
import weakref
from typing import Any

from tornado.web import HTTPError

from ..protocol import INVALID_PARAMS, RESOURCES_UPDATED
from ..protocol.errors import MCPError, ResourceNotFound, ToolError
from ..protocol.uritemplate import UriTemplate
from ..server.context import Context
from ..server.server import Server
from ..server.session import Session

#: The resource template of notebooks; ``{+path}`` keeps the path's slashes.
NOTEBOOK_TEMPLATE = UriTemplate("notebook://{+path}")
NOTEBOOK_MIME = "application/x-ipynb+json"
#: ``list_files`` names at most this many entries of one directory (and says it cut).
MAX_LIST_ENTRIES = 1000
#: One legacy session may subscribe to at most this many notebooks.
MAX_SUBSCRIPTIONS_PER_SESSION = 100
#: The scope Jupyter's authorizer grants for reading files (see :mod:`.auth`).
READ_SCOPE = "contents:read"

READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


def notebook_uri(path: str) -> str:
    """``notebook://`` URI of the notebook at ``path`` (relative to Jupyter's root)."""
    return NOTEBOOK_TEMPLATE.expand(path=path)


def require_scope(ctx: Context, scope: str) -> None:
    if not ctx.principal.has_scopes(scope):
        resource, _, action = scope.partition(":")
        raise ToolError(f"Jupyter does not authorize {ctx.principal.subject or 'you'} to "
                        f"{action} {resource} on this server.")


class ContentsTools:
    """The contents tools and notebook resources of one Jupyter server."""

    def __init__(self, contents_manager: Any, max_read_bytes: int) -> None:
        self.cm = contents_manager
        self.max_read_bytes = max_read_bytes
        #: Legacy subscriptions: session -> notebook URIs (sessions are bounded already).
        self.watching: weakref.WeakKeyDictionary[Session, set[str]] = \
            weakref.WeakKeyDictionary()
        self.server: Server | None = None

    def register(self, server: Server) -> None:
        """Add the tools, the notebook resource template and the subscription handlers."""
        self.server = server
        server.add_tool(self.list_files, "list_files", annotations=READ_ONLY)
        server.add_tool(self.read_file, "read_file", annotations=READ_ONLY)
        server.add_tool(self.read_notebook, "read_notebook", annotations=READ_ONLY)
        server.add_resource_template(self.notebook_resource, NOTEBOOK_TEMPLATE.template,
                                     "notebook", mime_type=NOTEBOOK_MIME)
        server.on_subscribe(self.subscribe)
        server.on_unsubscribe(self.unsubscribe)
        self.cm.register_post_save_hook(self.saved)

    async def _get(self, path: str, **kwargs: Any) -> dict[str, Any]:
        model = self.cm.get(path, **kwargs)
        if inspect.isawaitable(model):
            model = await model
        return dict(model)

    async def _model(self, path: str, kind: str) -> dict[str, Any]:
        """The ``kind`` model at ``path`` with its content, refused past the read bound."""
        try:
            head = await self._get(path, content=False)
            if head.get("type") != kind:
                raise ToolError(f"{path!r} is a {head.get('type')}, not a {kind}.")
            size = head.get("size")
            if isinstance(size, int) and size > self.max_read_bytes:
                raise ToolError(f"{path!r} is {size} bytes, over the {self.max_read_bytes} "
                                "bytes this server reads for a tool.")
            return await self._get(path, content=True, type=kind,
                                   **({"format": "text"} if kind == "file" else {}))
        except HTTPError as exc:
            raise ToolError(exc.log_message or f"Cannot read {path!r}.") from None

    async def list_files(self, ctx: Context, path: str = "") -> dict[str, Any]:
        """List a directory of the Jupyter server (relative to its root; "" is the root)."""
        require_scope(ctx, READ_SCOPE)
        try:
            model = await self._get(path, content=True, type="directory")
        except HTTPError as exc:
            raise ToolError(exc.log_message or f"Cannot list {path!r}.") from None
        content = sorted(model.get("content") or [], key=lambda m: m["name"])
        entries = [{"name": m["name"], "path": m["path"], "type": m["type"],
                    "size": m.get("size"), "last_modified": str(m.get("last_modified"))}
                   for m in content[:MAX_LIST_ENTRIES]]
        return {"path": model["path"], "entries": entries,
                "truncated": len(content) > MAX_LIST_ENTRIES}

    async def read_file(self, ctx: Context, path: str) -> str:
        """Read a text file of the Jupyter server."""
        require_scope(ctx, READ_SCOPE)
        model = await self._model(path, "file")
        if model.get("format") != "text":
            raise ToolError(f"{path!r} is not a text file.")
        return str(model["content"])

    async def read_notebook(self, ctx: Context, path: str) -> dict[str, Any]:
        """Read a notebook's cells: type, source, execution count and text outputs."""
        require_scope(ctx, READ_SCOPE)
        model = await self._model(path, "notebook")
        nb = model["content"]
        cells = [{"index": i, "cell_type": c.get("cell_type"), "source": c.get("source", ""),
                  "execution_count": c.get("execution_count"),
                  "outputs": [_output_text(o) for o in c.get("outputs", [])]}
                 for i, c in enumerate(nb.get("cells", []))]
        return {"path": model["path"], "uri": notebook_uri(model["path"]), "cells": cells}

    async def notebook_resource(self, path: str, ctx: Context) -> dict[str, Any]:
        """A notebook of the Jupyter server, as nbformat JSON."""
        uri = notebook_uri(path)
        if not ctx.principal.has_scopes(READ_SCOPE):
            raise MCPError(INVALID_PARAMS, "Jupyter does not authorize reading this notebook",
                           {"uri": uri})
        try:
            model = await self._model(path, "notebook")
        except ToolError:
            raise ResourceNotFound(uri) from None
        return {"contents": [{"uri": uri, "mimeType": NOTEBOOK_MIME,
                              "text": json.dumps(model["content"])}]}

    # -- subscriptions ------------------------------------------------------------------------
    def subscribe(self, uri: str, ctx: Context) -> None:
        if NOTEBOOK_TEMPLATE.match(uri) is None:
            raise MCPError(INVALID_PARAMS, "Only notebook:// resources can be subscribed to",
                           {"uri": uri})
        if ctx.session is None:
            return
        uris = self.watching.setdefault(ctx.session, set())
        if uri not in uris and len(uris) >= MAX_SUBSCRIPTIONS_PER_SESSION:
            raise MCPError(INVALID_PARAMS, f"A session may subscribe to at most "
                           f"{MAX_SUBSCRIPTIONS_PER_SESSION} notebooks", {"uri": uri})
        uris.add(uri)

    def unsubscribe(self, uri: str, ctx: Context) -> None:
        if ctx.session is not None:
            self.watching.get(ctx.session, set()).discard(uri)

    def saved(self, model: dict[str, Any], **_: Any) -> None:
        """Jupyter's post-save hook: tell subscribers a notebook changed."""
        if model.get("type") != "notebook" or self.server is None:
            return
        uri = notebook_uri(model["path"])
        for session, uris in list(self.watching.items()):
            if uri in uris:
                session.send_notification(RESOURCES_UPDATED, {"uri": uri})
        self.server.notify_resources_updated(uri)  # listen streams, once


def _output_text(output: dict[str, Any]) -> dict[str, Any]:
    kind = output.get("output_type")
    if kind == "stream":
        return {"output_type": kind, "name": output.get("name"), "text": output.get("text", "")}
    if kind == "error":
        return {"output_type": kind, "text": f"{output.get('ename')}: {output.get('evalue')}"}
    data = output.get("data", {})
    return {"output_type": kind, "text": data.get("text/plain", ""),
            "mime_types": sorted(data)}
