"""Where a :class:`~tornado_mcp.cluster.task_store.RedisTaskStore` keeps tasks in Redis, and
the settling of the tasks whose runner died.

Every second each store looks at the runners that hold unfinished tasks
(``{prefix}:runners``) and settles the tasks of every runner whose heartbeat record
expired ``failed`` ("its process ended"), each exactly once across the cluster: a
compare-and-set script writes the settled record only if the runner is still gone and the
record is still the one read.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..protocol import INTERNAL_ERROR, jsonio
from ..tasks.record import TaskRecord
from .link import Link

log = logging.getLogger("tornado_mcp.tasks")

#: What a task whose runner died is settled with.
RUNNER_GONE_MESSAGE = "Task failed: the process running it ended"
TERMINAL = ("completed", "failed", "cancelled")

# KEYS: record, the runner's heartbeat; ARGV: the record as read, the settled record.
_SETTLE = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
"""


class TaskKeys:
    """The Redis keys of one task store, under ``prefix``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        #: Every kept task id, scored by its expiry (milliseconds).
        self.index = f"{prefix}:index"
        #: Where ``tasks/cancel`` and ``tasks/update`` reach a runner.
        self.channel = f"{prefix}:signals"
        #: The runners that hold unfinished tasks.
        self.runners = f"{prefix}:runners"

    def record(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    def runner_tasks(self, runner: str) -> str:
        return f"{self.prefix}:by-runner:{runner}"

    def cancel(self, task_id: str) -> str:
        """Set while a cancel of the task waits for its runner to act on it."""
        return f"{self.prefix}:cancel:{task_id}"


class Orphans:
    """Settles the unfinished tasks of runners that died (see the module docstring)."""

    def __init__(self, link: Link, keys: TaskKeys) -> None:
        self.link = link
        self.keys = keys
        self._settle: Any = link.redis.register_script(_SETTLE)
        #: Tasks this process settled ``failed`` because their runner died.
        self.settled = 0

    async def sweep(self, own_id: str) -> int:
        """Settle ``failed`` the unfinished tasks of every runner but ``own_id`` whose
        heartbeat record expired; return how many this call settled."""
        redis = self.link.redis
        runners = sorted(r.decode() for r in await redis.smembers(self.keys.runners))
        runners = [r for r in runners if r != own_id]
        if not runners:
            return 0
        pipe = redis.pipeline(transaction=False)
        for runner in runners:
            pipe.exists(self.link.proc_key(runner))
        alive = await pipe.execute()
        settled = 0
        for runner, live in zip(runners, alive, strict=True):
            if not live:
                settled += await self._settle_runner(runner)
        self.settled += settled
        return settled

    async def _settle_runner(self, runner: str) -> int:
        redis = self.link.redis
        ids = [i.decode() for i in await redis.smembers(self.keys.runner_tasks(runner))]
        raws = await redis.mget([self.keys.record(i) for i in ids]) if ids else []
        settled = 0
        for raw in raws:
            if raw is None:
                continue
            try:
                record = TaskRecord.from_json(jsonio.loads(raw))
            except (ValueError, TypeError):
                continue
            if record.status in TERMINAL:
                continue
            record.status, record.status_message = "failed", RUNNER_GONE_MESSAGE
            record.error = {"code": INTERNAL_ERROR, "message": RUNNER_GONE_MESSAGE}
            record.input_requests = {}
            record.result_bytes = len(jsonio.dumps(record.error))
            record.updated_at = time.time()
            settled += int(await self._settle(
                keys=[self.keys.record(record.task_id), self.link.proc_key(runner)],
                args=[raw, jsonio.dumps(record.to_json())]))
        if not await redis.exists(self.link.proc_key(runner)):
            pipe = redis.pipeline(transaction=False)
            pipe.srem(self.keys.runners, runner)
            pipe.delete(self.keys.runner_tasks(runner))
            await pipe.execute()
        if settled:
            log.warning("settled %d task(s) of process %s, which ended, as failed",
                        settled, runner)
        return settled
