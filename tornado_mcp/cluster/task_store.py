"""Tasks kept in Redis, so that every process serving one MCP server sees every task.

::

    transport = Transport(server, task_store=RedisTaskStore("redis://10.0.0.5:6379/0"))

In a cluster, build it on the cluster's :class:`~tornado_mcp.cluster.link.Link` instead
(``RedisTaskStore(link=link)``, then ``Cluster(transport, link=link)``): one Redis client
for the process, and one liveness signal, the cluster's heartbeat records.

A task's work runs in the process that created it (its *runner*, named by the link's
process id); its record lives in Redis (a JSON string that expires with the task's TTL),
so ``tasks/get`` is answered by any process.  ``tasks/update`` and ``tasks/cancel``
reaching another process are published on a channel, and the runner acts on them.  A
runner is alive while its heartbeat record ``{ns}:proc:{id}`` exists (the cluster's
:mod:`~tornado_mcp.cluster.members` writes it; a store with a link of its own writes a
bare one).  A runner that is gone cannot act, so:

* a cancel for its task is settled ``cancelled`` where it arrived;
* every second each store looks at the runners that hold unfinished tasks
  (``{prefix}:runners``), and settles the tasks of one whose record expired ``failed``
  ("its process ended"), each exactly once across the cluster (a compare-and-set script);
* the first terminal status a record gets is its last: a runner cut off from Redis past
  its heartbeat finds its tasks failed, and its later writes to them are refused.

``max_tasks`` bounds the tasks kept by all the processes together: creation is one Lua
script that drops expired entries from the index, counts, and stores, atomically.  While
Redis cannot be reached a task call answers a JSON-RPC error
(``Service unavailable: the task store (Redis) cannot be reached``), and the outage is
logged once.  Requires the ``redis`` extra (redis-py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..protocol import INTERNAL_ERROR, jsonio
from ..protocol.errors import MCPError
from ..tasks.record import TaskRecord
from ..tasks.store import TaskStore
from .link import DOWN, Link

log = logging.getLogger("tornado_mcp.tasks")

DEFAULT_PREFIX = "tornado-mcp:tasks"
#: A store with a link of its own: its heartbeat record lives this long, renewed every
#: :data:`BEAT_S`.
PRESENCE_TTL_S = 5.0
BEAT_S = 1.0
#: How often the runners of unfinished tasks are checked for life.
SWEEP_S = 1.0
#: What a task whose runner died is settled with.
RUNNER_GONE_MESSAGE = "Task failed: the process running it ended"
UNAVAILABLE = ("Service unavailable: the task store (Redis) cannot be reached; "
               "try again later")
TERMINAL = ("completed", "failed", "cancelled")

# KEYS: index, record, runners, runner's tasks; ARGV: now ms, limit, expires ms, ttl ms,
# task id, record JSON, runner.
_CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if tonumber(ARGV[2]) >= 0 and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[5])
redis.call('SET', KEYS[2], ARGV[6], 'PX', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[7])
redis.call('SADD', KEYS[4], ARGV[5])
if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[4]) then
  redis.call('PEXPIRE', KEYS[4], ARGV[4])
end
return 1
"""
# KEYS: record; ARGV: record JSON.  Never over a terminal status.
_SAVE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local status = cjson.decode(raw)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1
"""
# KEYS: record, the runner's heartbeat; ARGV: the record as read, the settled record.
_SETTLE = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
return 1
"""

T = TypeVar("T")


