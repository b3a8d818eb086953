"""A task as the store keeps it, and as each era's wire shows it.

A :class:`TaskRecord` is plain data (it round-trips through JSON, which is how the Redis
store keeps it).  The same record is rendered two ways:

* the tasks extension (2026-07-28, SEP-2663): flat, ``ttlMs`` / ``pollIntervalMs``,
  ``resultType`` ``"task"`` when a call creates it and ``"complete"`` on ``tasks/get``,
  the result, error or pending input requests inlined by status;
* the 2025-11-25 experimental tasks: ``ttl`` / ``pollInterval``, the creating call answered
  ``{"task": {...}}``, the result fetched separately with ``tasks/result``.
"""

from __future__ import annotations

import enum
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

#: How often clients are asked to poll, in milliseconds.
POLL_INTERVAL_MS = 500


class Status(enum.StrEnum):
    """A task's status, by its protocol name; ``terminal`` for completed, failed and
    cancelled."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (Status.COMPLETED, Status.FAILED, Status.CANCELLED)


def iso(ts: float) -> str:
    """``ts`` (seconds since the epoch) as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


@dataclass
class TaskRecord:
    """One task.  ``owner`` scopes who may see it (see
    :func:`~tornado_mcp.tasks.methods.owner_of`); ``era`` is the era of the call that
    created it (``"modern"`` or ``"legacy"``)."""

    task_id: str
    owner: str
    era: str
    tool: str
    ttl: float  # seconds from creation
    created_at: float = field(default_factory=time.time)
    updated_at: float = 0.0
    status: str = Status.WORKING.value
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    #: Outstanding input requests, by key (status ``input_required``).
    input_requests: dict[str, Any] = field(default_factory=dict)
    #: The process running the work (the Redis store routes cancel and input to it).
    runner: str = ""
    #: JSON bytes of ``result`` or ``error``: what the record retains beyond its fields.
    result_bytes: int = 0

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = self.created_at

    @property
    def expires_at(self) -> float:
        return self.created_at + self.ttl

    @property
    def terminal(self) -> bool:
        return Status(self.status).terminal

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskRecord:
        return cls(**data)

    # -- the tasks extension (2026-07-28) -----------------------------------------------
    def _base(self, ttl_key: str, poll_key: str, ttl_scale: float) -> dict[str, Any]:
        task: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        task["createdAt"] = iso(self.created_at)
        task["lastUpdatedAt"] = iso(self.updated_at)
        task[ttl_key] = max(1, int(self.ttl * ttl_scale))
        task[poll_key] = POLL_INTERVAL_MS
        return task

    def created(self) -> dict[str, Any]:
        """The ``CreateTaskResult`` answering the call that created the task.

        It carries an empty ``content`` too: the 2026-07-28 core schema reads every
        ``tools/call`` result as a ``CallToolResult``, which requires ``content``, so a
        validator that does not know the extension still accepts the message.
        """
        return {"resultType": "task", **self._base("ttlMs", "pollIntervalMs", 1000),
                "content": []}

    def detailed(self) -> dict[str, Any]:
        """``tasks/get`` (and the status notification): the task with what its status
        carries inlined."""
        task = {"resultType": "complete", **self._base("ttlMs", "pollIntervalMs", 1000)}
        if self.status == Status.COMPLETED and self.result is not None:
            task["result"] = self.result
        elif self.status == Status.FAILED and self.error is not None:
            task["error"] = self.error
        elif self.status == Status.INPUT_REQUIRED:
            task["inputRequests"] = dict(self.input_requests)
        return task

    # -- 2025-11-25 experimental tasks ----------------------------------------------------
    def legacy_task(self) -> dict[str, Any]:
        """The 2025-11-25 ``Task`` object (``tasks/get``, ``tasks/list``, notifications)."""
        return self._base("ttl", "pollInterval", 1000)
