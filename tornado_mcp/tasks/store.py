"""Where tasks are kept: the :class:`TaskStore` interface and its in-process default.

A store keeps :class:`~tornado_mcp.tasks.record.TaskRecord` objects until their TTL
elapses, and never more of them than the transport's ``max_tasks`` allows:
:meth:`TaskStore.create` refuses a task past the bound instead of evicting one whose TTL
still runs (a task MUST stay readable for its whole TTL).  Results are bounded before they
reach the store (see ``max_task_result_bytes``), so what a store holds is bounded by
``max_tasks`` times that.

Every store also keeps a *local view*: the records of the tasks this process created, which
the transport's snapshot and the dashboard read without I/O.  The in-process
:class:`TaskStore` is nothing but that view;
:class:`~tornado_mcp.cluster.task_store.RedisTaskStore` shares records between processes,
so a task started on one can be polled, updated and cancelled from another.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .record import TaskRecord

#: Called with ``(task_id, message)`` when another process asks this one's running task to
#: stop (``{"cancel": True}``) or delivers its input (``{"inputResponses": {...}}``).
SignalHandler = Callable[[str, dict[str, Any]], None]


class TaskStore:
    """The in-process store, and the interface every store implements.

    Methods are coroutines so that a networked store can implement them; this one never
    waits.  Call them on the transport's IOLoop.
    """

    #: Shown on the dashboard.
    kind = "memory"

    def __init__(self) -> None:
        self._local: dict[str, TaskRecord] = {}
        self._expiry: list[tuple[float, str]] = []  # heap of (expires_at, task_id)
        self.on_signal: SignalHandler | None = None
        self.process_id = ""  # set by the manager: names the runner in records

    async def start(self) -> None:
        """Connect (networked stores)."""

    async def close(self) -> None:
        """Disconnect (networked stores)."""

    # -- the local view ---------------------------------------------------------------------
    def _sweep(self, now: float) -> list[TaskRecord]:
        """Forget local records whose TTL elapsed; return them."""
        gone: list[TaskRecord] = []
        while self._expiry and self._expiry[0][0] <= now:
            _, task_id = heapq.heappop(self._expiry)
            record = self._local.pop(task_id, None)
            if record is not None:
                gone.append(record)
        return gone

    def expired(self, now: float | None = None) -> list[TaskRecord]:
        """Sweep the local view now; return the records that expired (the manager stops
        any of them still running)."""
        return self._sweep(time.time() if now is None else now)

    def _keep_local(self, record: TaskRecord) -> None:
        if record.task_id not in self._local:
            heapq.heappush(self._expiry, (record.expires_at, record.task_id))
        self._local[record.task_id] = record

    def local(self) -> list[TaskRecord]:
        """The records of tasks this process created and still keeps."""
        return list(self._local.values())

    def stats(self) -> dict[str, Any]:
        """Counts by status and retained result bytes, of the local view."""
        by_status = Counter(r.status for r in self._local.values())
        return {"kept": len(self._local), "by_status": dict(by_status),
                "result_bytes": sum(r.result_bytes for r in self._local.values())}

    # -- the interface ----------------------------------------------------------------------
    async def create(self, record: TaskRecord, limit: int | None) -> bool:
        """Keep a new record; ``False`` (and nothing kept) when ``limit`` tasks are kept."""
        self._sweep(time.time())
        if limit is not None and len(self._local) >= limit:
            return False
        self._keep_local(record)
        return True

    async def get(self, task_id: str) -> TaskRecord | None:
        """The record, or ``None`` when unknown or expired."""
        record = self._local.get(task_id)
        if record is not None and record.expires_at <= time.time():
            self._sweep(time.time())
            return None
        return record

    async def save(self, record: TaskRecord) -> None:
        """Store a changed record (its expiry does not move)."""
        if record.task_id in self._local:
            self._local[record.task_id] = record

    async def owned(self, owner: str) -> list[TaskRecord]:
        """Every kept record of ``owner``, oldest first (2025-11-25 ``tasks/list``)."""
        now = time.time()
        return sorted((r for r in self._local.values()
                       if r.owner == owner and r.expires_at > now), key=lambda r: r.created_at)

    async def signal(self, record: TaskRecord, message: dict[str, Any]) -> bool:
        """Deliver ``message`` to the process running ``record``; ``False`` if it cannot
        be reached (in-process: the runner is always this process)."""
        return False
