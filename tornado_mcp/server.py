"""The protocol core: what a server offers and how each MCP method is answered.

Nothing here knows about HTTP.  A :class:`Server` holds the registered tools, resources,
templates and prompts, derives its capabilities from them, and answers a method call
through :meth:`Server.handle`; transports feed it requests and carry its notifications.

    server = Server("weather", version="1.0.0", instructions="Ask about the weather.")

    @server.tool()
    def forecast(city: str, days: int = 3) -> str:
        "Forecast for a city."
        return f"Sunny in {city} for {days} days"

Registration works as a decorator or a plain call (``server.add_tool(fn, ...)``).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from .auth.scopes import ScopeRules
from .context import Context
from .errors import MCPError, ResourceNotFound, ToolError, method_not_found
from .mrtr import INPUT_KIND_CAPABILITY, InputRequired, RequestStateCodec
from .pagination import paginate
from .primitives import (
    Handler,
    HandlerSpec,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
    text,
)
from .protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LEGACY_VERSIONS,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    MODERN_VERSIONS,
    PROMPTS_GET,
    RESOURCES_READ,
    TOOLS_CALL,
)
from .schemas import (
    COMPLETE_PARAMS,
    CURSOR_PARAMS,
    PROMPT_GET_PARAMS,
    SET_LEVEL_PARAMS,
    TOOL_CALL_PARAMS,
    URI_PARAMS,
    load,
)

log = logging.getLogger("tornado_mcp.server")

F = TypeVar("F", bound=Callable[..., Any])

#: Methods whose 2026-07-28 results carry ``ttlMs`` and ``cacheScope``.
CACHEABLE_METHODS = frozenset({"server/discover", "tools/list", "prompts/list", "resources/list",
                               "resources/templates/list", "resources/read"})
#: Legacy methods that 2026-07-28 removed.
REMOVED_IN_MODERN = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe",
                               "resources/unsubscribe", "notifications/initialized"})
#: The server capability each method needs (and the flag inside it, if any).
METHOD_CAPABILITY: dict[str, tuple[str, str | None]] = {
    "tools/list": ("tools", None), "tools/call": ("tools", None),
    "resources/list": ("resources", None), "resources/templates/list": ("resources", None),
    "resources/read": ("resources", None), "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts", None), "prompts/get": ("prompts", None),
    "completion/complete": ("completions", None), "logging/setLevel": ("logging", None),
}
#: Methods that may answer with an input-required result (and take ``inputResponses``).
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
MAX_COMPLETION_VALUES = 100
LEGACY_INPUT_ROUNDS = 8


class NotificationSink(Protocol):
    """Where a server's notifications go: each transport serving it registers one."""

    def publish(self, method: str, params: dict[str, Any] | None) -> None: ...


