"""The demo server: a few useful tools, resources and prompts to try a client against."""

from __future__ import annotations

import datetime
import statistics
from typing import Any

from .context import Context
from .errors import ToolError
from .server import Server

NOTES: dict[str, str] = {"welcome": "Welcome to tornado-mcp. Try the add_note tool."}


def build_demo_server() -> Server:
    server = Server("tornado-mcp-demo", version="0.1.0", title="tornado-mcp demo",
                    instructions="A small notebook: list, read and add notes; "
                                 "do some arithmetic; ask for the time.")

    @server.tool(annotations={"readOnlyHint": True})
    def now(timezone_offset_hours: float = 0.0) -> str:
        """The current time, ISO 8601, at a UTC offset in hours."""
        tz = datetime.timezone(datetime.timedelta(hours=timezone_offset_hours))
        return datetime.datetime.now(tz).isoformat(timespec="seconds")

    @server.tool(annotations={"readOnlyHint": True})
    def stats(numbers: list[float]) -> dict[str, float]:
        """Mean, median, min and max of a list of numbers."""
        if not numbers:
            raise ToolError("numbers must not be empty")
        return {"mean": statistics.fmean(numbers), "median": statistics.median(numbers),
                "min": min(numbers), "max": max(numbers)}

    @server.tool()
    async def add_note(name: str, text: str, ctx: Context) -> str:
        """Store a note; subscribers of its URI are told it changed."""
        NOTES[name] = text
        ctx.notify_resources_updated(f"note://{name}")
        server.notify_resources_list_changed()
        return f"Stored note {name!r} ({len(text)} characters)."

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who is calling: subject and scopes (anonymous without authentication)."""
        return ctx.principal.as_dict()

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.resource("note://index", "index", mime_type="text/plain")
    def index() -> str:
        """The names of all notes."""
        return "\n".join(sorted(NOTES))

    @server.resource("note://{name}", "note", mime_type="text/plain")
    def note(name: str) -> str:
        """One note by name."""
        from .errors import ResourceNotFound
        if name not in NOTES:
            raise ResourceNotFound(f"note://{name}")
        return NOTES[name]

    @server.prompt(description="Summarise a note in a given tone.")
    def summarise(name: str, tone: str = "neutral") -> str:
        return f"Summarise the note {name!r} in a {tone} tone:\n\n{NOTES.get(name, '')}"

    @server.completion()
    def complete(ref: dict[str, str], argument: dict[str, str], context: object) -> list[str]:
        if argument.get("name") == "name":
            return [n for n in sorted(NOTES) if n.startswith(argument.get("value", ""))]
        if argument.get("name") == "tone":
            return [t for t in ("neutral", "formal", "playful")
                    if t.startswith(argument.get("value", ""))]
        return []

    @server.on_subscribe
    def subscribe(uri: str) -> None:
        """Subscriptions are tracked per session by the client's GET stream."""

    return server
