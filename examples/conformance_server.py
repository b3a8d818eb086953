"""The fixture server the official MCP conformance harness expects, on tornado-mcp.

    python examples/conformance_server.py --port 8000 [--stateless true] [...]

Serves every fixture of both protocol eras at ``/mcp`` (tools, resources, templates,
prompts, completion, logging, sampling, elicitation, input-required results, header
validation, SSE polling: resumable streams are on unless ``--resumable-streams false``),
plus this project's own ``touch_resource(uri)``, ``echo(text)``, the
resources ``test://r/{n}`` used by the benchmarks, the agent skills of
``examples/skills/`` (the ``io.modelcontextprotocol/skills`` extension) and an MCP App,
``show_forecast(city)`` with its view ``ui://tornado-mcp/forecast`` (the
``io.modelcontextprotocol/ui`` extension).  Every transport option is a flag.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
import weakref
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tornado_mcp import (
    Context,
    InputRequired,
    PromptArgument,
    Server,
    Session,
    ToolError,
    audio,
    cli,
    elicitation,
    embedded_resource,
    image,
    roots,
    sampling,
    text,
)
from tornado_mcp.protocol import INTERNAL_ERROR
from tornado_mcp.protocol.errors import MCPError
from tornado_mcp.tasks import RunAsTask, task_tool

# A 1x1 PNG and a tiny WAV.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
WAV = base64.b64decode("UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=")

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"},
                                         "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

#: The agent skills this server publishes (``skill://<name>/...``).
SKILLS_DIR = Path(__file__).resolve().parent / "skills"
#: The MCP Apps views, and the URI of the forecast view.
APPS_DIR = Path(__file__).resolve().parent / "apps"
FORECAST_VIEW = "ui://tornado-mcp/forecast"

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def build_server() -> Server:
    server = Server("tornado-mcp-conformance", version="0.1.0",
                    instructions="Conformance fixtures for tornado-mcp.")
    # Legacy sessions subscribed through resources/subscribe: uri -> sessions.
    subscribers: dict[str, weakref.WeakSet[Session]] = {}

    # -- plain tools ------------------------------------------------------------------------
    @server.tool(description="Who is calling: the caller's principal (subject, scopes); "
                             "anonymous when the endpoint has no authentication")
    def whoami(ctx: Context) -> dict[str, Any]:
        return ctx.principal.as_dict()

    @server.tool(description="Returns a simple text response")
    def test_simple_text() -> str:
        return "This is a simple text response for testing."

    @server.tool(description="Returns an image")
    def test_image_content() -> list[dict[str, Any]]:
        return [image(PNG, "image/png")]

    @server.tool(description="Returns audio")
    def test_audio_content() -> list[dict[str, Any]]:
        return [audio(WAV, "audio/wav")]

    @server.tool(description="Returns an embedded resource")
    def test_embedded_resource() -> list[dict[str, Any]]:
        return [embedded_resource("test://embedded-resource", "This is an embedded resource.",
                                  mime_type="text/plain")]

    @server.tool(description="Returns text, image and resource content")
    def test_multiple_content_types() -> list[dict[str, Any]]:
        return [text("Multiple content types test:"), image(PNG, "image/png"),
                embedded_resource("test://mixed-content-resource", '{"test":"data"}',
                                  mime_type="application/json")]

    @server.tool(description="Sends log messages during execution")
    async def test_tool_with_logging(ctx: Context) -> str:
        for message in ("Tool execution started", "Tool processing data",
                        "Tool execution completed"):
            ctx.info(message)
            await asyncio.sleep(0.05)
        return "Tool with logging executed successfully"

    @server.tool(description="Reports progress during execution")
    async def test_tool_with_progress(ctx: Context) -> str:
        for step in (0, 50, 100):
            ctx.report_progress(step, 100, f"Completed step {step} of 100")
            await asyncio.sleep(0.05)
        return str(ctx.progress_token)

    @server.tool(description="Closes its SSE stream mid-call; the result is replayed to "
                             "the client when it reconnects with Last-Event-ID")
    async def test_reconnection(ctx: Context) -> str:
        ctx.close_sse_stream()
        await asyncio.sleep(0.1)  # the result is sent while the client is away
        return "Reconnection test completed successfully"

    @server.tool(description="Returns an error result")
    def test_error_handling() -> str:
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool(description="Asks the client's LLM via sampling")
    async def test_sampling(prompt: str, ctx: Context) -> str:
        result = await ctx.sample([{"role": "user", "content": text(prompt)}], 100)
        content = result.get("content") or {}
        return f"LLM response: {content.get('text', '') if isinstance(content, dict) else ''}"

    @server.tool(description="Asks the user via elicitation")
    async def test_elicitation(message: str, ctx: Context) -> str:
        schema = {"type": "object", "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}},
            "required": ["username", "email"]}
        result = await ctx.elicit(message, schema)
        return f"User response: action={result.get('action')}, content={result.get('content')}"

    @server.tool(description="Elicitation with default values (SEP-1034)")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
        schema = {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "default": True}}}
        result = await ctx.elicit("Please review and update the form fields with defaults",
                                  schema)
        return f"Elicitation completed: action={result.get('action')}, " \
               f"content={result.get('content')}"

    @server.tool(description="Elicitation with enum shapes (SEP-1330)")
    async def test_elicitation_sep1330_enums(ctx: Context) -> str:
        schema = {"type": "object", "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string",
                                                         "enum": ["option1", "option2",
                                                                  "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}]}}}}
        result = await ctx.elicit("Please select options from the enum fields", schema)
        return f"Elicitation completed: action={result.get('action')}, " \
               f"content={result.get('content')}"

    server.add_tool(lambda **_: "ok", "json_schema_2020_12_tool",
                    description="Tool with JSON Schema 2020-12 features",
                    input_schema=JSON_SCHEMA_2020_12)

    @server.tool(description="Echoes a region passed as an Mcp-Param-Region header",
                 input_schema={"type": "object", "properties": {
                     "region": {"type": "string", "x-mcp-header": "Region"}},
                     "required": ["region"]})
    def test_x_mcp_header(region: str) -> str:
        return f"Region: {region}"

    # -- 2026-07-28 fixtures ------------------------------------------------------------------
    @server.tool(description="Requires the client's sampling capability")
    def test_missing_capability(ctx: Context) -> str:
        ctx.require_client_capability("sampling")
        return "The client declared sampling."

    @server.tool(description="Logs at info")
    def test_logging_tool(ctx: Context) -> str:
        ctx.info("test_logging_tool ran")
        return "Logged at info."

    @server.tool(description="Needs user input (an input-required result at 2026-07-28)")
    def test_streaming_elicitation(ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("user_input")
        if not isinstance(answer, dict):
            return InputRequired({"user_input": elicitation("Please provide input",
                                                            {"type": "object", "properties": {
                                                                "value": {"type": "string"}}})})
        return f"Received: {answer.get('content')}"

    change_counter = {"tools": 0, "prompts": 0}

    @server.tool(description="Adds a tool, so the tool list changes")
    def test_trigger_tool_change() -> str:
        change_counter["tools"] += 1
        name = f"dynamic_tool_{change_counter['tools']}"
        server.add_tool(lambda: "dynamic", name, description="Added at run time")
        server.notify_tools_list_changed()
        return f"Added {name}"

    @server.tool(description="Adds a prompt, so the prompt list changes")
    def test_trigger_prompt_change() -> str:
        change_counter["prompts"] += 1
        name = f"dynamic_prompt_{change_counter['prompts']}"
        server.add_prompt(lambda: "dynamic", name, description="Added at run time")
        server.notify_prompts_list_changed()
        return f"Added {name}"

    def wanted(ctx: Context, key: str) -> dict[str, Any] | None:
        value = ctx.input_response(key)
        return value if isinstance(value, dict) else None

    @server.tool(description="Input-required: one elicitation")
    def test_input_required_result_elicitation(ctx: Context) -> str | InputRequired:
        answer = wanted(ctx, "user_name")
        if answer is None:
            return InputRequired({"user_name": elicitation("What is your name?", NAME_SCHEMA)})
        content = answer.get("content") or {}
        return f"Hello, {content.get('name', 'stranger')}!"

    @server.tool(description="Input-required: one sampling request")
    def test_input_required_result_sampling(ctx: Context) -> str | InputRequired:
        answer = wanted(ctx, "capital_question")
        if answer is None:
            return InputRequired({"capital_question": sampling(
                [{"role": "user", "content": text("What is the capital of France?")}], 100)})
        content = answer.get("content") or {}
        return f"Sampling said: {content.get('text', '') if isinstance(content, dict) else ''}"

    @server.tool(description="Input-required: roots/list")
    def test_input_required_result_list_roots(ctx: Context) -> str | InputRequired:
        answer = wanted(ctx, "client_roots")
        if answer is None:
            return InputRequired({"client_roots": roots()})
        uris = [r.get("uri") for r in answer.get("roots", []) if isinstance(r, dict)]
        return f"Client roots: {', '.join(map(str, uris)) or '(none)'}"

    confirm = elicitation("Please confirm", {"type": "object",
                                             "properties": {"ok": {"type": "boolean"}},
                                             "required": ["ok"]})

    @server.tool(description="Input-required with sealed requestState")
    def test_input_required_result_request_state(ctx: Context) -> str | InputRequired:
        state = ctx.open_state()
        if state is None or wanted(ctx, "confirm") is None:
            return InputRequired({"confirm": confirm},
                                 request_state=ctx.seal_state({"nonce": "request-state-nonce"}))
        return f"state-ok: {state.get('nonce')}"

    @server.tool(description="Input-required: elicitation, sampling and roots at once")
    def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequired:
        keys = ("user_name", "greeting", "client_roots")
        if ctx.open_state() is None or any(wanted(ctx, k) is None for k in keys):
            return InputRequired({
                "user_name": elicitation("What is your name?", NAME_SCHEMA),
                "greeting": sampling([{"role": "user", "content": text("Generate a greeting")}],
                                     50),
                "client_roots": roots()}, request_state=ctx.seal_state({"round": 1}))
        return "All inputs received: " + ", ".join(keys)

    @server.tool(description="Input-required across three rounds")
    def test_input_required_result_multi_round(ctx: Context) -> str | InputRequired:
        state = ctx.open_state() or {}
        step = state.get("step", 0)
        if step == 0 or (step == 1 and wanted(ctx, "step1") is None):
            return InputRequired({"step1": elicitation("Step 1: What is your name?",
                                                       NAME_SCHEMA)},
                                 request_state=ctx.seal_state({"step": 1}))
        if step == 1 or (step == 2 and wanted(ctx, "step2") is None):
            name = (wanted(ctx, "step1") or {}).get("content", {}) if step == 1 else \
                {"name": state.get("name")}
            return InputRequired({"step2": elicitation(
                "Step 2: What is your favorite color?",
                {"type": "object", "properties": {"color": {"type": "string"}},
                 "required": ["color"]})},
                request_state=ctx.seal_state({"step": 2, "name": name.get("name")}))
        color = (wanted(ctx, "step2") or {}).get("content", {}).get("color")
        return f"Done: {state.get('name')} likes {color}"

    @server.tool(description="Input-required; rejects tampered requestState")
    def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequired:
        state = ctx.open_state()  # -32602 when tampered
        if state is None or wanted(ctx, "confirm") is None:
            return InputRequired({"confirm": confirm},
                                 request_state=ctx.seal_state({"issued": True}))
        return "state-ok"

    @server.tool(description="Input-required, only for declared client capabilities")
    def test_input_required_result_capabilities(ctx: Context) -> str | InputRequired:
        requests: dict[str, dict[str, Any]] = {}
        if ctx.client_supports("elicitation"):
            requests["user_name"] = elicitation("What is your name?", NAME_SCHEMA)
        if ctx.client_supports("sampling"):
            requests["greeting"] = sampling(
                [{"role": "user", "content": text("Generate a greeting")}], 50)
        if ctx.client_supports("roots"):
            requests["client_roots"] = roots()
        if not requests or all(wanted(ctx, k) is not None for k in requests):
            return "Capabilities respected."
        return InputRequired(requests)

    # -- this project's fixtures ----------------------------------------------------------------
    @server.tool(description="Returns its argument")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Marks a resource as changed, notifying every subscriber")
    def touch_resource(uri: str, ctx: Context) -> str:
        sessions = list(subscribers.get(uri, ()))
        for session in sessions:  # their GET streams only
            if session is not ctx.session:
                session.send_notification("notifications/resources/updated", {"uri": uri})
        if ctx.session is not None and ctx.session in sessions:
            # The caller's GET stream (or this response), and every listen stream, once.
            ctx.notify_resources_updated(uri)
        else:
            server.notify_resources_updated(uri)  # 2026-07-28 listen streams
        return f"Touched {uri}"

    # -- resources ----------------------------------------------------------------------------
    @server.resource("test://static-text", "static-text", mime_type="text/plain",
                     description="A static text resource")
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource("test://static-binary", "static-binary", mime_type="image/png",
                     description="A static binary resource")
    def static_binary() -> bytes:
        return PNG

    @server.resource("test://watched-resource", "watched-resource", mime_type="text/plain",
                     description="A resource to subscribe to")
    def watched() -> str:
        return "Watched resource content"

    @server.resource("test://template/{id}/data", "template", mime_type="application/json",
                     description="A resource template")
    def template(id: str) -> str:
        return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'

    @server.resource("test://r/{n}", "bench-resource", mime_type="text/plain",
                     description="Numbered resources for subscriptions and benchmarks")
    def numbered(n: str) -> str:
        return f"resource {n}"

    @server.on_subscribe
    def subscribe(uri: str, ctx: Context) -> None:
        if ctx.session is not None:
            subscribers.setdefault(uri, weakref.WeakSet()).add(ctx.session)

    @server.on_unsubscribe
    def unsubscribe(uri: str, ctx: Context) -> None:
        if ctx.session is not None and uri in subscribers:
            subscribers[uri].discard(ctx.session)

    # -- prompts ------------------------------------------------------------------------------
    @server.prompt(description="A simple prompt without arguments")
    def test_simple_prompt() -> str:
        return "This is a simple prompt for testing."

    @server.prompt(description="A prompt with arguments",
                   arguments=[PromptArgument("arg1", "First test argument", True),
                              PromptArgument("arg2", "Second test argument", True)])
    def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
        return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"

    @server.prompt(description="A prompt with an embedded resource",
                   arguments=[PromptArgument("resourceUri", "URI of the resource", True)])
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
        return [{"role": "user", "content": embedded_resource(
                    resourceUri, "Embedded resource content for testing.",
                    mime_type="text/plain")},
                {"role": "user", "content": text("Please process the embedded resource above.")}]

    @server.prompt(description="A prompt with an image")
    def test_prompt_with_image() -> list[dict[str, Any]]:
        return [{"role": "user", "content": image(PNG, "image/png")},
                {"role": "user", "content": text("Please analyze the image above.")}]

    @server.prompt(description="A prompt that needs user input first")
    def test_input_required_result_prompt(ctx: Context) -> str | InputRequired:
        answer = wanted(ctx, "user_context")
        if answer is None:
            return InputRequired({"user_context": elicitation(
                "What context should the prompt use?",
                {"type": "object", "properties": {"context": {"type": "string"}},
                 "required": ["context"]})})
        return f"Prompt with context: {(answer.get('content') or {}).get('context')}"

    @server.completion()
    def complete(ref: dict[str, Any], argument: dict[str, Any], context: Any) -> list[str]:
        value = str(argument.get("value", ""))
        options = ["paris", "park", "party"] if argument.get("name") == "arg1" else []
        return [o for o in options if o.startswith(value)]

    add_task_fixtures(server)
    # The skills extension (io.modelcontextprotocol/skills): every skill in examples/skills/.
    server.skills_from(SKILLS_DIR)
    add_app_fixtures(server)
    return server


#: What ``show_forecast`` returns (its ``structuredContent``), which its view renders.
FORECAST_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "array", "items": {
            "type": "object",
            "properties": {"day": {"type": "string"}, "high": {"type": "integer"},
                           "low": {"type": "integer"}, "sky": {"type": "string"}},
            "required": ["day", "high", "low", "sky"]}},
    },
    "required": ["city", "days"],
}


def add_app_fixtures(server: Server) -> None:
    """MCP Apps (``io.modelcontextprotocol/ui``): a tool whose view renders its result."""
    server.app(FORECAST_VIEW, APPS_DIR / "forecast.html", "forecast-view",
               description="A table of the forecast show_forecast returns", prefers_border=True)

    @server.tool(ui=FORECAST_VIEW, output_schema=FORECAST_SCHEMA,
                 description="A forecast for a city, shown as a table by hosts that render "
                             "MCP Apps")
    def show_forecast(city: str, days: int = 3) -> dict[str, Any]:
        skies = ("sunny", "cloudy", "rain", "wind")
        seed = sum(map(ord, city))
        return {"city": city, "days": [
            {"day": f"day {n + 1}", "high": 15 + (seed + n) % 10, "low": 5 + (seed + 2 * n) % 6,
             "sky": skies[(seed + n) % 4]} for n in range(max(1, min(days, 7)))]}


def add_task_fixtures(server: Server) -> None:
    """The tools the tasks scenarios call (``io.modelcontextprotocol/tasks``)."""

    @server.tool(description="Greets by name; never a task")
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    @task_tool(server, support="optional", description="Sleeps, then answers; a task")
    async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
        await asyncio.sleep(seconds)
        return f"Computed {label or 'result'} after {seconds:g} s"

    @task_tool(server, support="required", description="A task whose tool reports an error")
    async def failing_job() -> str:
        await asyncio.sleep(0.5)
        raise ToolError("failing_job always fails")

    @task_tool(server, support="optional", description="A task that fails with an error")
    async def protocol_error_job() -> str:
        await asyncio.sleep(0.1)
        raise MCPError(INTERNAL_ERROR, "protocol_error_job always fails")

    confirm_schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}

    @task_tool(server, support="optional", description="A task that asks for confirmation")
    def confirm_delete(filename: str, ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("confirm")
        if not isinstance(answer, dict):
            return InputRequired({"confirm": elicitation(f"Delete {filename}?",
                                                         confirm_schema)})
        confirmed = answer.get("action") == "accept"
        return f"{'Deleted' if confirmed else 'Kept'} {filename}"

    @task_tool(server, support="optional", description="A task asking two things at once")
    def multi_input(ctx: Context) -> str | InputRequired:
        name, confirm = ctx.input_response("name"), ctx.input_response("confirm")
        if not isinstance(name, dict) or not isinstance(confirm, dict):
            return InputRequired({
                "name": elicitation("Your name?", NAME_SCHEMA),
                "confirm": elicitation("Proceed?", confirm_schema)})
        return f"Done for {(name.get('content') or {}).get('name', 'someone')}"

    @task_tool(server, support="required", deferred=True,
               description="Asks for a name inline, then continues as a task")
    def test_tool_with_task(ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("user_name")
        if not isinstance(answer, dict):
            return InputRequired({"user_name": elicitation("What is your name?",
                                                           NAME_SCHEMA)})
        name = (answer.get("content") or {}).get("name", "stranger")

        async def work() -> str:
            await asyncio.sleep(0.2)
            return f"Hello, {name}! (from a task)"
        raise RunAsTask(work())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_option_flags(parser)
    parser.set_defaults(opt_resumable_streams="true")  # the SSE polling fixtures need it
    args = parser.parse_args(argv)
    cli.serve(build_server(), args)


if __name__ == "__main__":
    main()
