"""The built-in MCP methods, one function each: ``fn(server, params, ctx) -> result``.

:data:`BUILTIN` maps each method name to its function; :meth:`Server.handle
<tornado_mcp.server.server.Server.handle>` checks the method against the era and the server's
capabilities, then calls it.  Handlers are run through :func:`run_with_input`, so one
handler serves both eras' ways of asking the client for input.  The functions read the
server through :class:`Host`: its identity and its registry's public read API.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from ..protocol import (
    COMPLETION_COMPLETE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    LOGGING_SET_LEVEL,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    MODERN_VERSIONS,
    PING,
    PROMPTS_GET,
    PROMPTS_LIST,
    RESOURCES_LIST,
    RESOURCES_READ,
    RESOURCES_SUBSCRIBE,
    RESOURCES_TEMPLATES_LIST,
    RESOURCES_UNSUBSCRIBE,
    SERVER_DISCOVER,
    TOOLS_CALL,
    TOOLS_LIST,
)
from ..protocol.errors import MCPError, MissingClientCapability, ResourceNotFound, ToolError
from ..protocol.pagination import paginate
from ..protocol.shapes import (
    COMPLETE_PARAMS,
    CURSOR_PARAMS,
    PROMPT_GET_PARAMS,
    SET_LEVEL_PARAMS,
    TOOL_CALL_PARAMS,
    URI_PARAMS,
    load,
)
from .context import Context
from .contract import ArgumentError, HandlerSpec, OutputError, tool_result
from .input import INPUT_KIND_CAPABILITY, MAX_INPUT_ROUNDS, InputRequired
from .primitives import Tool
from .registry import Registry
from .results import contents_result, prompt_result, text
from .scopes import unknown_reference
from .subscriptions import SubscriptionTracker

log = logging.getLogger("tornado_mcp.server")

MAX_COMPLETION_VALUES = 100


class ListFilter(Protocol):
    """Who is shown which tools and resources, and the cache kind of each variant of a
    list: MCP Apps (``server.app_views``, an extension in the layer above) shows its UI
    only to clients that declared it."""

    def tools_for(self, ctx: Context, tools: Iterable[Tool]) -> tuple[str, Iterable[Any]]: ...

    def resources_for(self, ctx: Context, items: Iterable[Any]
                      ) -> tuple[str, Iterable[Any]]: ...


class ResourceSource(Protocol):
    """Resources served beside the registry's, with their own reads and subscriptions:
    agent skills' files (``server.skill_catalog``, an extension in the layer above)."""

    def listed(self) -> Iterable[Any]: ...

    def serves(self, uri: str) -> bool: ...

    async def read(self, uri: str) -> dict[str, Any]: ...

    def subscribe(self, ctx: Context, uri: str) -> None: ...

    def unsubscribe(self, ctx: Context, uri: str) -> None: ...


class Listing(Protocol):
    """What everything that lists for a server reads of it (a :class:`~tornado_mcp.Server`):
    its registry and its listing policy (page size, the 2026-07-28 caching hints).  The
    part of :class:`Host` the extensions' ``ExtensionHost`` shares: the Server, which
    holds both, sits in the layer above."""

    @property
    def registry(self) -> Registry: ...

    @property
    def page_size(self) -> int | None: ...

    @property
    def ttl_ms(self) -> int: ...

    @property
    def cache_scope(self) -> str: ...


class Host(Listing, Protocol):
    """What the built-in methods read of their server (a :class:`~tornado_mcp.Server`):
    its registry and listing policy (:class:`Listing`), its identity, the legacy
    subscriptions it tracks, and the extensions that add to its lists.  A Protocol because
    the Server, which holds the extensions too, sits in the layer above this one."""

    def server_info(self) -> dict[str, Any]: ...

    def discover_result(self, served: Iterable[str], listen_served: bool
                        ) -> dict[str, Any]: ...

    @property
    def subscriptions(self) -> SubscriptionTracker | None: ...

    @property
    def app_views(self) -> ListFilter | None: ...

    @property
    def skill_catalog(self) -> ResourceSource | None: ...