class Server:
    """An MCP server: identity, registered primitives, and method dispatch."""

    def __init__(self, name: str, version: str = "0.1.0", *, title: str | None = None,
                 description: str | None = None, instructions: str | None = None,
                 icons: list[dict[str, Any]] | None = None, website_url: str | None = None,
                 capabilities: dict[str, Any] | None = None, page_size: int | None = 100,
                 ttl_ms: int = 0, cache_scope: str = "private",
                 request_state_key: bytes | None = None) -> None:
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
        self.page_size = page_size
        self.ttl_ms = ttl_ms
        self.cache_scope = cache_scope
        self.request_state = RequestStateCodec(request_state_key)
        #: Scopes each tool, prompt and resource needs (the ``scopes=`` of the decorators).
        self.scope_rules = ScopeRules()
        self._capabilities_override = capabilities
        self._tools: dict[str, Tool] = {}
        self._resources: dict[str, Resource] = {}
        self._templates: dict[str, ResourceTemplate] = {}
        self._prompts: dict[str, Prompt] = {}
        self._completion: HandlerSpec | None = None
        self._subscribe: HandlerSpec | None = None
        self._unsubscribe: HandlerSpec | None = None
        self._methods: dict[str, HandlerSpec] = {}
        self._sinks: list[NotificationSink] = []
        self._relays: list[NotificationSink] = []
        self._sinks_lock = threading.Lock()
        self._cache: dict[str, Any] = {}

    # -- identity and capabilities ----------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        for key, value in (("title", self.title), ("description", self.description),
                           ("icons", self.icons), ("websiteUrl", self.website_url)):
            if value is not None:
                info[key] = value
        return info

    @property
    def capabilities(self) -> dict[str, Any]:
        """What the server advertises: derived from what is registered unless overridden."""
        if self._capabilities_override is not None:
            return self._capabilities_override
        cached = self._cache.get("capabilities")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        caps: dict[str, Any] = {"logging": {}}
        if self._tools:
            caps["tools"] = {"listChanged": True}
        if self._resources or self._templates or self._subscribe:
            caps["resources"] = {"listChanged": True}
            if self._subscribe is not None:
                caps["resources"]["subscribe"] = True
        if self._prompts:
            caps["prompts"] = {"listChanged": True}
        if self._completion is not None:
            caps["completions"] = {}
        self._cache["capabilities"] = caps
        return caps

    @capabilities.setter
    def capabilities(self, value: dict[str, Any] | None) -> None:
        self._capabilities_override = value
        self._changed("capabilities")

    def has_capability(self, name: str, flag: str | None = None) -> bool:
        cap = self.capabilities.get(name)
        if not isinstance(cap, dict):
            return False
        return flag is None or bool(cap.get(flag))

    def advertised_capabilities(self, listen_served: bool) -> dict[str, Any]:
        """Capabilities as ``server/discover`` shows them: without the ``listChanged`` and
        ``subscribe`` flags when no ``subscriptions/listen`` stream can carry them."""
        caps = self.capabilities
        if listen_served:
            return caps
        return {k: ({f: x for f, x in v.items() if f not in ("listChanged", "subscribe")}
                    if isinstance(v, dict) else v) for k, v in caps.items()}

    # -- registration ---------------------------------------------------------------------
    def tool(self, name: str | None = None, *, title: str | None = None,
             description: str | None = None, input_schema: dict[str, Any] | None = None,
             output_schema: dict[str, Any] | None = None,
             annotations: dict[str, Any] | None = None,
             icons: list[dict[str, Any]] | None = None,
             meta: dict[str, Any] | None = None,
             scopes: Iterable[str] | None = None) -> Callable[[F], F]:
        """Register a tool; its input schema comes from the signature unless given.
        ``scopes``: what a caller needs to call it (see :mod:`tornado_mcp.auth.scopes`)."""
        def register(fn: F) -> F:
            self.add_tool(fn, name, title=title, description=description,
                          input_schema=input_schema, output_schema=output_schema,
                          annotations=annotations, icons=icons, meta=meta)
            if scopes:
                self.scope_rules.require(TOOLS_CALL, name or fn.__name__, scopes)
            return fn
        return register

    def add_tool(self, fn: Handler, name: str | None = None, *, title: str | None = None,
                 description: str | None = None, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None,
                 annotations: dict[str, Any] | None = None,
                 icons: list[dict[str, Any]] | None = None,
                 meta: dict[str, Any] | None = None) -> Tool:
        spec = HandlerSpec.of(fn)
        tool = Tool(name=name or fn.__name__, handler=spec,
                    input_schema=input_schema if input_schema is not None else spec.input_schema(),
                    title=title, description=description or _doc(fn),
                    output_schema=output_schema, annotations=annotations, icons=icons, meta=meta)
        self._tools[tool.name] = tool
        self._changed("tools")
        return tool

    def remove_tool(self, name: str) -> None:
        del self._tools[name]
        self._changed("tools")

    def get_tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def resource(self, uri: str, name: str | None = None, *, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None,
                 size: int | None = None, icons: list[dict[str, Any]] | None = None,
                 annotations: dict[str, Any] | None = None, meta: dict[str, Any] | None = None,
                 ttl_ms: int | None = None, cache_scope: str | None = None,
                 scopes: Iterable[str] | None = None) -> Callable[[F], F]:
        """Register a resource (``uri``) or, when ``uri`` holds ``{var}``, a template.

        The function returns ``str`` (text), ``bytes`` (blob), a contents dict or a list of
        them; a template's function receives the variables as keyword arguments.
        """
        def register(fn: F) -> F:
            kwargs: dict[str, Any] = dict(title=title, description=description,
                                          mime_type=mime_type, icons=icons,
                                          annotations=annotations, meta=meta, ttl_ms=ttl_ms,
                                          cache_scope=cache_scope)
            if "{" in uri:
                self.add_resource_template(fn, uri, name, **kwargs)
            else:
                self.add_resource(fn, uri, name, size=size, **kwargs)
            if scopes:
                self.scope_rules.require(RESOURCES_READ, uri, scopes)
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
               scopes: Iterable[str] | None = None) -> Callable[[F], F]:
        """Register a prompt; its arguments come from the signature unless given."""
        def register(fn: F) -> F:
            self.add_prompt(fn, name, title=title, description=description,
                            arguments=arguments, icons=icons, meta=meta)
            if scopes:
                self.scope_rules.require(PROMPTS_GET, name or fn.__name__, scopes)
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

    def method(self, name: str) -> Callable[[F], F]:
        """Register a custom method; its function receives ``params`` (and ctx if asked)."""
        def register(fn: F) -> F:
            self.add_method(name, fn)
            return fn
        return register

    def add_method(self, name: str, fn: Handler) -> None:
        if name in _BUILTIN or name in self._methods or name.startswith("notifications/"):
            raise ValueError(f"method {name!r} is already defined")
        self._methods[name] = HandlerSpec.of(fn)

    def _changed(self, kind: str) -> None:
        self._cache.pop(kind, None)
        self._cache.pop("capabilities", None)

    # -- notifications -------------------------------------------------------------------
    def add_sink(self, sink: NotificationSink) -> None:
        """Register a transport: it delivers this server's notifications to its clients."""
        self._edit(self._sinks, sink, add=True)

    def remove_sink(self, sink: NotificationSink) -> None:
        self._edit(self._sinks, sink, add=False)

    def add_relay(self, relay: NotificationSink) -> None:
        """Register a relay (e.g. :class:`~tornado_mcp.scaleout.RedisBus`): it receives every
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
        """Deliver a server-wide notification to this process's transports only."""
        with self._sinks_lock:
            sinks = list(self._sinks)
        self._fan_out(sinks, method, params)

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
        self.publish("notifications/tools/list_changed")

    def notify_prompts_list_changed(self) -> None:
        self.publish("notifications/prompts/list_changed")

    def notify_resources_list_changed(self) -> None:
        self.publish("notifications/resources/list_changed")

    def notify_resources_updated(self, uri: str) -> None:
        """Tell the listen streams subscribed to ``uri`` that it changed.

        Legacy sessions subscribe through your ``on_subscribe`` handler, so the library
        does not know them: call ``session.notify_resources_updated(uri)`` for those.
        """
        self.publish("notifications/resources/updated", {"uri": uri})

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
    def knows_method(self, method: str) -> bool:
        return method in _BUILTIN or method in self._methods

    def check_method(self, method: str, modern: bool) -> None:
        """Raise -32601 for a method this server does not serve in this era."""
        if modern and method in REMOVED_IN_MODERN:
            raise method_not_found(method)
        if method not in _BUILTIN and method not in self._methods:
            raise method_not_found(method)
        gate = METHOD_CAPABILITY.get(method)
        if gate is not None and not self.has_capability(*gate):
            raise MCPError(METHOD_NOT_FOUND,
                           f"Method not found: {method} (server does not offer {gate[0]})")

    async def handle(self, method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        """Answer one request; raise :class:`MCPError` for a JSON-RPC error."""
        self.check_method(method, ctx.modern)
        if method in MRTR_METHODS and "inputResponses" in params:
            responses = params["inputResponses"]
            if not isinstance(responses, dict) or \
                    not all(isinstance(v, dict) for v in responses.values()):
                raise MCPError(INVALID_PARAMS,
                               "Invalid params: inputResponses must map keys to result objects")
        builtin = _BUILTIN.get(method)
        result: dict[str, Any]
        if builtin is not None:
            result = await builtin(self, params, ctx)
        else:
            spec = self._methods[method]
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

    # -- built-in methods ------------------------------------------------------------------
    async def _ping(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return {}

    async def _set_level(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        p = load(SET_LEVEL_PARAMS, params, "logging/setLevel")
        if ctx.session is not None:
            ctx.session.log_level = p["level"]
        return {}

    async def _discover(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        served = ctx.served_versions if ctx.served_versions is not None else MODERN_VERSIONS
        result = self.discover_result(served, ctx.listen_served)
        result["resultType"] = "complete"
        result["ttlMs"] = self.ttl_ms
        result["cacheScope"] = self.cache_scope
        result["_meta"] = {META_SERVER_INFO: self.server_info()}
        return result

    def _described(self, kind: str, items: Iterable[Any]) -> list[dict[str, Any]]:
        cached = self._cache.get(kind)
        if cached is None:
            cached = self._cache[kind] = [i.describe() for i in items]
        return cached

    def _page(self, key: str, kind: str, items: Iterable[Any],
              params: dict[str, Any]) -> dict[str, Any]:
        p = load(CURSOR_PARAMS, params, "params")
        page, next_cursor = paginate(self._described(kind, items), p.get("cursor"),
                                     self.page_size)
        result: dict[str, Any] = {key: list(page)}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def _list_tools(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return self._page("tools", "tools", self._tools.values(), params)

    async def _list_resources(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return self._page("resources", "resources", self._resources.values(), params)

    async def _list_templates(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return self._page("resourceTemplates", "templates", self._templates.values(), params)

    async def _list_prompts(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return self._page("prompts", "prompts", self._prompts.values(), params)

    async def _call_tool(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        p = load(TOOL_CALL_PARAMS, params, "tools/call")
        tool = self._tools.get(p["name"])
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {p['name']}")
        args = p.get("arguments") or {}
        problem = tool.validate(args)
        if problem is not None:
            return {"content": [text(f"Invalid arguments for tool {tool.name}: {problem}")],
                    "isError": True}
        try:
            raw = await self._run_with_input(tool.handler, args, ctx)
        except ToolError as exc:
            return {"content": [text(str(exc))], "isError": True}
        except (MCPError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("tool %s raised", tool.name)
            raise MCPError(INTERNAL_ERROR, f"Internal error calling tool {tool.name}") from None
        if isinstance(raw, InputRequired):
            return self._input_required(raw, ctx)
        return _tool_result(raw)

    async def _run_with_input(self, handler: HandlerSpec, kwargs: dict[str, Any],
                              ctx: Context) -> Any:
        """Call a handler; in the legacy era, answer its input requests with real
        server-to-client requests and call it again, so one handler serves both eras."""
        result = await handler.call(ctx, kwargs)
        rounds = 0
        while isinstance(result, InputRequired) and not ctx.modern:
            rounds += 1
            if rounds > LEGACY_INPUT_ROUNDS:
                raise MCPError(INTERNAL_ERROR, "Too many input rounds")
            responses: dict[str, Any] = {}
            for key, req in result.input_requests.items():
                cap = INPUT_KIND_CAPABILITY.get(str(req.get("method")))
                if cap is not None:
                    ctx.require_client_capability(cap)
                responses[key] = await ctx.send_request(str(req["method"]), req.get("params"))
            ctx.params = {**ctx.params, "inputResponses": responses}
            if result.request_state is not None:
                ctx.params["requestState"] = result.request_state
            else:
                ctx.params.pop("requestState", None)
            result = await handler.call(ctx, kwargs)
        return result

    def _input_required(self, raw: InputRequired, ctx: Context) -> dict[str, Any]:
        kept: dict[str, dict[str, Any]] = {}
        missing: dict[str, Any] = {}
        for key, req in raw.input_requests.items():
            cap = INPUT_KIND_CAPABILITY.get(str(req.get("method")))
            if cap is not None and not ctx.client_supports(cap):
                missing[cap] = {}
                continue
            kept[key] = req
        if missing and not kept and raw.request_state is None:
            raise MCPError(MISSING_CLIENT_CAPABILITY, "Missing required client capability",
                           {"requiredCapabilities": missing})
        return InputRequired(kept, raw.request_state).to_result()

    async def _read_resource(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        uri = load(URI_PARAMS, params, "resources/read")["uri"]
        res = self._resources.get(uri)
        try:
            if res is not None:
                raw = await self._run_with_input(res.handler, {}, ctx)
                ttl, scope = res.ttl_ms, res.cache_scope
            else:
                for tpl in self._templates.values():
                    variables = tpl.template.match(uri)
                    if variables is not None:
                        kwargs = ({**variables, "uri": uri}
                                  if "uri" in {p.name for p in tpl.handler.params} else variables)
                        raw = await self._run_with_input(tpl.handler, kwargs, ctx)
                        ttl, scope, mime = tpl.ttl_ms, tpl.cache_scope, tpl.mime_type
                        break
                else:
                    raise ResourceNotFound(uri)
        except ResourceNotFound as exc:
            if ctx.modern:
                raise MCPError(INVALID_PARAMS, "Resource not found", {"uri": exc.uri}) from None
            raise
        except (MCPError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("resource handler for %s raised", uri)
            raise MCPError(INTERNAL_ERROR, "Internal error reading resource") from None
        if isinstance(raw, InputRequired):
            return self._input_required(raw, ctx)
        result = _contents(uri, raw, res.mime_type if res is not None else mime)
        if ctx.modern:
            if ttl is not None:
                result["ttlMs"] = ttl
            if scope is not None:
                result["cacheScope"] = scope
        return result

    async def _subscribe_op(self, params: dict[str, Any], ctx: Context,
                            handler: HandlerSpec | None) -> dict[str, Any]:
        if not isinstance(params.get("uri"), str):
            raise MCPError(INVALID_PARAMS, "Invalid params", "Missing or invalid uri")
        returned = await handler.call(ctx, {"uri": params["uri"]}) if handler else None
        if isinstance(returned, dict) and isinstance(returned.get("_meta"), dict):
            return {"_meta": returned["_meta"]}
        return {}

    async def _subscribe_m(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return await self._subscribe_op(params, ctx, self._subscribe)

    async def _unsubscribe_m(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        return await self._subscribe_op(params, ctx, self._unsubscribe)

    async def _get_prompt(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        p = load(PROMPT_GET_PARAMS, params, "prompts/get")
        prompt = self._prompts.get(p["name"])
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {p['name']}")
        args = p.get("arguments") or {}
        missing = [a.name for a in prompt.arguments if a.required and a.name not in args]
        if missing:
            raise MCPError(INVALID_PARAMS,
                           f"Missing required arguments for prompt {prompt.name}: "
                           + ", ".join(missing))
        known = {q.name for q in prompt.handler.params}
        kwargs = args if prompt.handler.accepts_kwargs else \
            {k: v for k, v in args.items() if k in known}
        try:
            raw = await self._run_with_input(prompt.handler, kwargs, ctx)
        except (MCPError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("prompt %s raised", prompt.name)
            raise MCPError(INTERNAL_ERROR, f"Internal error getting prompt {prompt.name}") \
                from None
        if isinstance(raw, InputRequired):
            return self._input_required(raw, ctx)
        return _prompt_result(raw, prompt.description)

    async def _complete(self, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
        p = load(COMPLETE_PARAMS, params, "completion/complete")
        assert self._completion is not None
        raw = await self._completion.call(
            ctx, {"ref": p["ref"], "argument": p["argument"], "context": p.get("context")})
        if isinstance(raw, dict) and "completion" in raw:
            completion = dict(raw["completion"])
        elif isinstance(raw, dict):
            completion = dict(raw)
        else:
            completion = {"values": list(raw or [])}
        values = [str(v) for v in completion.get("values", [])]
        if len(values) > MAX_COMPLETION_VALUES:
            completion["total"] = completion.get("total", len(values))
            completion["hasMore"] = True
            values = values[:MAX_COMPLETION_VALUES]
        completion["values"] = values
        return {"completion": completion}


def _doc(fn: Handler) -> str | None:
    doc = getattr(fn, "__doc__", None)
    return doc.strip() if doc else None


def _tool_result(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict) and ("content" in raw or "structuredContent" in raw):
        result = dict(raw)
        result.setdefault("content", [])
        return result
    if raw is None:
        return {"content": []}
    if isinstance(raw, str):
        return {"content": [text(raw)]}
    if isinstance(raw, dict) and "type" in raw:
        return {"content": [raw]}
    if isinstance(raw, list) and all(isinstance(b, dict) and "type" in b for b in raw):
        return {"content": raw}
    from . import jsonio
    return {"content": [text(jsonio.dumps_str(raw))],
            "structuredContent": raw if isinstance(raw, dict) else {"result": raw}}


def _contents(uri: str, raw: Any, mime_type: str | None) -> dict[str, Any]:
    def one(item: Any) -> dict[str, Any]:
        if isinstance(item, dict):
            return {"uri": uri, **item}
        entry: dict[str, Any] = {"uri": uri}
        if mime_type:
            entry["mimeType"] = mime_type
        if isinstance(item, bytes | bytearray):
            entry["blob"] = base64.b64encode(bytes(item)).decode()
        else:
            entry["text"] = str(item)
        return entry
    if isinstance(raw, dict) and "contents" in raw:
        return dict(raw)
    items = raw if isinstance(raw, list) else [raw]
    return {"contents": [one(i) for i in items]}


def _prompt_result(raw: Any, description: str | None) -> dict[str, Any]:
    if isinstance(raw, dict) and "messages" in raw:
        return {str(k): v for k, v in raw.items()}
    items = raw if isinstance(raw, list) else [raw]
    messages = []
    for item in items:
        if isinstance(item, str):
            messages.append({"role": "user", "content": text(item)})
        elif isinstance(item, dict) and "role" in item:
            messages.append(item)
        elif isinstance(item, dict):
            messages.append({"role": "user", "content": item})
    result: dict[str, Any] = {"messages": messages}
    if description:
        result["description"] = description
    return result


_BUILTIN: dict[str, Callable[[Server, dict[str, Any], Context], Any]] = {
    "ping": Server._ping,
    "logging/setLevel": Server._set_level,
    "server/discover": Server._discover,
    "tools/list": Server._list_tools,
    "tools/call": Server._call_tool,
    "resources/list": Server._list_resources,
    "resources/templates/list": Server._list_templates,
    "resources/read": Server._read_resource,
    "resources/subscribe": Server._subscribe_m,
    "resources/unsubscribe": Server._unsubscribe_m,
    "prompts/list": Server._list_prompts,
    "prompts/get": Server._get_prompt,
    "completion/complete": Server._complete,
}
