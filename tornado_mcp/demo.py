"""The demo server: a few useful tools, resources and prompts to try a client against.

Notes are resources (``note://{name}``) that clients can subscribe to, in both eras:
a legacy session with ``resources/subscribe`` (updates arrive on its GET stream), a
2026-07-28 client with ``subscriptions/listen`` naming the URI.  ``add_note`` tells exactly
those subscribers, whoever calls it.
"""

from __future__ import annotations

import datetime
import statistics
import weakref
from typing import Any

from .protocol import INVALID_PARAMS, RESOURCES_UPDATED
from .protocol.errors import MCPError, ResourceNotFound, ToolError
from .server.context import Context
from .server.server import Server
from .server.session import Session

WELCOME = "Welcome to tornado-mcp. Try the add_note tool."
#: Distinct URIs the demo tracks legacy subscriptions for (clients choose the URIs).
MAX_SUBSCRIBED_URIS = 1000


def build_demo_server() -> Server:
    server = Server("tornado-mcp-demo", version="0.1.0", title="tornado-mcp demo",
                    instructions="A small notebook: list, read and add notes; "
                                 "do some arithmetic; ask for the time.")
    notes: dict[str, str] = {"welcome": WELCOME}
    # Legacy sessions subscribed to each note URI (weakly: an ended session drops out).
    subscribers: dict[str, weakref.WeakSet[Session]] = {}

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
    def add_note(name: str, text: str) -> str:
        """Store a note; the sessions and listen streams subscribed to its URI are told."""
        is_new = name not in notes
        notes[name] = text
        uri = f"note://{name}"
        for session in list(subscribers.get(uri, ())):
            session.send_notification(RESOURCES_UPDATED, {"uri": uri})  # its GET stream
        server.notify_resources_updated(uri)  # 2026-07-28 listen streams naming uri
        if is_new:
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
        return "\n".join(sorted(notes))

    @server.resource("note://{name}", "note", mime_type="text/plain")
    def note(name: str) -> str:
        """One note by name."""
        if name not in notes:
            raise ResourceNotFound(f"note://{name}")
        return notes[name]

    @server.prompt(description="Summarise a note in a given tone.")
    def summarise(name: str, tone: str = "neutral") -> str:
        return f"Summarise the note {name!r} in a {tone} tone:\n\n{notes.get(name, '')}"

    @server.completion()
    def complete(ref: dict[str, str], argument: dict[str, str], context: object) -> list[str]:
        if argument.get("name") == "name":
            return [n for n in sorted(notes) if n.startswith(argument.get("value", ""))]
        if argument.get("name") == "tone":
            return [t for t in ("neutral", "formal", "playful")
                    if t.startswith(argument.get("value", ""))]
        return []

    @server.on_subscribe
    def subscribe(uri: str, ctx: Context) -> None:
        """Remember the session; add_note notifies it on its GET stream."""
        if ctx.session is None:
            return
        if uri not in subscribers and len(subscribers) >= MAX_SUBSCRIBED_URIS:
            for gone in [u for u, s in subscribers.items() if not s]:
                del subscribers[gone]  # URIs whose sessions have all ended
            if len(subscribers) >= MAX_SUBSCRIBED_URIS:
                raise MCPError(INVALID_PARAMS, "Too many subscribed URIs on this demo server "
                                               f"(at most {MAX_SUBSCRIBED_URIS})")
        subscribers.setdefault(uri, weakref.WeakSet()).add(ctx.session)

    @server.on_unsubscribe
    def unsubscribe(uri: str, ctx: Context) -> None:
        if ctx.session is not None and uri in subscribers:
            subscribers[uri].discard(ctx.session)
            if not subscribers[uri]:
                del subscribers[uri]

    return server