async def ping(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {}


async def set_level(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(SET_LEVEL_PARAMS, params, LOGGING_SET_LEVEL)
    if ctx.session is not None:
        ctx.session.log_level = p["level"]
    return {}


async def discover(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    served = ctx.served_versions if ctx.served_versions is not None else MODERN_VERSIONS
    result = server.discover_result(served, ctx.listen_served)
    result["resultType"] = "complete"
    result["ttlMs"] = server.ttl_ms
    result["cacheScope"] = server.cache_scope
    result["_meta"] = {META_SERVER_INFO: server.server_info()}
    return result


def page(server: Host, key: str, kind: str, params: dict[str, Any],
         items: Iterable[Any] | None = None) -> dict[str, Any]:
    p = load(CURSOR_PARAMS, params, "params")
    page, next_cursor = paginate(server.registry.listing(kind, items), p.get("cursor"),
                                 server.page_size)
    result: dict[str, Any] = {key: list(page)}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def list_tools(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    apps = server.app_views
    if apps is None:
        return page(server, "tools", "tools", params)
    # UI metadata: who is shown it
    kind, tools = apps.tools_for(ctx, server.registry.primitives("tools"))
    return page(server, "tools", kind, params, tools)


async def list_resources(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    apps, skills = server.app_views, server.skill_catalog
    if apps is None and skills is None:
        return page(server, "resources", "resources", params)
    kind: str = "resources"
    items: Iterable[Any] = server.registry.primitives("resources")
    if apps is not None:  # MCP Apps: views only for clients that show them
        kind, items = apps.resources_for(ctx, items)
    if skills is not None:  # skill files (tornado_mcp.extensions.skills)
        items = itertools.chain(items, skills.listed())
    return page(server, "resources", kind, params, items)


async def list_templates(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return page(server, "resourceTemplates", "templates", params)


async def list_prompts(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return page(server, "prompts", "prompts", params)


def unknown_tool(name: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"Unknown tool: {name}")


def unknown_prompt(name: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")


def unknown_resource(uri: str, ctx: Context) -> MCPError:
    """-32002 in the legacy era, -32602 at 2026-07-28, both with ``data.uri``."""
    if ctx.modern:
        return MCPError(INVALID_PARAMS, "Resource not found", {"uri": uri})
    return ResourceNotFound(uri)


async def as_unknown(method: str, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """The answer to a request naming a tool, prompt or resource hidden from its caller
    (``hide_unauthorized``): exactly the one a name nothing answers to gets, its params
    checked the same way first, and nothing run."""
    if method == TOOLS_CALL:
        raise unknown_tool(load(TOOL_CALL_PARAMS, params, TOOLS_CALL)["name"])
    if method == PROMPTS_GET:
        raise unknown_prompt(load(PROMPT_GET_PARAMS, params, PROMPTS_GET)["name"])
    if method == COMPLETION_COMPLETE:
        load(COMPLETE_PARAMS, params, COMPLETION_COMPLETE)
        raise unknown_reference()
    if method == RESOURCES_SUBSCRIBE:
        _refuse_without_session(ctx)
        return {}  # subscribing to a URI nothing serves succeeds, and delivers nothing
    raise unknown_resource(load(URI_PARAMS, params, RESOURCES_READ)["uri"], ctx)


async def call_tool(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """``tools/call``: bind the arguments to the tool's contract, run it, shape the result.

    Arguments that break the input schema (or that the function's types refuse) give a
    tool result with ``isError: true``, so the model can correct itself; an argument the
    function does not take is -32602.  A result that breaks the tool's output schema is
    -32603 and logged: it is never sent.
    """
    p = load(TOOL_CALL_PARAMS, params, TOOLS_CALL)
    tool = server.registry.tools.get(p["name"])
    if tool is None:
        raise unknown_tool(p["name"])
    contract = tool.contract
    try:
        kwargs = contract.bind(p.get("arguments") or {})
    except ArgumentError as exc:
        if exc.protocol:
            raise MCPError(INVALID_PARAMS, exc.message) from None
        return {"content": [text(f"Invalid arguments for tool {tool.name}: {exc.message}")],
                "isError": True}
    try:
        raw = await run_with_input(server, tool.handler, kwargs, ctx)
    except ToolError as exc:
        return {"content": [text(str(exc))], "isError": True}
    except (MCPError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception("tool %s raised", tool.name)
        raise MCPError(INTERNAL_ERROR, f"Internal error calling tool {tool.name}") from None
    if isinstance(raw, InputRequired):
        return input_required(raw, ctx)
    try:
        return tool_result(raw, contract)
    except OutputError as exc:
        what = "does not match its outputSchema" if contract.output is not None \
            else "has no JSON form"
        log.error("tool %s returned a result that %s: %s", tool.name, what, exc)
        raise MCPError(INTERNAL_ERROR, f"Internal error: tool {tool.name} returned a result "
                       f"that {what} ({exc})") from None


async def run_with_input(server: Host, handler: HandlerSpec, kwargs: dict[str, Any],
                          ctx: Context) -> Any:
    """Call a handler; in the legacy era, answer its input requests with real
    server-to-client requests and call it again, so one handler serves both eras."""
    result = await handler.call(ctx, kwargs)
    rounds = 0
    while isinstance(result, InputRequired) and not ctx.modern:
        rounds += 1
        if rounds > MAX_INPUT_ROUNDS:
            raise MCPError(INTERNAL_ERROR, "Too many input rounds")
        responses: dict[str, Any] = {}
        ctx.require_input()  # the mode named, before a capability the client did declare
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


def input_required(raw: InputRequired, ctx: Context) -> dict[str, Any]:
    """The input-required result, keeping only the requests the client can answer."""
    kept: dict[str, dict[str, Any]] = {}
    missing: dict[str, Any] = {}
    for key, req in raw.input_requests.items():
        cap = INPUT_KIND_CAPABILITY.get(str(req.get("method")))
        if cap is not None and not ctx.client_supports(cap):
            missing[cap] = {}
            continue
        kept[key] = req
    if missing and not kept and raw.request_state is None:
        raise MissingClientCapability(missing)
    return InputRequired(kept, raw.request_state).to_result()


async def read_resource(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    uri = load(URI_PARAMS, params, RESOURCES_READ)["uri"]
    skills = server.skill_catalog
    if skills is not None and skills.serves(uri):
        return await skills.read(uri)
    res = server.registry.resources.get(uri)
    try:
        if res is not None:
            raw = await run_with_input(server, res.handler, {}, ctx)
            ttl, scope = res.ttl_ms, res.cache_scope
        else:
            found = server.registry.match_template(uri)
            if found is None:
                raise ResourceNotFound(uri)
            tpl, variables = found
            kwargs = ({**variables, "uri": uri}
                      if "uri" in {p.name for p in tpl.handler.params} else variables)
            raw = await run_with_input(server, tpl.handler, kwargs, ctx)
            ttl, scope, mime = tpl.ttl_ms, tpl.cache_scope, tpl.mime_type
    except ResourceNotFound as exc:
        raise unknown_resource(exc.uri, ctx) from None
    except (MCPError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception("resource handler for %s raised", uri)
        raise MCPError(INTERNAL_ERROR, "Internal error reading resource") from None
    if isinstance(raw, InputRequired):
        return input_required(raw, ctx)
    result = contents_result(uri, raw, res.mime_type if res is not None else mime)
    if ctx.modern:
        if ttl is not None:
            result["ttlMs"] = ttl
        if scope is not None:
            result["cacheScope"] = scope
    return result


async def change_subscription(server: Host, params: dict[str, Any], ctx: Context,
                        handler: HandlerSpec | None, subscribing: bool) -> dict[str, Any]:
    if not isinstance(params.get("uri"), str):
        raise MCPError(INVALID_PARAMS, "Invalid params", "Missing or invalid uri")
    skills = server.skill_catalog
    if skills is not None and skills.serves(params["uri"]):  # the catalog's own
        if subscribing:
            skills.subscribe(ctx, params["uri"])
        else:
            skills.unsubscribe(ctx, params["uri"])
        return {}
    returned = await handler.call(ctx, {"uri": params["uri"]}) if handler else None
    if isinstance(returned, dict) and isinstance(returned.get("_meta"), dict):
        return {"_meta": returned["_meta"]}
    return {}


async def subscribe(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    _refuse_without_session(ctx)
    tracker = _tracker_for(server, params, ctx)
    if tracker is not None and ctx.session is not None:
        tracker.subscribe(ctx.session, params["uri"])  # bounded: -32602 over it
    handler = server.registry.subscribe_handler
    return await change_subscription(server, params, ctx, handler, True)


async def unsubscribe(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    _refuse_without_session(ctx)
    tracker = _tracker_for(server, params, ctx)
    if tracker is not None and ctx.session is not None:
        tracker.unsubscribe(ctx.session, params["uri"])
    handler = server.registry.unsubscribe_handler
    return await change_subscription(server, params, ctx, handler, False)


def _tracker_for(server: Host, params: dict[str, Any], ctx: Context) -> SubscriptionTracker | None:
    """The tracker that records this subscription: the server's, unless the URI is a skill
    file (the skills catalog keeps its own subscribers and notifies them)."""
    uri = params.get("uri")
    if server.subscriptions is None or not isinstance(uri, str):
        return None
    skills = server.skill_catalog
    return None if skills is not None and skills.serves(uri) else server.subscriptions


def _refuse_without_session(ctx: Context) -> None:
    """A legacy subscription needs a session to send its updates to: stateless mode has
    none (and does not advertise ``resources.subscribe``)."""
    if ctx.session is None and not ctx.modern:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {ctx.method} (stateless mode has "
                                         "no session to send updates to; use "
                                         "subscriptions/listen at 2026-07-28)")


async def get_prompt(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(PROMPT_GET_PARAMS, params, PROMPTS_GET)
    prompt = server.registry.prompts.get(p["name"])
    if prompt is None:
        raise unknown_prompt(p["name"])
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
        raw = await run_with_input(server, prompt.handler, kwargs, ctx)
    except (MCPError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception("prompt %s raised", prompt.name)
        raise MCPError(INTERNAL_ERROR, f"Internal error getting prompt {prompt.name}") \
            from None
    if isinstance(raw, InputRequired):
        return input_required(raw, ctx)
    return prompt_result(raw, prompt.description)


async def complete(server: Host, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(COMPLETE_PARAMS, params, COMPLETION_COMPLETE)
    if not _resolves(server, p["ref"]):
        # Only what the registry holds, compared as it compares names: the handler never
        # sees a reference to nothing (nor one the scope rules did not check).
        raise unknown_reference()
    handler = server.registry.completion_handler
    assert handler is not None
    raw = await handler.call(
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


def _resolves(server: Host, ref: dict[str, Any]) -> bool:
    """Whether a completion's ``ref`` names a registered prompt, or a registered resource
    or resource template (its exact URI or URI template)."""
    kind = ref.get("type")
    if kind == "ref/prompt":
        name = ref.get("name")
        return isinstance(name, str) and name in server.registry.prompts
    if kind == "ref/resource":
        uri = ref.get("uri")
        return isinstance(uri, str) and (uri in server.registry.templates
                                         or uri in server.registry.resources)
    return False


Method = Callable[[Host, dict[str, Any], Context], Awaitable[dict[str, Any]]]

BUILTIN: dict[str, Method] = {
    PING: ping,
    LOGGING_SET_LEVEL: set_level,
    SERVER_DISCOVER: discover,
    TOOLS_LIST: list_tools,
    TOOLS_CALL: call_tool,
    RESOURCES_LIST: list_resources,
    RESOURCES_TEMPLATES_LIST: list_templates,
    RESOURCES_READ: read_resource,
    RESOURCES_SUBSCRIBE: subscribe,
    RESOURCES_UNSUBSCRIBE: unsubscribe,
    PROMPTS_LIST: list_prompts,
    PROMPTS_GET: get_prompt,
    COMPLETION_COMPLETE: complete,
}