class RedisTaskStore(TaskStore):
    """A :class:`~tornado_mcp.tasks.store.TaskStore` shared through Redis; see the module
    docstring.  Pass ``url`` for a store with a connection of its own, or ``link`` (the
    cluster's) to share that one."""

    kind = "redis"

    def __init__(self, url: str = "redis://127.0.0.1:6379/0",
                 prefix: str | None = None, *, link: Link | None = None) -> None:
        super().__init__()
        self._owns_link = link is None
        self.link = link if link is not None else Link(url)
        self.url = self.link.url
        self.prefix = prefix or self.link.key("tasks")
        redis = self.link.redis
        self._create = redis.register_script(_CREATE)
        self._save = redis.register_script(_SAVE)
        self._settle = redis.register_script(_SETTLE)
        self._given_id = ""
        self._pubsub: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        #: Tasks this process settled ``failed`` because their runner died.
        self.orphans_settled = 0

    def _key(self, task_id: str) -> str:
        return f"{self.prefix}:task:{task_id}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:index"

    @property
    def _channel(self) -> str:
        return f"{self.prefix}:signals"

    @property
    def _runners(self) -> str:
        return f"{self.prefix}:runners"

    def _runner_tasks(self, runner: str) -> str:
        return f"{self.prefix}:by-runner:{runner}"

    async def start(self) -> None:
        """Take the link's process id; with a link of its own, connect (raises if Redis
        cannot be reached) and keep a heartbeat record; follow signals, sweep orphans."""
        self._given_id, self.process_id = self.process_id, self.link.process_id
        if self._owns_link:
            await self.link.connect()
            await self._beat()
            self._tasks += [asyncio.create_task(self.link.supervise()),
                            asyncio.create_task(self._presence())]
        self._tasks += [asyncio.create_task(self._read()),
                        asyncio.create_task(self._sweep_loop())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._pubsub is not None:
            with contextlib.suppress(Exception):
                await self._pubsub.aclose()
        if self._owns_link:
            with contextlib.suppress(Exception):
                await self.link.redis.delete(self.link.proc_key(self.process_id))
            with contextlib.suppress(Exception):
                await self.link.aclose()

    # -- Redis, through the link ------------------------------------------------------------
    async def _io(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run a command for a client's request: a clear error while Redis is down."""
        if not self.link.connected:
            raise MCPError(INTERNAL_ERROR, UNAVAILABLE)
        try:
            return await fn()
        except DOWN as exc:
            self.link.lost(exc)
            raise MCPError(INTERNAL_ERROR, UNAVAILABLE) from None

    async def _beat(self) -> None:
        await self.link.redis.set(self.link.proc_key(self.process_id), b"{}",
                                  px=int(PRESENCE_TTL_S * 1000))

    async def _presence(self) -> None:
        while True:
            await asyncio.sleep(BEAT_S)
            await self.link.wait_up()
            try:
                await self._beat()
            except DOWN as exc:
                self.link.lost(exc)

    async def _read(self) -> None:
        while True:
            await self.link.wait_up()
            pubsub = self._pubsub = self.link.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self._channel)
                async for message in pubsub.listen():
                    self._deliver(message.get("data"))
            except DOWN as exc:
                self.link.lost(exc)
            finally:
                self._pubsub = None
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

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

    # -- orphans ----------------------------------------------------------------------------
    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_S)
            await self.link.wait_up()
            try:
                await self.sweep()
            except DOWN as exc:
                self.link.lost(exc)

    async def sweep(self) -> int:
        """Settle ``failed`` the unfinished tasks of every runner whose heartbeat record
        expired; return how many this call settled."""
        redis = self.link.redis
        runners = sorted(r.decode() for r in await redis.smembers(self._runners))
        runners = [r for r in runners if r != self.process_id]
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
        self.orphans_settled += settled
        return settled

    async def _settle_runner(self, runner: str) -> int:
        redis = self.link.redis
        ids = [i.decode() for i in await redis.smembers(self._runner_tasks(runner))]
        raws = await redis.mget([self._key(i) for i in ids]) if ids else []
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
                keys=[self._key(record.task_id), self.link.proc_key(runner)],
                args=[raw, jsonio.dumps(record.to_json())]))
        if not await redis.exists(self.link.proc_key(runner)):
            pipe = redis.pipeline(transaction=False)
            pipe.srem(self._runners, runner)
            pipe.delete(self._runner_tasks(runner))
            await pipe.execute()
        if settled:
            log.warning("settled %d task(s) of process %s, which ended, as failed",
                        settled, runner)
        return settled

    # -- the interface ----------------------------------------------------------------------
    async def create(self, record: TaskRecord, limit: int | None) -> bool:
        now = time.time()
        self._sweep(now)
        if record.runner in ("", self._given_id):  # the manager's name for this process
            record.runner = self.process_id
        ttl_ms = max(1, int(record.ttl * 1000))
        created = await self._io(lambda: self._create(
            keys=[self._index, self._key(record.task_id), self._runners,
                  self._runner_tasks(record.runner)],
            args=[int(now * 1000), -1 if limit is None else limit,
                  int(record.expires_at * 1000), ttl_ms, record.task_id,
                  jsonio.dumps(record.to_json()), record.runner]))
        if not created:
            return False
        self._keep_local(record)
        return True

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._io(lambda: self.link.redis.get(self._key(task_id)))
        if raw is None:
            return None
        try:
            return TaskRecord.from_json(jsonio.loads(raw))
        except (ValueError, TypeError):
            return None

    async def save(self, record: TaskRecord) -> None:
        if record.task_id in self._local:
            self._local[record.task_id] = record
        await self._io(lambda: self._save(keys=[self._key(record.task_id)],
                                          args=[jsonio.dumps(record.to_json())]))

    async def owned(self, owner: str) -> list[TaskRecord]:
        redis = self.link.redis
        now_ms = int(time.time() * 1000)
        ids = await self._io(lambda: redis.zrangebyscore(self._index, now_ms, "+inf"))
        if not ids:
            return []
        raws = await self._io(lambda: redis.mget([self._key(i.decode()) for i in ids]))
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
        redis = self.link.redis
        if not await self._io(lambda: redis.exists(self.link.proc_key(record.runner))):
            return False
        await self._io(lambda: redis.publish(self._channel, jsonio.dumps(
            {"id": record.task_id, "runner": record.runner, "m": message})))
        return True
