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

A runner cut off from Redis keeps what it could not write: when Redis answers again it
writes each task's latest state (so a task that finished meanwhile reads ``completed``,
unless the others settled it ``failed`` first, once its heartbeat expired), and it writes
back every record of its own that Redis lost (a restart without persistence, a failover
to a replica behind): running tasks stay known and their results land.  A cancel reaching
another process is recorded in Redis (``{prefix}:cancel:<id>``) before it is
acknowledged: the runner stops the task when the signal reaches it, and if it does not
(cut off), the runner's next write of that task, or its return to Redis, turns the task
``cancelled`` and stops it: an acknowledged cancel is never followed by ``completed``.

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
from .link import DOWN, Link, settle
from .task_orphans import Orphans, TaskKeys

log = logging.getLogger("tornado_mcp.tasks")

DEFAULT_PREFIX = "tornado-mcp:tasks"
#: A store with a link of its own: its heartbeat record lives this long, renewed every
#: :data:`BEAT_S`.
PRESENCE_TTL_S = 5.0
BEAT_S = 1.0
#: How often the runners of unfinished tasks are checked for life.
SWEEP_S = 1.0
UNAVAILABLE = ("Service unavailable: the task store (Redis) cannot be reached; "
               "try again later")
#: The longest a task call waits for Redis (seconds): past it, the call is answered
#: "cannot be reached" instead of stalling on a frozen Redis.
REQUEST_TIMEOUT = 2.0
#: The bound on each of a store's tasks ending at close (seconds).
CLOSE_TIMEOUT = 2.0
CANCELLED_MESSAGE = "Cancelled by the client"

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
# KEYS: record, cancel flag, index, runners, runner's tasks; ARGV: record JSON, the same
# cancelled, its status, updated_at, ttl ms, expires ms, task id, runner, "rebuild" or not.
# Never over a terminal status; a record written while a cancel is recorded is written
# cancelled (2); a rebuild writes a record Redis lost, or one older than the runner's.
_PUT = """
local raw = redis.call('GET', KEYS[1])
local new, written = ARGV[1], 1
if redis.call('EXISTS', KEYS[2]) == 1 and ARGV[3] ~= 'failed' and ARGV[3] ~= 'cancelled' then
  new, written = ARGV[2], 2
end
if not raw then
  if ARGV[9] ~= 'rebuild' then return 0 end
  redis.call('SET', KEYS[1], new, 'PX', ARGV[5])
  redis.call('ZADD', KEYS[3], ARGV[6], ARGV[7])
  redis.call('SADD', KEYS[4], ARGV[8])
  redis.call('SADD', KEYS[5], ARGV[7])
  if redis.call('PTTL', KEYS[5]) < tonumber(ARGV[5]) then
    redis.call('PEXPIRE', KEYS[5], ARGV[5])
  end
  return written
end
local current = cjson.decode(raw)
local status = current['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
if ARGV[9] == 'rebuild' and tonumber(current['updated_at']) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('SET', KEYS[1], new, 'KEEPTTL')
return written
"""
# KEYS: the runner's heartbeat, cancel flag, record; ARGV: ttl ms.  Records the cancel of
# a task whose runner lives and which is not finished: 1; else 0.
_CANCEL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local raw = redis.call('GET', KEYS[3])
if not raw then return 0 end
local status = cjson.decode(raw)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
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
        self.keys = TaskKeys(self.prefix)
        #: Settles the tasks of runners that died.
        self.orphans = Orphans(self.link, self.keys)
        redis = self.link.redis
        self._create = redis.register_script(_CREATE)
        self._put = redis.register_script(_PUT)
        self._cancel = redis.register_script(_CANCEL)
        #: This process's task records Redis has not taken yet (it could not be reached):
        #: written when it answers again.
        self._unsaved: dict[str, TaskRecord] = {}
        self.link.on_up(self._resync)
        self._given_id = ""
        self._pubsub: Any = None
        self._tasks: list[asyncio.Task[None]] = []

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
        """Stop following signals and sweeping; each step bounded (a process always
        exits, whatever redis-py does with a cancelled command)."""
        if self._owns_link:
            self.link.closing = True
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=CLOSE_TIMEOUT)
        if self._pubsub is not None:
            await settle(self._pubsub.aclose(), CLOSE_TIMEOUT)
        if self._owns_link:
            await settle(self.link.redis.delete(self.link.proc_key(self.process_id)),
                         CLOSE_TIMEOUT)
            await settle(self.link.aclose(), CLOSE_TIMEOUT)

    # -- Redis, through the link ------------------------------------------------------------
    async def _io(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run a command for a client's request: a clear error while Redis is down."""
        if not self.link.connected:
            raise MCPError(INTERNAL_ERROR, UNAVAILABLE)
        try:
            return await asyncio.wait_for(fn(), REQUEST_TIMEOUT)
        except DOWN as exc:
            self.link.lost(exc)
            raise MCPError(INTERNAL_ERROR, UNAVAILABLE) from None

    async def _beat(self) -> None:
        await self.link.redis.set(self.link.proc_key(self.process_id), b"{}",
                                  px=int(PRESENCE_TTL_S * 1000))

    async def _presence(self) -> None:
        while not self.link.closing:
            await asyncio.sleep(BEAT_S)
            await self.link.wait_up()
            try:
                await self._beat()
            except DOWN as exc:
                self.link.lost(exc)

    async def _read(self) -> None:
        while not self.link.closing:
            await self.link.wait_up()
            pubsub = self._pubsub = self.link.redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.keys.channel)
                async for message in pubsub.listen():
                    if self.link.closing:
                        break
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
        while not self.link.closing:
            await asyncio.sleep(SWEEP_S)
            await self.link.wait_up()
            try:
                if self._unsaved:
                    await self._write_unsaved()
                await self.sweep()
            except DOWN as exc:
                self.link.lost(exc)

    # -- after an outage ----------------------------------------------------------------------
    async def _resync(self) -> None:
        """Redis answers again: write back this process's records it lost, the states it
        could not take meanwhile, and stop the tasks cancelled meanwhile."""
        now = time.time()
        own = [r for r in self._local.values()
               if r.runner == self.process_id and r.expires_at > now]
        for record in own:
            self._unsaved.pop(record.task_id, None)
            await self._write(record, rebuild=True)
        await self._write_unsaved()
        running = [r for r in own if not r.terminal]
        if running:
            pipe = self.link.redis.pipeline(transaction=False)
            for record in running:
                pipe.exists(self.keys.cancel(record.task_id))
            for record, flagged in zip(running, await pipe.execute(), strict=True):
                if flagged and self.on_signal is not None:
                    self.on_signal(record.task_id, {"cancel": True})

    async def _write_unsaved(self) -> None:
        for task_id in list(self._unsaved):
            record = self._unsaved.pop(task_id)
            await self._write(record, rebuild=False)

    async def _write(self, record: TaskRecord, rebuild: bool) -> int:
        """One record through the put script; a cancel recorded meanwhile stops its run."""
        now = time.time()
        cancelled = TaskRecord.from_json(record.to_json())
        cancelled.status, cancelled.status_message = "cancelled", CANCELLED_MESSAGE
        cancelled.result = cancelled.error = None
        cancelled.input_requests, cancelled.result_bytes = {}, 0
        written = int(await self._put(
            keys=[self.keys.record(record.task_id), self.keys.cancel(record.task_id),
                  self.keys.index, self.keys.runners, self.keys.runner_tasks(record.runner)],
            args=[jsonio.dumps(record.to_json()), jsonio.dumps(cancelled.to_json()),
                  record.status, repr(record.updated_at),
                  max(1, int((record.expires_at - now) * 1000)),
                  int(record.expires_at * 1000), record.task_id, record.runner,
                  "rebuild" if rebuild else "save"]))
        if written == 2 and self.on_signal is not None:  # cancelled while it could not tell
            self.on_signal(record.task_id, {"cancel": True})
        return written

    async def sweep(self) -> int:
        """Settle ``failed`` the unfinished tasks of every runner whose heartbeat record
        expired; return how many this call settled (:mod:`.task_orphans`)."""
        return await self.orphans.sweep(self.process_id)

    # -- the interface ----------------------------------------------------------------------
    async def create(self, record: TaskRecord, limit: int | None) -> bool:
        now = time.time()
        self._sweep(now)
        if record.runner in ("", self._given_id):  # the manager's name for this process
            record.runner = self.process_id
        ttl_ms = max(1, int(record.ttl * 1000))
        created = await self._io(lambda: self._create(
            keys=[self.keys.index, self.keys.record(record.task_id), self.keys.runners,
                  self.keys.runner_tasks(record.runner)],
            args=[int(now * 1000), -1 if limit is None else limit,
                  int(record.expires_at * 1000), ttl_ms, record.task_id,
                  jsonio.dumps(record.to_json()), record.runner]))
        if not created:
            return False
        self._keep_local(record)
        return True

    async def get(self, task_id: str) -> TaskRecord | None:
        raw = await self._io(lambda: self.link.redis.get(self.keys.record(task_id)))
        if raw is None:
            return None
        try:
            return TaskRecord.from_json(jsonio.loads(raw))
        except (ValueError, TypeError):
            return None

    async def save(self, record: TaskRecord) -> None:
        if record.task_id in self._local:
            self._local[record.task_id] = record
        try:
            await self._io(lambda: self._write(record, rebuild=False))
            self._unsaved.pop(record.task_id, None)
        except MCPError:
            if record.runner == self.process_id:  # its own: written when Redis is back
                self._unsaved[record.task_id] = record
            raise

    async def owned(self, owner: str) -> list[TaskRecord]:
        redis = self.link.redis
        now_ms = int(time.time() * 1000)
        ids = await self._io(lambda: redis.zrangebyscore(self.keys.index, now_ms, "+inf"))
        if not ids:
            return []
        raws = await self._io(lambda: redis.mget([self.keys.record(i.decode()) for i in ids]))
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
        if message.get("cancel") is True:  # recorded first: the runner sees it, cut off too
            recorded = await self._io(lambda: self._cancel(
                keys=[self.link.proc_key(record.runner), self.keys.cancel(record.task_id),
                      self.keys.record(record.task_id)],
                args=[max(1, int((record.expires_at - time.time()) * 1000))]))
            if not recorded:
                return False
        elif not await self._io(lambda: redis.exists(self.link.proc_key(record.runner))):
            return False
        await self._io(lambda: redis.publish(self.keys.channel, jsonio.dumps(
            {"id": record.task_id, "runner": record.runner, "m": message})))
        return True
