"""How a tool declares that it may or must run as a task, and how a handler hands its
remaining work over to a task.

::

    from tornado_mcp.tasks import task_tool

    @task_tool(server, support="optional")
    async def render(scene: str) -> str:
        await asyncio.sleep(30)          # a client that declared the tasks extension
        return f"rendered {scene}"       # polls for this instead of waiting

``support`` is the tool's ``execution.taskSupport``: ``"optional"`` (a task when the client
can take one, a plain call otherwise) or ``"required"`` (a client that cannot take a task
gets -32021 at 2026-07-28, -32601 at 2025-11-25).  Tools declare nothing by default and
are never tasks.

A tool that first gathers input with an input-required result (2026-07-28) and only then
starts the long work declares ``deferred=True``: it runs inline like any tool, and
raises :class:`RunAsTask` with the work once it has what it needs.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from ..protocol import INTERNAL_ERROR, jsonio
from ..protocol.errors import MCPError
from ..server.server import Server

SUPPORT_VALUES = ("optional", "required")


class ToolSupport:
    """One tool's declaration."""

    __slots__ = ("deferred", "support")

    def __init__(self, support: str, deferred: bool) -> None:
        if support not in SUPPORT_VALUES:
            raise ValueError(f"support must be one of {SUPPORT_VALUES}, not {support!r}")
        self.support = support
        self.deferred = deferred


_DECLARED: weakref.WeakKeyDictionary[Server, dict[str, ToolSupport]] = \
    weakref.WeakKeyDictionary()


def declare(server: Server, tool: str, support: str = "optional", *,
            deferred: bool = False) -> None:
    """Declare that ``server``'s tool named ``tool`` may (``"optional"``) or must
    (``"required"``) run as a task."""
    _DECLARED.setdefault(server, {})[tool] = ToolSupport(support, deferred)
    server.notify_tools_list_changed()


def undeclare(server: Server, tool: str) -> None:
    """Withdraw the task declaration of ``server``'s tool named ``tool`` (nothing happens
    when there is none): its calls run as plain calls again."""
    _DECLARED.get(server, {}).pop(tool, None)


def support_of(server: Server, tool: Any) -> ToolSupport | None:
    """The declaration of ``tool`` on ``server`` (``None``: never a task)."""
    declared = _DECLARED.get(server)
    if not declared or not isinstance(tool, str):
        return None
    return declared.get(tool)


def declared(server: Server) -> dict[str, ToolSupport]:
    return dict(_DECLARED.get(server, {}))


def task_tool(server: Server, name: str | None = None, *, support: str = "optional",
              deferred: bool = False, **tool_options: Any) -> Callable[[Any], Any]:
    """Register a tool with :meth:`Server.add_tool` (``tool_options`` are its keywords)
    and declare its task support; see the module docstring."""
    def register(fn: Any) -> Any:
        tool = server.add_tool(fn, name, **tool_options)
        declare(server, tool.name, support, deferred=deferred)
        return fn
    return register


class RunAsTask(MCPError):
    """Raise from a ``deferred`` task tool to continue as a task: ``work`` is awaited in
    the task and its value becomes the task's result (what a tool may return: text,
    content blocks, a result dict).

    It is an :class:`~tornado_mcp.MCPError` only so that it crosses the server's tool
    dispatch untouched; the transport catches it before any client sees it.
    """

    def __init__(self, work: Awaitable[Any]) -> None:
        super().__init__(INTERNAL_ERROR, "Internal error: a task hand-over escaped")
        self.work = work


def tool_result(raw: Any) -> dict[str, Any]:
    """A ``CallToolResult`` for what a tool's deferred work returned."""
    if isinstance(raw, dict) and ("content" in raw or "structuredContent" in raw):
        return {"content": [], **raw}
    if raw is None:
        return {"content": []}
    if isinstance(raw, str):
        return {"content": [{"type": "text", "text": raw}]}
    if isinstance(raw, list) and all(isinstance(b, dict) and "type" in b for b in raw):
        return {"content": raw}
    return {"content": [{"type": "text", "text": jsonio.dumps_str(raw)}]}
