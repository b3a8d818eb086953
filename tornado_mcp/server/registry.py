"""Registration: the tools, resources, templates, prompts and custom methods a server
offers, as decorators and as plain calls.

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        "Forecast for a city."
        return f"Sunny in {city} for {days} days"

    server.add_tool(forecast, "forecast_v2", title="Forecast")

Every change drops the cached lists and capabilities, so the next ``tools/list`` (and
``initialize``/``server/discover``) shows it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..protocol import PROMPTS_GET, RESOURCES_READ, SERVER_METHODS, TOOLS_CALL
from .bounds import CallBounds, Redact, bounds_of
from .contract import Handler, HandlerSpec
from .extension_registry import ExtensionRegistry
from .primitives import Prompt, PromptArgument, Resource, ResourceTemplate, Tool
from .registry_reads import RegistryReads
from .scopes import ScopeRules

F = TypeVar("F", bound=Callable[..., Any])
#: Hooks running in the background, held until they finish.
_BACKGROUND: set[asyncio.Future[None]] = set()
log = logging.getLogger("tornado_mcp.server")

if TYPE_CHECKING:
    from .session import Session


class Registry(ExtensionRegistry, RegistryReads):
    """What a server offers; :class:`~tornado_mcp.server.server.Server` adds identity, dispatch
    and notifications.  The skills and MCP Apps registrations are
    :class:`~tornado_mcp.server.extension_registry.ExtensionRegistry`'s."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completion: HandlerSpec | None = None
        self._subscribe: HandlerSpec | None = None
        self._unsubscribe: HandlerSpec | None = None
        self._methods: dict[str, HandlerSpec] = {}
        self._cache: dict[str, Any] = {}
        #: Scopes each tool, prompt and resource needs (the ``scopes=`` of the decorators).
        self.scope_rules = ScopeRules()
        #: Declared call bounds, by (method, name): see :mod:`tornado_mcp.server.bounds`.
        self.call_bounds: dict[tuple[str, str], CallBounds] = {}

    def tool(self, name: str | None = None, *, title: str | None = None,
             description: str | None = None, input_schema: dict[str, Any] | None = None,
             output_schema: dict[str, Any] | None = None,
             annotations: dict[str, Any] | None = None,
             icons: list[dict[str, Any]] | None = None,
             meta: dict[str, Any] | None = None,
             structured_output: bool | None = None,
             scopes: Iterable[str] | None = None,
             ui: str | dict[str, Any] | None = None, timeout: float | None = None,
             max_concurrency: int | None = None, audit_arguments: bool = False,
             redact: Redact | None = None) -> Callable[[F], F]:
        """Register a tool; see :meth:`add_tool`.  ``scopes``: what a caller needs to call
        it (see :mod:`tornado_mcp.server.scopes`); ``timeout``, ``max_concurrency``,
        ``audit_arguments`` and ``redact``: see :mod:`tornado_mcp.server.bounds`."""
        bounds = bounds_of(timeout, max_concurrency, audit_arguments, redact)

        def register(fn: F) -> F:
            self.add_tool(fn, name, title=title, description=description,
                          input_schema=input_schema, output_schema=output_schema,
                          annotations=annotations, icons=icons, meta=meta,
                          structured_output=structured_output, ui=ui)
            self._guard(TOOLS_CALL, name or fn.__name__, scopes, bounds)
            return fn
        return register

    def add_tool(self, fn: Handler, name: str | None = None, *, title: str | None = None,
                 description: str | None = None, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None,
                 annotations: dict[str, Any] | None = None,
                 icons: list[dict[str, Any]] | None = None,
                 meta: dict[str, Any] | None = None,
                 structured_output: bool | None = None,
                 ui: str | dict[str, Any] | None = None) -> Tool:
        """Register ``fn`` as a tool.

        Without ``input_schema``, the parameters' annotations become the schema (see
        :mod:`tornado_mcp.schema.from_types`) and arguments arrive as those types.  Without
        ``output_schema``, a typed return annotation becomes one (``structured_output``
        forces or prevents that).  Either schema is checked here: an invalid or dangling
        one raises :class:`~tornado_mcp.schema.validate.InvalidSchema`, an annotation with no
        JSON Schema :class:`TypeError`.  ``ui``: the tool's view (MCP Apps; see
        :mod:`tornado_mcp.server.apps`), a URI registered with :meth:`app` or a ``_meta.ui``
        dict; an unregistered one raises :class:`~tornado_mcp.server.apps.AppError`.
        """
        if ui is not None:
            meta = self.apps.tool_meta(ui, meta)
        tool = Tool(name=name or fn.__name__, handler=HandlerSpec.of(fn),
                    input_schema=input_schema,
                    title=title, description=description or _doc(fn),
                    output_schema=output_schema, annotations=annotations, icons=icons,
                    meta=meta, structured_output=structured_output)
        self._tools[tool.name] = tool
        self._changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        del self._tools[name]
        self._changed("tools")

    def resource(self, uri: str, name: str | None = None, *, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 size: int | None = None, icons: list[dict[str, Any]] | None = None,
                 annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 ttl_ms: int | None = None, cache_scope: str | None = None,
                 scopes: Iterable[str] | None = None, timeout: float | None = None,
                 max_concurrency: int | None = None) -> Callable[[F], F]:
        """Register a resource (``uri``) or, when ``uri`` holds ``{var}``, a template.

        The function returns ``str`` (text), ``bytes`` (blob), a contents dict or a list of
        them; a template's function receives the variables as keyword arguments.
        ``timeout`` and ``max_concurrency`` bound its reads (for a template, all of them
        together).
        """
        bounds = bounds_of(timeout, max_concurrency, False, None)

        def register(fn: F) -> F:
            kwargs: dict[str, Any] = dict(title=title, description=description,
                                          mime_type=mime_type, icons=icons,
                                          annotations=annotations, meta=meta, ttl_ms=ttl_ms,
                                          cache_scope=cache_scope)
            if "{" in uri:
                self.add_resource_template(fn, uri, name, **kwargs)
            else:
                self.add_resource(fn, uri, name, size=size, **kwargs)
            self._guard(RESOURCES_READ, uri, scopes, bounds)
            return fn
        return register

    def resource_template(self, uri_template: str, name: str | None = None,
                          **kwargs: Any) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self.add_resource_template(fn, uri_template, name, **kwargs)
            return fn
        return register

    def add_resource(self, fn: Handler, uri: str, name: str | None = None,
                     **kwargs: Any) -> Resource:
        if kwargs.get("description") is None:
            kwargs["description"] = _doc(fn)
        res = Resource(uri=uri, name=name or fn.__name__, handler=HandlerSpec.of(fn), **kwargs)
        self._resources[uri] = res
        self._changed("resources")
        return res

    def remove_resource(self, uri: str) -> None:
        del self._resources[uri]
        self._changed("resources")

    def add_resource_template(self, fn: Handler, uri_template: str, name: str | None = None,
                              **kwargs: Any) -> ResourceTemplate:
        if kwargs.get("description") is None:
            kwargs["description"] = _doc(fn)
        tpl = ResourceTemplate(uri_template=uri_template, name=name or fn.__name__,
                               handler=HandlerSpec.of(fn), **kwargs)
        self._templates[uri_template] = tpl
        self._changed("templates")
        return tpl

    def prompt(self, name: str | None = None, *, title: str | None = None,
               description: str | None = None,
               arguments: Iterable[PromptArgument | dict[str, Any]] | None = None,
               icons: list[dict[str, Any]] | None = None,
               meta: dict[str, Any] | None = None,
               scopes: Iterable[str] | None = None, timeout: float | None = None,
               max_concurrency: int | None = None, audit_arguments: bool = False,
               redact: Redact | None = None) -> Callable[[F], F]:
        """Register a prompt; its arguments come from the signature unless given."""
        bounds = bounds_of(timeout, max_concurrency, audit_arguments, redact)

        def register(fn: F) -> F:
            self.add_prompt(fn, name, title=title, description=description,
                            arguments=arguments, icons=icons, meta=meta)
            self._guard(PROMPTS_GET, name or fn.__name__, scopes, bounds)
            return fn
        return register

    def add_prompt(self, fn: Handler, name: str | None = None, *, title: str | None = None,
                   description: str | None = None,
                   arguments: Iterable[PromptArgument | dict[str, Any]] | None = None,
                   icons: list[dict[str, Any]] | None = None,
                   meta: dict[str, Any] | None = None) -> Prompt:
        spec = HandlerSpec.of(fn)
        if arguments is None:
            args = [PromptArgument(p.name, required=p.default is p.empty) for p in spec.params]
        else:
            args = [a if isinstance(a, PromptArgument) else PromptArgument(**a)
                    for a in arguments]
        prompt = Prompt(name=name or fn.__name__, handler=spec, arguments=args, title=title,
                        description=description or _doc(fn), icons=icons, meta=meta)
        self._prompts[prompt.name] = prompt
        self._changed("prompts")
        return prompt

    def remove_prompt(self, name: str) -> None:
        del self._prompts[name]
        self._changed("prompts")

    def completion(self) -> Callable[[F], F]:
        """Register the ``completion/complete`` handler: ``fn(ref, argument, context)``
        returns a list of strings or a ``{"values": [...], ...}`` dict."""
        def register(fn: F) -> F:
            self._completion = HandlerSpec.of(fn)
            self._changed("completion")
            return fn
        return register

    def on_subscribe(self, fn: F) -> F:
        """Register the ``resources/subscribe`` handler: ``fn(uri[, ctx])``.

        The library keeps no subscription state of its own: track what you need (per
        session, persisted, debounced) and call ``session.notify_resources_updated(uri)``.
        """
        self._subscribe = HandlerSpec.of(fn)
        self._changed("subscribe")
        return fn

    def on_unsubscribe(self, fn: F) -> F:
        """Register the ``resources/unsubscribe`` handler: ``fn(uri[, ctx])``."""
        self._unsubscribe = HandlerSpec.of(fn)
        return fn

    # -- extensions and the client's notifications ------------------------------------------
    _roots_hook: Callable[[Session], Any] | None = None

    def on_roots_list_changed(self, fn: F) -> F:
        """Register ``fn(session)`` (plain or async), called when a legacy client sends
        ``notifications/roots/list_changed``: its roots changed, and the next
        ``ctx.list_roots()`` on that session sees the new ones."""
        self._roots_hook = fn
        return fn

    def roots_list_changed(self, session: Session) -> None:
        """Run the :meth:`on_roots_list_changed` hook for ``session`` (transports call
        this; on the event loop).  What the hook raises is logged."""
        hook = self._roots_hook
        if hook is None:
            return

        async def run() -> None:
            try:
                result = hook(session)
                if asyncio.iscoroutine(result):
                    await result
            except Exception:
                log.exception("the roots/list_changed hook raised")

        task = asyncio.ensure_future(run())
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)

    def method(self, name: str) -> Callable[[F], F]:
        """Register a custom method; its function receives ``params`` (and ctx if asked)."""
        def register(fn: F) -> F:
            self.add_method(name, fn)
            return fn
        return register

    def add_method(self, name: str, fn: Handler) -> None:
        if name in SERVER_METHODS or name in self._methods or name.startswith("notifications/"):
            raise ValueError(f"method {name!r} is already defined")
        self._methods[name] = HandlerSpec.of(fn)

    def set_bounds(self, method: str, name: str, bounds: CallBounds | None) -> None:
        """Declare (``None``: forget) the bounds of the tool (``tools/call``), resource or
        template (``resources/read``, by URI) or prompt (``prompts/get``) ``name``: what
        the decorators' ``timeout=``, ``max_concurrency=``, ``audit_arguments=`` and
        ``redact=`` do, for ones registered with a plain call."""
        if bounds is None:
            self.call_bounds.pop((method, name), None)
        else:
            self.call_bounds[(method, name)] = bounds

    def _guard(self, method: str, name: str, scopes: Iterable[str] | None,
               bounds: CallBounds | None) -> None:
        """What a decorator declares beside the handler: its scopes and its bounds."""
        if scopes:
            self.scope_rules.require(method, name, scopes)
        if bounds is not None:
            self.call_bounds[(method, name)] = bounds

    def _changed(self, kind: str) -> None:
        self._cache.pop(kind, None)
        self._cache.pop(f"{kind}:plain", None)  # the list as clients without MCP Apps see it
        self._cache.pop("capabilities", None)


def _doc(fn: Handler) -> str | None:
    doc = getattr(fn, "__doc__", None)
    return inspect.cleandoc(doc) if doc else None
