"""The :class:`Server`: what a server offers and how each MCP method is answered.

Nothing here knows about HTTP.  A :class:`Server` holds the registered tools, resources,
templates and prompts, derives its capabilities from them, and answers a method call
through :meth:`Server.handle`; transports feed it requests and carry its notifications.

    server = Server("weather", version="1.0.0", instructions="Ask about the weather.")

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        "Forecast for a city."
        return f"Sunny in {city} for {days} days"

Registration works as a decorator or a plain call (``server.add_tool(fn, ...)``).  The
server holds its parts and its methods hand the work to them: what it offers is its
:class:`~tornado_mcp.server.registry.Registry` (``server.registry``), the extensions it
serves itself (MCP Apps views, agent skills) its
:class:`~tornado_mcp.extensions.registry.Extensions` (``server.extensions``).  The
built-in methods are in :mod:`tornado_mcp.server.builtins`, result shaping in
:mod:`tornado_mcp.server.results` and a tool's typed contract in
:mod:`tornado_mcp.server.contract`.  The Server puts the protocol core (the rest of
this package) and the extensions (:mod:`tornado_mcp.extensions`) together, so this module
sits in the layer above both; the core reaches the Server through the Protocols it
declares (``Host`` in :mod:`.builtins`, ``ContextServer`` in :mod:`.context`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..extensions.apps import AppViews, Html, View
from ..extensions.registry import Extensions
from ..extensions.skills.catalog import Producer, Skill, SkillCatalog
from ..protocol import (
    COMPLETION_COMPLETE,
    INITIALIZE,
    INITIALIZED,
    INPUT_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_VERSIONS,
    LOGGING_SET_LEVEL,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    PING,
    PROMPTS_GET,
    PROMPTS_LIST,
    PROMPTS_LIST_CHANGED,
    RESOURCES_LIST,
    RESOURCES_LIST_CHANGED,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_UNSUBSCRIBE,
    RESOURCES_UPDATED,
    SERVER_DISCOVER,
    TOOLS_CALL,
    TOOLS_LIST,
    TOOLS_LIST_CHANGED,
)
from ..protocol.errors import MCPError, method_not_found
from .bounds import CallBounds, Redact, bounds_of
from .builtins import BUILTIN, MAX_COMPLETION_VALUES, input_required
from .context import Context
from .contract import Handler, HandlerSpec
from .input import NeedsInput
from .primitives import Prompt, PromptArgument, Resource, ResourceTemplate, Tool
from .registry import Registry
from .request_state import RequestStateCodec
from .scopes import ScopeRules
from .session import Session
from .subscriptions import (
    MAX_SUBSCRIPTION_URI_BYTES,
    MAX_SUBSCRIPTIONS_PER_SESSION,
    SubscriptionTracker,
)

log = logging.getLogger("tornado_mcp.server")

F = TypeVar("F", bound=Callable[..., Any])
#: Hooks running in the background, held until they finish.
_BACKGROUND: set[asyncio.Future[None]] = set()

__all__ = ["CACHEABLE_METHODS", "MAX_COMPLETION_VALUES", "METHOD_CAPABILITY",
           "REMOVED_IN_MODERN", "NotificationSink", "Server"]

#: Methods whose 2026-07-28 results carry ``ttlMs`` and ``cacheScope``.
CACHEABLE_METHODS = frozenset({SERVER_DISCOVER, TOOLS_LIST, PROMPTS_LIST, RESOURCES_LIST,
                               RESOURCES_TEMPLATES_LIST, RESOURCES_READ})
#: Legacy methods that 2026-07-28 removed.
REMOVED_IN_MODERN = frozenset({INITIALIZE, PING, LOGGING_SET_LEVEL, RESOURCES_SUBSCRIBE,
                               RESOURCES_UNSUBSCRIBE, INITIALIZED})
#: The server capability each method needs (and the flag inside it, if any).
METHOD_CAPABILITY: dict[str, tuple[str, str | None]] = {
    TOOLS_LIST: ("tools", None), TOOLS_CALL: ("tools", None),
    RESOURCES_LIST: ("resources", None), RESOURCES_TEMPLATES_LIST: ("resources", None),
    RESOURCES_READ: ("resources", None), RESOURCES_SUBSCRIBE: ("resources", "subscribe"),
    RESOURCES_UNSUBSCRIBE: ("resources", "subscribe"),
    PROMPTS_LIST: ("prompts", None), PROMPTS_GET: ("prompts", None),
    COMPLETION_COMPLETE: ("completions", None), LOGGING_SET_LEVEL: ("logging", None),
}


class NotificationSink(Protocol):
    """Where a server's notifications go: each transport serving it registers one (the
    HTTP ``Transport``, a stdio connection), and a cluster one as its relay; all of them
    in the layers above."""

    def publish(self, method: str, params: dict[str, Any] | None) -> None: ...


#: The rest of a middleware chain: call it (once) to go on with the request.
CallNext = Callable[[], Awaitable[dict[str, Any]]]
#: A middleware, ``async def mw(ctx, call_next) -> result`` (see
#: :mod:`tornado_mcp.engine.middleware`).
Middleware = Callable[[Context, CallNext], Awaitable[dict[str, Any]]]


class Server:
    """An MCP server: identity, what it offers, and method dispatch.

    ``middleware`` (or :meth:`use`) runs around every request on every transport that
    serves this server: Streamable HTTP, stdio, and the runs of tasks' creating calls.
    """

    def __init__(self, name: str, version: str = "0.1.0", *, title: str | None = None,
                 description: str | None = None, instructions: str | None = None,
                 icons: list[dict[str, Any]] | None = None, website_url: str | None = None,
                 capabilities: dict[str, Any] | None = None, page_size: int | None = 100,
                 ttl_ms: int = 0, cache_scope: str = "private",
                 request_state_key: bytes | None = None,
                 middleware: Sequence[Middleware] = ()) -> None:
        if cache_scope not in ("public", "private"):
            raise ValueError("cache_scope must be 'public' or 'private'")
        if page_size is not None and page_size <= 0:
            raise ValueError("page_size must be a positive integer or None")
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.instructions = instructions
        self.icons = icons
        self.website_url = website_url
        self._server_info: tuple[tuple[Any, ...] | None, dict[str, Any]] = (None, {})
        self.page_size = page_size
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        #: What the server offers: its tools, resources, templates, prompts and methods.
        self.registry = Registry()
        #: The extensions it serves itself: MCP Apps views and agent skills.
        self.extensions = Extensions(self)
        #: Scopes each tool, prompt and resource needs (the ``scopes=`` of the decorators).
        self.scope_rules = ScopeRules()
        #: Declared call bounds, by (method, name): see :mod:`tornado_mcp.server.bounds`.
        self.call_bounds: dict[tuple[str, str], CallBounds] = {}
        self.request_state = RequestStateCodec(request_state_key)
        self._capabilities_override = capabilities
        self._roots_hook: Callable[[Session], Any] | None = None
        self._sinks: list[NotificationSink] = []
        self._relays: list[NotificationSink] = []
        self._sinks_lock = threading.Lock()
        #: The legacy subscriptions kept for you, once :meth:`track_subscriptions` asked.
        self.subscriptions: SubscriptionTracker | None = None
        #: Middleware run around every request on every transport, in order.
        self.middleware: list[Middleware] = list(middleware)

    def use(self, middleware: Middleware) -> Middleware:
        """Add ``middleware`` at the end of the server's chain (nearest the handler), for
        every transport; returns it, so it works as a decorator too."""
        self.middleware.append(middleware)
        return middleware

    # -- tools -------------------------------------------------------------------------------
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
        :mod:`tornado_mcp.extensions.apps`), a URI registered with :meth:`app` or a ``_meta.ui``
        dict; an unregistered one raises :class:`~tornado_mcp.extensions.apps.AppError`.
        """
        if ui is not None:
            meta = self.extensions.apps.tool_meta(ui, meta)
        return self.registry.add_tool(
            fn, name, title=title, description=description, input_schema=input_schema,
            output_schema=output_schema, annotations=annotations, icons=icons, meta=meta,
            structured_output=structured_output)

    def remove_tool(self, name: str) -> None:
        """Stop offering tool ``name`` (:class:`KeyError` when there is none).  Clients are
        not told until you call :meth:`notify_tools_list_changed` (once for a batch of
        changes, as after adding tools at run time).  What its decorator declared beside
        it (scopes, bounds) goes with it: a tool added again under the name starts afresh."""
        self.registry.remove("tools", name)
        self._forget(TOOLS_CALL, name)

    def get_tool(self, name: str) -> Tool | None:
        return self.registry.tools.get(name)

    # -- resources ---------------------------------------------------------------------------
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
        return self.registry.add_resource(fn, uri, name, **kwargs)

    def add_resource_template(self, fn: Handler, uri_template: str, name: str | None = None,
                              **kwargs: Any) -> ResourceTemplate:
        return self.registry.add_resource_template(fn, uri_template, name, **kwargs)

    def remove_resource(self, uri: str) -> None:
        """Stop offering the resource at ``uri`` (:class:`KeyError` when there is none; a
        template is not a resource).  Clients are not told until you call
        :meth:`notify_resources_list_changed`.  Its scopes and bounds go with it."""
        self.registry.remove("resources", uri)
        self._forget(RESOURCES_READ, uri)

    def get_resource(self, uri: str) -> Resource | None:
        return self.registry.resources.get(uri)

    def get_template(self, uri_template: str) -> ResourceTemplate | None:
        """The resource template registered as exactly ``uri_template``."""
        return self.registry.templates.get(uri_template)

    def on_subscribe(self, fn: F) -> F:
        """Register the ``resources/subscribe`` handler: ``fn(uri[, ctx])``.

        The library keeps no subscription state of its own: track what you need (per
        session, persisted, debounced) and call ``session.notify_resources_updated(uri)``.
        """
        self.registry.subscribe_handler = HandlerSpec.of(fn)
        self.registry.changed("subscribe")
        return fn

    def on_unsubscribe(self, fn: F) -> F:
        """Register the ``resources/unsubscribe`` handler: ``fn(uri[, ctx])``."""
        self.registry.unsubscribe_handler = HandlerSpec.of(fn)
        return fn

    # -- prompts, completion, custom methods ----------------------------------------------------
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
        return self.registry.add_prompt(fn, name, title=title, description=description,
                                        arguments=arguments, icons=icons, meta=meta)

    def remove_prompt(self, name: str) -> None:
        """Stop offering prompt ``name`` (:class:`KeyError` when there is none).  Clients
        are not told until you call :meth:`notify_prompts_list_changed`.  Its scopes and
        bounds go with it."""
        self.registry.remove("prompts", name)
        self._forget(PROMPTS_GET, name)

    def get_prompt(self, name: str) -> Prompt | None:
        return self.registry.prompts.get(name)

    def completion(self) -> Callable[[F], F]:
        """Register the ``completion/complete`` handler: ``fn(ref, argument, context)``
        returns a list of strings or a ``{"values": [...], ...}`` dict."""
        def register(fn: F) -> F:
            self.registry.completion_handler = HandlerSpec.of(fn)
            self.registry.changed("completion")
            return fn
        return register

    def method(self, name: str) -> Callable[[F], F]:
        """Register a custom method; its function receives ``params`` (and ctx if asked)."""
        def register(fn: F) -> F:
            self.add_method(name, fn)
            return fn
        return register

    def add_method(self, name: str, fn: Handler) -> None:
        self.registry.add_method(name, fn)

    # -- what the decorators declare beside the handler ---------------------------------------
    def set_bounds(self, method: str, name: str, bounds: CallBounds | None) -> None:
        """Declare (``None``: forget) the bounds of the tool (``tools/call``), resource or
        template (``resources/read``, by URI) or prompt (``prompts/get``) ``name``: what
        the decorators' ``timeout=``, ``max_concurrency=``, ``audit_arguments=`` and
        ``redact=`` do, for ones registered with a plain call."""
        if bounds is None:
            self.call_bounds.pop((method, name), None)
        else:
            self.call_bounds[(method, name)] = bounds

    def _forget(self, method: str, name: str) -> None:
        """What was declared beside a handler that is gone: its scopes and its bounds."""
        self.scope_rules.require(method, name, None)
        self.call_bounds.pop((method, name), None)

    def _guard(self, method: str, name: str, scopes: Iterable[str] | None,
               bounds: CallBounds | None) -> None:
        """What a decorator declares beside the handler: its scopes and its bounds."""
        if scopes:
            self.scope_rules.require(method, name, scopes)
        if bounds is not None:
            self.call_bounds[(method, name)] = bounds

    # -- extensions: declared ones, MCP Apps, agent skills ---------------------------------------
    def declare_extension(self, name: str, settings: dict[str, Any] | None = None) -> None:
        """Advertise extension ``name`` (e.g. ``io.modelcontextprotocol/tasks``) in the
        capabilities, as ``capabilities.extensions[name] = settings``."""
        self.registry.declare_extension(name, settings)

    def declares_extension(self, name: str) -> bool:
        """Whether the capabilities advertise extension ``name``."""
        return self.registry.declares_extension(name)

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
        return self.extensions.app(uri, html, name, title=title, description=description,
                                   csp=csp, permissions=permissions, domain=domain,
                                   prefers_border=prefers_border)

    @property
    def apps(self) -> AppViews:
        """The views this server serves (made on first use)."""
        return self.extensions.apps

    @property
    def app_views(self) -> AppViews | None:
        """The MCP Apps views, once any is registered (else ``None``)."""
        return self.extensions.app_views

    @property
    def skills(self) -> SkillCatalog:
        """The skills this server serves (made on first use; its bounds are settable)."""
        return self.extensions.skills

    @property
    def skill_catalog(self) -> SkillCatalog | None:
        """The skills catalog, once any skill is registered (else ``None``)."""
        return self.extensions.skill_catalog

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

    # -- the client's notifications -----------------------------------------------------------
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

    # -- identity and capabilities ----------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        """The ``serverInfo`` object (a fresh copy: the caller may change it).  Every
        2026-07-28 result carries it, so it is built again only when the identity
        attributes it is made of changed."""
        made_of = (self.name, self.version, self.title, self.description, self.icons,
                   self.website_url)
        if self._server_info[0] != made_of:
            info: dict[str, Any] = {"name": self.name, "version": self.version}
            for key, value in (("title", self.title), ("description", self.description),
                               ("icons", self.icons), ("websiteUrl", self.website_url)):
                if value is not None:
                    info[key] = value
            self._server_info = (made_of, info)
        return dict(self._server_info[1])

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the server advertises: derived from what is registered unless overridden."""
        if self._capabilities_override is not None:
            return self._capabilities_override
        reg = self.registry
        cached = reg.cache.get("capabilities")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        caps: dict[str, Any] = {"logging": {}}
        if reg.tools:
            caps["tools"] = {"listChanged": True}
        tracking = self.subscriptions is not None or self.extensions.skill_catalog is not None
        if reg.resources or reg.templates or reg.subscribe_handler or tracking:
            caps["resources"] = {"listChanged": True}
            if reg.subscribe_handler is not None or tracking:
                caps["resources"]["subscribe"] = True
        if reg.prompts:
            caps["prompts"] = {"listChanged": True}
        if reg.completion_handler is not None:
            caps["completions"] = {}
        if reg.declared_extensions:
            caps["extensions"] = {k: dict(v) for k, v in reg.declared_extensions.items()}
        reg.cache["capabilities"] = caps
        return caps

    @capabilities.setter
    def capabilities(self, value: dict[str, Any] | None) -> None:
        self._capabilities_override = value
        self.registry.changed("capabilities")

    def has_capability(self, name: str, flag: str | None = None) -> bool:
        cap = self.capabilities.get(name)
        if not isinstance(cap, dict):
            return False
        return flag is None or bool(cap.get(flag))

    def advertised_capabilities(self, listen_served: bool) -> dict[str, Any]:
        """Capabilities as ``server/discover`` shows them: without the ``listChanged`` and
        ``subscribe`` flags when no ``subscriptions/listen`` stream can carry them."""
        caps = self.capabilities
        return caps if listen_served else without_change_flags(caps)

    # -- notifications -------------------------------------------------------------------
    def add_sink(self, sink: NotificationSink) -> None:
        """Register a transport: it delivers this server's notifications to its clients."""
        self._edit(self._sinks, sink, add=True)

    def remove_sink(self, sink: NotificationSink) -> None:
        self._edit(self._sinks, sink, add=False)

    def add_relay(self, relay: NotificationSink) -> None:
        """Register a relay (e.g. :class:`~tornado_mcp.cluster.Cluster`): it receives every
        notification that originates in this process, to share it with other processes."""
        self._edit(self._relays, relay, add=True)

    def remove_relay(self, relay: NotificationSink) -> None:
        self._edit(self._relays, relay, add=False)

    def _edit(self, targets: list[NotificationSink], target: NotificationSink,
              add: bool) -> None:
        with self._sinks_lock:
            if add:
                targets.append(target)
            elif target in targets:
                targets.remove(target)

    def publish(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Deliver a notification to this process's transports and to the relays."""
        self.deliver_local(method, params)
        self.relay(method, params)

    def deliver_local(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Deliver a server-wide notification to this process's transports only (and a
        resource update to the tracked legacy subscribers this process holds)."""
        with self._sinks_lock:
            sinks = list(self._sinks)
        self._fan_out(sinks, method, params)
        tracker = self.subscriptions
        if tracker is not None and method == RESOURCES_UPDATED and params is not None:
            for session in tracker.subscribers(str(params.get("uri"))):
                session.send_notification(method, params)

    def relay(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Hand a locally originated notification to the relays (other processes)."""
        with self._sinks_lock:
            relays = list(self._relays)
        self._fan_out(relays, method, params)

    @staticmethod
    def _fan_out(targets: list[NotificationSink], method: str,
                 params: dict[str, Any] | None) -> None:
        for target in targets:
            try:
                target.publish(method, params)
            except Exception:
                log.exception("notification delivery failed for %s", method)

    def notify_tools_list_changed(self) -> None:
        """Tell every session's GET stream and every opted-in listen stream. Thread-safe."""
        self.publish(TOOLS_LIST_CHANGED)

    def notify_prompts_list_changed(self) -> None:
        """Tell every session's GET stream and every opted-in listen stream that the prompt
        list changed. Thread-safe."""
        self.publish(PROMPTS_LIST_CHANGED)

    def notify_resources_list_changed(self) -> None:
        """Tell every session's GET stream and every opted-in listen stream that the
        resource list changed. Thread-safe."""
        self.publish(RESOURCES_LIST_CHANGED)

    def notify_resources_updated(self, uri: str) -> None:
        """Tell everyone watching ``uri`` that it changed, once each (thread-safe): the
        listen streams naming it and, when the server tracks subscriptions
        (:meth:`track_subscriptions`), every legacy session subscribed to it, in every
        transport and process.

        Without tracking, your ``on_subscribe`` handler knows the legacy subscribers: call
        ``session.notify_resources_updated(uri)`` for each of those, and this once.
        """
        self.publish(RESOURCES_UPDATED, {"uri": uri})

    def track_subscriptions(self, max_per_session: int = MAX_SUBSCRIPTIONS_PER_SESSION,
                            max_uri_bytes: int = MAX_SUBSCRIPTION_URI_BYTES
                            ) -> SubscriptionTracker:
        """Keep legacy ``resources/subscribe`` state for you (see
        :mod:`tornado_mcp.server.subscriptions`): ``resources.subscribe`` is advertised,
        each session's subscriptions are recorded (bounded, counted, dropped with the
        session) before your ``on_subscribe`` handler, if any, runs, and
        :meth:`notify_resources_updated` reaches the subscribers."""
        if self.subscriptions is None:
            self.subscriptions = SubscriptionTracker(max_per_session, max_uri_bytes)
            self.registry.cache.clear()  # the capabilities change
        return self.subscriptions

    def tracks(self, session: Session, uri: str) -> bool:
        """Whether the tracker already reaches ``session`` for ``uri``."""
        return self.subscriptions is not None and self.subscriptions.subscribed(session, uri)

    # -- lifecycle -------------------------------------------------------------------------
    def negotiate_version(self, requested: Any, served: Iterable[str]) -> str:
        legacy = [v for v in LEGACY_VERSIONS if v in served]
        if requested in legacy:
            return str(requested)
        return legacy[0] if legacy else LEGACY_VERSIONS[0]

    def initialize_result(self, version: str) -> dict[str, Any]:
        result: dict[str, Any] = {"protocolVersion": version,
                                  "capabilities": self.capabilities,
                                  "serverInfo": self.server_info()}
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def discover_result(self, served: Iterable[str], listen_served: bool) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": [v for v in MODERN_VERSIONS if v in served],
            "capabilities": self.advertised_capabilities(listen_served),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    # -- dispatch --------------------------------------------------------------------------
    def check_method(self, method: str, modern: bool) -> None:
        """Raise -32601 for a method this server does not serve in this era."""
        if modern and method in REMOVED_IN_MODERN:
            raise method_not_found(method)
        if method not in BUILTIN and method not in self.registry.methods:
            raise method_not_found(method)
        gate = METHOD_CAPABILITY.get(method)
        if gate is not None and not self.has_capability(*gate):
            offered = "/".join(part for part in gate if part)
            hint = ("; register an on_subscribe handler or call server.track_subscriptions()"
                    if gate == ("resources", "subscribe") else "")
            raise MCPError(METHOD_NOT_FOUND,
                           f"Method not found: {method} (server does not offer {offered}{hint})")

    async def handle(self, method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """Answer one request; raise :class:`MCPError` for a JSON-RPC error."""
        self.check_method(method, ctx.modern)
        if method in INPUT_METHODS and "inputResponses" in params:
            responses = params["inputResponses"]
            if not isinstance(responses, dict) or \
                    not all(isinstance(v, dict) for v in responses.values()):
                raise MCPError(INVALID_PARAMS,
                               "Invalid params: inputResponses must map keys to result objects")
        builtin = BUILTIN.get(method)
        result: dict[str, Any]
        if builtin is not None:
            try:
                result = await builtin(self, params, ctx)
            except NeedsInput as need:  # ctx.sample / elicit / list_roots at 2026-07-28
                result = input_required(need.input_required, ctx)
        else:
            spec = self.registry.methods[method]
            result = await spec.call(ctx, {spec.params[0].name: params} if spec.params else {})
            if result is None:
                result = {}
            if not isinstance(result, dict):
                raise MCPError(INTERNAL_ERROR, "Internal error")
        result = dict(result)
        if ctx.modern:
            result = self._stamp_modern(method, result, ctx)
        return result

    def _stamp_modern(self, method: str, result: dict[str, Any], ctx: Context) -> dict[str, Any]:
        result.setdefault("resultType", "complete")
        meta = result.get("_meta")
        meta = result["_meta"] = dict(meta) if isinstance(meta, dict) else {}
        meta.setdefault(META_SERVER_INFO, self.server_info())
        if method in CACHEABLE_METHODS and result["resultType"] == "complete":
            result.setdefault("ttlMs", self.ttl_ms)
            result.setdefault("cacheScope", self.cache_scope)
        return result


def without_change_flags(caps: dict[str, Any]) -> dict[str, Any]:
    """``caps`` without the ``listChanged`` and ``subscribe`` flags (for a configuration
    that cannot deliver change notifications); everything else is kept."""
    return {k: ({f: x for f, x in v.items() if f not in ("listChanged", "subscribe")}
                if isinstance(v, dict) and k != "extensions" else v) for k, v in caps.items()}
