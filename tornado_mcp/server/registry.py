"""The registry: what a server offers, one table per kind.

A :class:`~tornado_mcp.Server` owns one (``server.registry``) and registers into it:
its decorators (``@server.tool()``, ``@server.resource(...)``, ``@server.prompt()``)
and plain calls (``server.add_tool(fn, ...)``) build the primitive and hand it here.
The built-in methods (:mod:`.builtins`), the engine and the extensions read it.

    registry = server.registry
    registry.tools["forecast"].describe()         # the tables: read them
    registry.listing("tools")                     # what tools/list shows, cached

Every change goes through a method, which drops the cached lists and capabilities of
that kind, so the next ``tools/list`` (and ``initialize``/``server/discover``) shows it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from ..protocol import SERVER_METHODS
from .contract import Handler, HandlerSpec
from .primitives import Prompt, PromptArgument, Resource, ResourceTemplate, Tool


class Registry:
    """The tools, resources, resource templates, prompts and custom methods a server
    offers, the extensions it declares, and its completion and subscription handlers.

    The tables are plain dicts in order of registration, keyed by name (a resource by
    URI, a template by URI template): read them freely, change them only through the
    methods here."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        #: Custom methods (``server.method(name)``), by method name.
        self.methods: dict[str, HandlerSpec] = {}
        #: The extensions the capabilities advertise: ``capabilities.extensions``.
        self.declared_extensions: dict[str, dict[str, Any]] = {}
        #: The ``completion/complete`` handler, if one is registered.
        self.completion_handler: HandlerSpec | None = None
        #: The ``resources/subscribe`` handler, if one is registered.
        self.subscribe_handler: HandlerSpec | None = None
        #: The ``resources/unsubscribe`` handler, if one is registered.
        self.unsubscribe_handler: HandlerSpec | None = None
        #: What was last described, by kind (the lists, the capabilities): dropped by
        #: :meth:`changed`.
        self.cache: dict[str, Any] = {}

    # -- registering ------------------------------------------------------------------------
    def add_tool(self, fn: Handler, name: str | None = None, *, title: str | None = None,
                 description: str | None = None, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None,
                 annotations: dict[str, Any] | None = None,
                 icons: list[dict[str, Any]] | None = None,
                 meta: dict[str, Any] | None = None,
                 structured_output: bool | None = None) -> Tool:
        """Register ``fn`` as a tool (see :meth:`Server.add_tool
        <tornado_mcp.Server.add_tool>`, which also takes a view)."""
        tool = Tool(name=name or fn.__name__, handler=HandlerSpec.of(fn),
                    input_schema=input_schema,
                    title=title, description=description or _doc(fn),
                    output_schema=output_schema, annotations=annotations, icons=icons,
                    meta=meta, structured_output=structured_output)
        self.tools[tool.name] = tool
        self.changed("tools")
        return tool

    def add_resource(self, fn: Handler, uri: str, name: str | None = None,
                     **kwargs: Any) -> Resource:
        """Register ``fn`` as the resource at ``uri`` (``kwargs``: :class:`Resource`'s)."""
        if kwargs.get("description") is None:
            kwargs["description"] = _doc(fn)
        res = Resource(uri=uri, name=name or fn.__name__, handler=HandlerSpec.of(fn), **kwargs)
        self.resources[uri] = res
        self.changed("resources")
        return res

    def add_resource_template(self, fn: Handler, uri_template: str, name: str | None = None,
                              **kwargs: Any) -> ResourceTemplate:
        """Register ``fn`` as the resource template ``uri_template``."""
        if kwargs.get("description") is None:
            kwargs["description"] = _doc(fn)
        tpl = ResourceTemplate(uri_template=uri_template, name=name or fn.__name__,
                               handler=HandlerSpec.of(fn), **kwargs)
        self.templates[uri_template] = tpl
        self.changed("templates")
        return tpl

    def add_prompt(self, fn: Handler, name: str | None = None, *, title: str | None = None,
                   description: str | None = None,
                   arguments: Iterable[PromptArgument | dict[str, Any]] | None = None,
                   icons: list[dict[str, Any]] | None = None,
                   meta: dict[str, Any] | None = None) -> Prompt:
        """Register ``fn`` as a prompt; its arguments come from its signature unless given."""
        spec = HandlerSpec.of(fn)
        if arguments is None:
            args = [PromptArgument(p.name, required=p.default is p.empty) for p in spec.params]
        else:
            args = [a if isinstance(a, PromptArgument) else PromptArgument(**a)
                    for a in arguments]
        prompt = Prompt(name=name or fn.__name__, handler=spec, arguments=args, title=title,
                        description=description or _doc(fn), icons=icons, meta=meta)
        self.prompts[prompt.name] = prompt
        self.changed("prompts")
        return prompt

    def remove(self, kind: str, key: str) -> None:
        """Stop offering the tool, resource, template or prompt ``key`` (``kind`` as for
        :meth:`listing`); :class:`KeyError` when none is registered."""
        del self._table(kind)[key]
        self.changed(kind)

    def add_method(self, name: str, fn: Handler) -> None:
        """Register ``fn`` as the custom method ``name`` (not one of MCP's own)."""
        if name in SERVER_METHODS or name in self.methods or name.startswith("notifications/"):
            raise ValueError(f"method {name!r} is already defined")
        self.methods[name] = HandlerSpec.of(fn)

    def declare_extension(self, name: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise extension ``name`` as ``capabilities.extensions[name] = settings``."""
        self.declared_extensions[name] = dict(settings or {})
        self.changed("extensions")

    def declares_extension(self, name: str) -> bool:
        """Whether the capabilities advertise extension ``name``."""
        return name in self.declared_extensions

    def changed(self, kind: str) -> None:
        """What a list of ``kind`` shows changed: drop its cached lists (the one every
        client sees and the one clients without MCP Apps see) and the capabilities."""
        self.cache.pop(kind, None)
        self.cache.pop(f"{kind}:plain", None)
        self.cache.pop("capabilities", None)

    # -- reading ------------------------------------------------------------------------------
    def get_tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def get_prompt(self, name: str) -> Prompt | None:
        return self.prompts.get(name)

    def get_resource(self, uri: str) -> Resource | None:
        return self.resources.get(uri)

    def get_template(self, uri_template: str) -> ResourceTemplate | None:
        """The resource template registered as exactly ``uri_template``."""
        return self.templates.get(uri_template)

    def match_template(self, uri: str) -> tuple[ResourceTemplate, dict[str, str]] | None:
        """The first resource template matching ``uri``, with its variables."""
        for tpl in self.templates.values():
            variables = tpl.template.match(uri)
            if variables is not None:
                return tpl, variables
        return None

    def listing(self, kind: str, items: Iterable[Any] | None = None) -> list[dict[str, Any]]:
        """What ``tools/list`` (``kind`` "tools"), ``resources/list`` ("resources"),
        ``resources/templates/list`` ("templates") or ``prompts/list`` ("prompts") show, in
        order of registration; kept until the next change of that kind.  ``items``: what
        to describe instead, for a variant of a kind cached under its own name (the list
        one kind of client sees)."""
        cached: list[dict[str, Any]] | None = self.cache.get(kind)
        if cached is None:
            source = self.primitives(kind) if items is None else items
            cached = self.cache[kind] = [i.describe() for i in source]
        return cached

    def primitives(self, kind: str) -> Iterable[Any]:
        """The registered tools, resources, templates or prompts (``kind`` as for
        :meth:`listing`), in order of registration."""
        return self._table(kind).values()

    def _table(self, kind: str) -> dict[str, Any]:
        tables: dict[str, dict[str, Any]] = {
            "tools": self.tools, "resources": self.resources,
            "templates": self.templates, "prompts": self.prompts}
        return tables[kind]


def _doc(fn: Handler) -> str | None:
    doc = getattr(fn, "__doc__", None)
    return inspect.cleandoc(doc) if doc else None
