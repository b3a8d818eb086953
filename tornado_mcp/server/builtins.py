"""The built-in MCP methods, one function each: ``fn(server, params, ctx) -> result``.

:data:`BUILTIN` maps each method name to its function; :meth:`Server.handle
<tornado_mcp.server.server.Server.handle>` checks the method against the era and the server's
capabilities, then calls it.  Handlers are run through :func:`run_with_input`, so one
handler serves both eras' ways of asking the client for input.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..protocol import INTERNAL_ERROR, INVALID_PARAMS, META_SERVER_INFO, MODERN_VERSIONS
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
from .contract import ArgumentError
from .input import INPUT_KIND_CAPABILITY, InputRequired
from .primitives import HandlerSpec
from .results import OutputError, contents_result, prompt_result, text, tool_result

if TYPE_CHECKING:
    from .server import Server

log = logging.getLogger("tornado_mcp.server")

MAX_COMPLETION_VALUES = 100
LEGACY_INPUT_ROUNDS = 8


async def ping(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return {}


async def set_level(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(SET_LEVEL_PARAMS, params, "logging/setLevel")
    if ctx.session is not None:
        ctx.session.log_level = p["level"]
    return {}


async def discover(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    served = ctx.served_versions if ctx.served_versions is not None else MODERN_VERSIONS
    result = server.discover_result(served, ctx.listen_served)
    result["resultType"] = "complete"
    result["ttlMs"] = server.ttl_ms
    result["cacheScope"] = server.cache_scope
    result["_meta"] = {META_SERVER_INFO: server.server_info()}
    return result


def described(server: Server, kind: str, items: Iterable[Any]) -> list[dict[str, Any]]:
    cached = server._cache.get(kind)
    if cached is None:
        cached = server._cache[kind] = [i.describe() for i in items]
    return cached


def page(server: Server, key: str, kind: str, items: Iterable[Any],
          params: dict[str, Any]) -> dict[str, Any]:
    p = load(CURSOR_PARAMS, params, "params")
    page, next_cursor = paginate(described(server, kind, items), p.get("cursor"),
                                 server.page_size)
    result: dict[str, Any] = {key: list(page)}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def list_tools(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    kind: str = "tools"
    tools: Iterable[Any] = server._tools.values()
    if server._apps is not None:  # MCP Apps: UI metadata only for clients that show it
        kind, tools = server._apps.tools_for(ctx, tools)
    return page(server, "tools", kind, tools, params)


async def list_resources(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    kind: str = "resources"
    items: Iterable[Any] = server._resources.values()
    if server._apps is not None:  # MCP Apps: views only for clients that show them
        kind, items = server._apps.resources_for(ctx, items)
    if server._skills is not None:  # skill files (tornado_mcp.server.skills)
        items = itertools.chain(items, server._skills.listed())
    return page(server, "resources", kind, items, params)


async def list_templates(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return page(server, "resourceTemplates", "templates", server._templates.values(), params)


async def list_prompts(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return page(server, "prompts", "prompts", server._prompts.values(), params)


async def call_tool(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """``tools/call``: bind the arguments to the tool's contract, run it, shape the result.

    Arguments that break the input schema (or that the function's types refuse) give a
    tool result with ``isError: true``, so the model can correct itself; an argument the
    function does not take is -32602.  A result that breaks the tool's output schema is
    -32603 and logged: it is never sent.
    """
    p = load(TOOL_CALL_PARAMS, params, "tools/call")
    tool = server._tools.get(p["name"])
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {p['name']}")
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


async def run_with_input(server: Server, handler: HandlerSpec, kwargs: dict[str, Any],
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


async def read_resource(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    uri = load(URI_PARAMS, params, "resources/read")["uri"]
    if server._skills is not None and server._skills.serves(uri):
        return await server._skills.read(uri)
    res = server._resources.get(uri)
    try:
        if res is not None:
            raw = await run_with_input(server, res.handler, {}, ctx)
            ttl, scope = res.ttl_ms, res.cache_scope
        else:
            for tpl in server._templates.values():
                variables = tpl.template.match(uri)
                if variables is not None:
                    kwargs = ({**variables, "uri": uri}
                              if "uri" in {p.name for p in tpl.handler.params} else variables)
                    raw = await run_with_input(server, tpl.handler, kwargs, ctx)
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
        return input_required(raw, ctx)
    result = contents_result(uri, raw, res.mime_type if res is not None else mime)
    if ctx.modern:
        if ttl is not None:
            result["ttlMs"] = ttl
        if scope is not None:
            result["cacheScope"] = scope
    return result


async def subscribe_op(server: Server, params: dict[str, Any], ctx: Context,
                        handler: HandlerSpec | None, subscribing: bool) -> dict[str, Any]:
    if not isinstance(params.get("uri"), str):
        raise MCPError(INVALID_PARAMS, "Invalid params", "Missing or invalid uri")
    skills = server._skills
    if skills is not None and skills.serves(params["uri"]):  # the catalog's own
        if subscribing:
            skills.notices.subscribe(ctx, params["uri"])
        else:
            skills.notices.unsubscribe(ctx, params["uri"])
        return {}
    returned = await handler.call(ctx, {"uri": params["uri"]}) if handler else None
    if isinstance(returned, dict) and isinstance(returned.get("_meta"), dict):
        return {"_meta": returned["_meta"]}
    return {}


async def subscribe_m(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return await subscribe_op(server, params, ctx, server._subscribe, True)


async def unsubscribe_m(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    return await subscribe_op(server, params, ctx, server._unsubscribe, False)


async def get_prompt(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(PROMPT_GET_PARAMS, params, "prompts/get")
    prompt = server._prompts.get(p["name"])
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


async def complete(server: Server, params: dict[str, Any], ctx: Context) -> dict[str, Any]:
    p = load(COMPLETE_PARAMS, params, "completion/complete")
    assert server._completion is not None
    raw = await server._completion.call(
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


Method = Callable[["Server", dict[str, Any], Context], Awaitable[dict[str, Any]]]

BUILTIN: dict[str, Method] = {
    "ping": ping,
    "logging/setLevel": set_level,
    "server/discover": discover,
    "tools/list": list_tools,
    "tools/call": call_tool,
    "resources/list": list_resources,
    "resources/templates/list": list_templates,
    "resources/read": read_resource,
    "resources/subscribe": subscribe_m,
    "resources/unsubscribe": unsubscribe_m,
    "prompts/list": list_prompts,
    "prompts/get": get_prompt,
    "completion/complete": complete,
}
