"""Tasks kept in Redis, so that every process serving one MCP server sees every task.

::

    transport = Transport(server, task_store=RedisTaskStore("redis://10.0.0.5:6379/0"))

A task's work runs in the process that created it; its record lives in Redis (a JSON
string that expires with the task's TTL), so ``tasks/get`` is answered by any process.
``tasks/update`` and ``tasks/cancel`` reaching another process are published on a
channel, and the runner acts on them; a runner that is gone (its heartbeat key expired)
cannot, so the record is settled ``cancelled`` where the cancel arrived.

``max_tasks`` bounds the tasks kept by all the processes together: creation is one Lua
script that drops expired entries from the index, counts, and stores, atomically.
Requires ``pip install 'tornado-mcp[redis]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from ..protocol import jsonio
from ..tasks.record import TaskRecord
from ..tasks.store import TaskStore

log = logging.getLogger("tornado_mcp.tasks")

DEFAULT_PREFIX = "tornado-mcp:tasks"
#: A runner's heartbeat key lives this long; it is renewed three times as often.
HEARTBEAT_S = 10.0

_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if tonumber(ARGV[2]) >= 0 and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[5])
redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[4])
return 1
"""


class RedisTaskStore(TaskStore):
    """A :class:`~tornado_mcp.tasks.store.TaskStore` shared through Redis; see the module
    docstring."""

    kind = "redis"

    def __init__(self, url: str = "redis://127.0.0.1:6379/0",
                 prefix: str = DEFAULT_PREFIX) -> None:
        super().__init__()
        self.url = url
        self.prefix = prefix
        self._redis: Any = None
        self._pubsub: Any = None
        self._create: Any = None
        self._tasks: list[asyncio.Task[None]] = []

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:index"

    @property
    def _channel(self) -> str:
        return f"{self.prefix}:signals"

    def _runner_key(self, runner: str) -> str:
        return f"{self.prefix}:runner:{runner}"

    async def start(self) -> None:
        """Connect, subscribe to signals, start the heartbeat.  Raises if Redis cannot be
        reached."""
        import redis.asyncio as aioredis

        self._redis = aioredis.from_url(self.url)
        self._create = self._redis.register_script(_CREATE)
        self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        await self._pubsub.subscribe(self._channel)
        await self._beat()
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._heart())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._redis is not None:
            with contextlib.suppress(Exception):
                await self._redis.delete(self._runner_key(self.process_id))
            if self._pubsub is not None:
                with contextlib.suppress(Exception):
                    await self._pubsub.aclose()
            with contextlib.suppress(Exception):
                await self._redis.aclose()

    async def _beat(self) -> None:
        await self._redis.set(self._runner_key(self.process_id), b"1",
                              px=int(HEARTBEAT_S * 1000))

    async def _heart(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S / 3)
            try:
                await self._beat()
            except Exception:
                log.exception("task store heartbeat failed")

    async def _read(self) -> None:
        while True:
            try:
                async for message in self._pubsub.listen():
                    self._deliver(message.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("task signal subscription failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                with contextlib.suppress(Exception):
                    await self._pubsub.subscribe(self._channel)

    def _deliver(self, data: Any) -> None:
        try:
            message = jsonio.loads(data if isinstance(data, bytes) else str(data).encode())
        except (ValueError, TypeError):
            return
        if not isinstance(message, dict) or message.get("runner") != self.process_id:
            return
        task_id, body = message.get("id"), message.get("m")
        if isinstance(task_id, str) and isinstance(body, dict) and self.on_signal is not None:
            self.on_signal(task_id, body)

    # -- the interface ----------------------------------------------------------------------
    async def create(self, record: TaskRecord, limit: int | None) -> bool:
        now = time.time()
        self._sweep(now)
        ttl_ms = max(1, int(record.ttl * 1000))
        created = await self._create(
            keys=[self._index, self._key(record.task_id)],
            args=[int(now * 1000), -1 if limit is None else limit,
                  int(record.expires_at * 1000), ttl_ms, record.task_id,
                  jsonio.dumps(record.to_json())])
        if not created:
            return False
        self._keep_local(record)
        return True

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._redis.get(self._key(task_id))
        if raw is None:
            return None
        try:
            return TaskRecord.from_json(jsonio.loads(raw))
        except (ValueError, TypeError):
            return None

    async def save(self, record: TaskRecord) -> None:
        if record.task_id in self._local:
            self._local[record.task_id] = record
        await self._redis.set(self._key(record.task_id), jsonio.dumps(record.to_json()),
                              xx=True, keepttl=True)

    async def owned(self, owner: str) -> list[TaskRecord]:
        now_ms = int(time.time() * 1000)
        ids = await self._redis.zrangebyscore(self._index, now_ms, "+inf")
        if not ids:
            return []
        raws = await self._redis.mget([self._key(i.decode()) for i in ids])
        records = []
        for raw in raws:
            if raw is None:
                continue
            with contextlib.suppress(ValueError, TypeError):
                record = TaskRecord.from_json(jsonio.loads(raw))
                if record.owner == owner:
                    records.append(record)
        return sorted(records, key=lambda r: r.created_at)

    async def signal(self, record: TaskRecord, message: dict[str, Any]) -> bool:
        if not await self._redis.exists(self._runner_key(record.runner)):
            return False
        await self._redis.publish(self._channel, jsonio.dumps(
            {"id": record.task_id, "runner": record.runner, "m": message}))
        return True
