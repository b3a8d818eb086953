"""Tasks: tool calls that answer at once with a handle the client polls.

Both flavours are served by the same machinery: the ``io.modelcontextprotocol/tasks``
extension (2026-07-28, SEP-2663) and the experimental tasks of 2025-11-25.  A tool opts
in with :func:`task_tool` (or :func:`declare`); every :class:`~tornado_mcp.Transport`
then runs such calls as tasks in its :class:`TaskManager`, keeping their records in a
:class:`TaskStore`, in-process by default, or a :class:`RedisTaskStore` shared by several
processes.  See ``docs/tasks.md``.
"""

from .manager import TaskManager
from .record import Status, TaskRecord
from .store import TaskStore
from .support import RunAsTask, declare, task_tool, undeclare

__all__ = ["RunAsTask", "Status", "TaskManager", "TaskRecord", "TaskStore", "declare",
           "task_tool", "undeclare"]


def __getattr__(name: str) -> object:
    if name == "RedisTaskStore":  # imports redis only when asked for
        from ..cluster.task_store import RedisTaskStore
        return RedisTaskStore
    raise AttributeError(name)
