"""Task status on ``subscriptions/listen`` streams (2026-07-28): a listen filter may name
``taskIds``, and each change of those tasks' status reaches the stream as a
``notifications/tasks/status`` whose params are the task as ``tasks/get`` shows it.

Only a client that declares the tasks extension on the listen request may ask (-32021
otherwise).  A stream names at most :data:`MAX_LISTEN_TASK_IDS` ids of at most 256
characters each, so what it keeps is bounded.  Notifications come from the process that
runs the task; a client polls ``tasks/get`` anyway (it must not rely on them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import INVALID_PARAMS, META_SUBSCRIPTION_ID, TASKS_EXTENSION, TASKS_STATUS, jsonio
from ..protocol.errors import MCPError, MissingClientCapability
from ..tasks.methods import MAX_TASK_ID_LENGTH
from .listen_index import ListenStream

if TYPE_CHECKING:
    from ..tasks.record import TaskRecord

#: Task ids one listen stream may name.
MAX_LISTEN_TASK_IDS = 100


def task_ids(notifications: dict[str, Any], capabilities: Any) -> list[str]:
    """The distinct ``taskIds`` a listen filter names (validated), in order."""
    if "taskIds" not in notifications:
        return []
    ids = notifications["taskIds"]
    if not isinstance(ids, list) or not all(
            isinstance(i, str) and 0 < len(i) <= MAX_TASK_ID_LENGTH for i in ids):
        raise MCPError(INVALID_PARAMS, "Invalid params: subscriptions/listen `taskIds` must "
                                       "be an array of task ids (strings of at most "
                                       f"{MAX_TASK_ID_LENGTH} characters)")
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    if not isinstance(extensions, dict) or TASKS_EXTENSION not in extensions:
        raise MissingClientCapability({"extensions": {TASKS_EXTENSION: {}}})
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_LISTEN_TASK_IDS:
        raise MCPError(INVALID_PARAMS, "Invalid params: subscriptions/listen `taskIds` "
                                       f"exceeds {MAX_LISTEN_TASK_IDS} ids")
    return unique


class Watchers:
    """Which listen streams watch which tasks."""

    def __init__(self) -> None:
        self._by_task: dict[str, set[ListenStream]] = {}
        self._by_stream: dict[ListenStream, list[str]] = {}
        self._owner: dict[ListenStream, str] = {}

    def __len__(self) -> int:
        return len(self._by_stream)

    def add(self, stream: ListenStream, ids: list[str], owner: str) -> None:
        """``stream`` watches ``ids``; it hears only of tasks ``owner`` may see (see
        :func:`~tornado_mcp.tasks.methods.owner_of`)."""
        if not ids:
            return
        self._by_stream[stream] = ids
        self._owner[stream] = owner
        for task_id in ids:
            self._by_task.setdefault(task_id, set()).add(stream)

    def remove(self, stream: ListenStream) -> None:
        self._owner.pop(stream, None)
        for task_id in self._by_stream.pop(stream, ()):
            holders = self._by_task.get(task_id)
            if holders is not None:
                holders.discard(stream)
                if not holders:
                    del self._by_task[task_id]

    def announce(self, record: TaskRecord) -> int:
        """Send the task's new status to the streams watching it; return how many took it."""
        streams = self._by_task.get(record.task_id)
        if not streams:
            return 0
        task = {k: v for k, v in record.detailed().items() if k != "resultType"}
        sent = 0
        for stream in list(streams):
            if record.owner and self._owner.get(stream) != record.owner:
                continue  # not this caller's task: its id alone does not open it
            params = {"_meta": {META_SUBSCRIPTION_ID: stream.subscription_id}, **task}
            sent += stream.channel.send(jsonio.dumps({"jsonrpc": "2.0", "method": TASKS_STATUS,
                                                      "params": params}))
        return sent
