"""Where a legacy session lives in the cluster, and how it moves when its process drains.

A session's id starts with the id of the process that created it, which serves it.  When
that process drains (SIGTERM, :meth:`Transport.close`), it does not take its sessions
with it: as each one goes idle (at once for most; when its requests in flight finish,
or at the end of ``shutdown_grace``) it writes the session to Redis and lets it go
(**hands it over**).  The record, ``{ns}:session:<id>``, is a hash: ``state`` (``free``
until a process takes it, then ``held``), ``owner`` (the process that last held it) and
``data``: the negotiated version, the client's info and capabilities, its log level, the
URIs it subscribed to (when the server tracks them), the caller it belongs to, and the
bookkeeping of its resumable streams' events (their frames are in Redis already, with a
:class:`~tornado_mcp.cluster.event_store.RedisEventStore`).

The next request for a free session, on any other process, **adopts** it: one Lua script
turns the record ``held`` by that process, which then serves the session under the same
id (its streams resume with ``Last-Event-ID``).  A process that holds adopted sessions
keeps their records alive and forgets those that ended.  Every other process forwards the
session's requests to whoever the record names, so the session never sees a 404 and its
client never initializes again.  While a session is moving (its process drains and has
not let it go yet, or cannot be confirmed) a request for it gets 503 with
``Retry-After: 1``.

:meth:`Sessions.find` decides, for a session this process does not hold, in this order:
forward to the live process that holds it (by its id, or by its record); if that process
cannot be reached, ask Redis whether it lives (503 while its heartbeat record exists, a
404 once it is gone: a crashed process's sessions are known lost once its record expires,
within ``cluster_heartbeat_ttl``); adopt a free record; 503 while the owner drains or may
be alive, or while Redis does not answer within
:data:`~tornado_mcp.cluster.members.LOOKUP_TIMEOUT`; else 404, once the record, read
again, is what it was (a session handed over or taken while this process looked for it
is a 503: the client's retry finds it where it went).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from ..introspection import ProcessInfo
from ..protocol import HEADER_RETRY_AFTER, INTERNAL_ERROR, INVALID_REQUEST, Refusal, jsonio
from ..server.session import Session
from ..transport.forward import FORWARDED_HEADER, Unreachable, forward
from ..transport.wire import Reply
from .event_store import RedisEventStore
from .link import DOWN, settle
from .members import LOOKUP_TIMEOUT, Unsure

if TYPE_CHECKING:
    from ..transport import Transport
    from ..transport.flow import RequestFlow
    from .core import Cluster

log = logging.getLogger("tornado_mcp.cluster")

#: What a client is asked to wait before retrying a session that is moving.
RETRY_AFTER_S = 1
UNCONFIRMED = ("Service unavailable: the process holding this session cannot be confirmed "
               "right now; retry")
MOVING = "Service unavailable: this session is moving to another process; retry"
#: How long a record lives without a session idle timeout, in seconds; a holder renews
#: the records of the sessions it adopted every quarter of their lifetime.
RECORD_TTL_S = 3600.0
#: The longest the writing of hand-over records may take at once (seconds).
HANDOVER_TIMEOUT = 2.0
#: How often a draining process looks for sessions that went idle (seconds).
DRAIN_POLL_S = 0.05

#: KEYS: the record; ARGV: the adopting process, the record's TTL in ms.  A free record
#: becomes held by the adopter: {1, data}; else {2, holder}; no record: {0}.
ADOPT = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {0} end
if state == 'free' then
  redis.call('HSET', KEYS[1], 'state', 'held', 'owner', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, redis.call('HGET', KEYS[1], 'data')}
end
return {2, redis.call('HGET', KEYS[1], 'owner')}
"""


def retry(message: str = UNCONFIRMED) -> Reply:
    return Reply(503, INTERNAL_ERROR, message, headers={HEADER_RETRY_AFTER: str(RETRY_AFTER_S)})


class Sessions:
    """One process's part in keeping legacy sessions alive across the cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.link = cluster.link
        self.members = cluster.members
        self.prefix = f"{cluster.namespace}:session:"
        self._adopt: Any = cluster.link.redis.register_script(ADOPT)
        #: Sessions this process adopted (their records name it; renewed while they live).
        self.adopted: set[str] = set()
        #: Adoptions under way: a request for the same session waits for its end.
        self._adopting: dict[str, asyncio.Future[Session | None]] = {}
        self.handed_over = 0  # sessions this process let go while it drained
        self.taken = 0  # sessions it adopted
        self.lost = 0  # sessions it could not hand over (Redis unreachable)

    @property
    def transport(self) -> Transport:
        return self.cluster.transport

    def key(self, session_id: str) -> str:
        return self.prefix + session_id

    def record_ttl_ms(self) -> int:
        idle = self.transport.options.session_idle_timeout
        return max(1000, int((idle if idle is not None else RECORD_TTL_S) * 1000))

    # -- a session this process does not hold -------------------------------------------------
    async def find(self, h: RequestFlow, session_id: str, body: bytes | None) -> Session | None:
        """The session, adopted here; or forward the request to the process holding it
        (raises :class:`~tornado_mcp.transport.forward.Forwarded`); or raise a 503 while
        it moves or cannot be confirmed; ``None`` when it is gone (404)."""
        owner, dot, _ = session_id.partition(".")
        if not dot or not looks_like_process_id(owner) or owner == self.cluster.id:
            return None
        relayed = FORWARDED_HEADER in h.request.headers
        if owner not in self.members.draining:
            info = await self._process(owner)
            if info is not None and not info.draining:
                return await self._via(h, info, session_id, body, relayed)
        return await self._by_record(h, session_id, owner, body, relayed)

    async def _process(self, process_id: str) -> ProcessInfo | None:
        """The live process ``process_id``, or ``None``; a 503 while Redis cannot say."""
        try:
            return await self.members.lookup(process_id)
        except Unsure:
            raise retry() from None

    async def _via(self, h: RequestFlow, info: ProcessInfo, session_id: str, body: bytes | None,
                   relayed: bool, second: bool = False) -> Session | None:
        """Forward to ``info``; when nothing answers there, ask Redis whether it lives
        (and, the first time, whether the session moved: at most two hops are tried)."""
        if relayed:
            raise retry(MOVING)  # the process that sent it here thought this one held it
        try:
            await forward(h, info, self.cluster.id, body)
        except Unreachable:
            state = await self.members.confirm(info.id)
            if state in ("alive", "unknown"):
                raise retry() from None  # alive by its record (restarting, frozen), or unsure
            if state == "dead":  # no heartbeat record, and nothing listens where it was
                self.members.forget(info.id)
                if second:
                    return None
            elif second:
                raise retry(MOVING) from None
            return await self._by_record(h, session_id, session_id.partition(".")[0], body,
                                         relayed)
        return None  # pragma: no cover - forward always raises

    async def _by_record(self, h: RequestFlow, session_id: str, owner: str, body: bytes | None,
                         relayed: bool) -> Session | None:
        """What the session's record says; before it ends in a 404, the record is read
        again: a session handed over or taken while this process looked for it (its
        holder drained and left meanwhile) is found on the client's retry, not lost."""
        found = await self._lookup(session_id)
        session = await self._from_record(h, session_id, owner, found, body, relayed)
        if session is None and (found is None or found[1] != self.cluster.id):
            again = await self._lookup(session_id)
            if again is not None and (found is None or again[:2] != found[:2]):
                raise retry(MOVING)
        return session

    async def _from_record(self, h: RequestFlow, session_id: str, owner: str,
                           found: tuple[str, str, bytes | None] | None, body: bytes | None,
                           relayed: bool) -> Session | None:
        if found is None:
            return await self._unrecorded(h, session_id, owner, body, relayed)
        state, holder, data = found
        if state == "free":
            return await self._adopt_it(h, session_id, data)
        if holder == self.cluster.id:  # adopted here: a moment ago, or it ended since
            adopting = self._adopting.get(session_id)
            if adopting is not None:
                return await self._joined(adopting)
            held = self.transport.sessions.get(session_id)
            if held is None:
                self._drop(session_id)
            return held
        if holder in self.members.draining:
            raise retry(MOVING)
        info = await self._process(holder)
        if info is not None:
            return await self._via(h, info, session_id, body, relayed, second=True)
        return await self._last_seen(h, holder, body, relayed)

    async def _unrecorded(self, h: RequestFlow, session_id: str, owner: str, body: bytes | None,
                          relayed: bool) -> Session | None:
        """No record: the owner still holds it (draining, not yet let go), or it ended."""
        if owner in self.members.draining or owner in self.members.others:
            raise retry(MOVING)
        return await self._last_seen(h, owner, body, relayed)

    async def _last_seen(self, h: RequestFlow, holder: str, body: bytes | None,
                         relayed: bool) -> Session | None:
        """A holder whose heartbeat expired: cut off from Redis (still serving where it
        was reached, so forwarded there), or dead (``None``: 404); 503 while unsure."""
        vanished = self.members.last_known(holder)
        if vanished is not None and vanished.url is not None and not relayed:
            try:
                await forward(h, vanished, self.cluster.id, body)
            except Unreachable:
                self.members.forget(holder)
                return None
        if self.members.uncertain(holder):
            raise retry()
        return None

    async def _lookup(self, session_id: str) -> tuple[str, str, bytes | None] | None:
        if not self.link.connected:
            raise retry()
        try:
            state, holder, data = await asyncio.wait_for(self.link.redis.hmget(
                self.key(session_id), ["state", "owner", "data"]), LOOKUP_TIMEOUT)
        except DOWN:
            raise retry() from None
        if state is None:
            return None
        return state.decode(), (holder or b"").decode(), data

    # -- adopting -----------------------------------------------------------------------------
    async def _adopt_it(self, h: RequestFlow, session_id: str, raw: bytes | None) -> Session | None:
        """Adopt the free session; a request for it that arrives meanwhile joins this."""
        if self.cluster.closed or self.transport.closing:
            raise retry(MOVING)
        adopting = self._adopting.get(session_id)
        if adopting is not None:
            return await self._joined(adopting)
        done: asyncio.Future[Session | None] = asyncio.get_running_loop().create_future()
        self._adopting[session_id] = done
        session = None
        try:
            session = await self._take(h, session_id, raw)
            return session
        finally:
            del self._adopting[session_id]
            done.set_result(session)

    @staticmethod
    async def _joined(adopting: asyncio.Future[Session | None]) -> Session:
        session = await asyncio.shield(adopting)
        if session is None:
            raise retry(MOVING)  # the adoption failed: the next try tells why
        return session  # the transport checks it is this caller's

    async def _take(self, h: RequestFlow, session_id: str, raw: bytes | None) -> Session | None:
        try:
            data = jsonio.loads(raw or b"")
            caller = data["caller"]
        except (ValueError, KeyError, TypeError):
            return None
        if caller != h.principal.caller:
            # Another caller's session is no session for this one: as when held here.
            raise Reply(404, INVALID_REQUEST, "Session not found",
                        refusal=Refusal.AUTH_SESSION_MISMATCH)
        try:
            answer = await asyncio.wait_for(self._adopt(
                keys=[self.key(session_id)], args=[self.cluster.id, self.record_ttl_ms()]),
                LOOKUP_TIMEOUT)
        except DOWN:
            raise retry() from None
        if int(answer[0]) != 1:
            raise retry(MOVING)  # another process took it a moment ago: it forwards next
        session = self.transport.open_session(
            str(data["v"]), {"clientInfo": data.get("ci"), "capabilities": data.get("cap")},
            h.principal, session_id=session_id)
        if session is None:  # this process is full: let another one take it
            await self._free(session_id)
            opts = self.transport.options
            raise Reply(503, INTERNAL_ERROR, "Service unavailable: maximum concurrent "
                                             f"sessions ({opts.max_sessions}) reached",
                        refusal=Refusal.MAX_SESSIONS,
                        headers={HEADER_RETRY_AFTER: str(RETRY_AFTER_S)})
        self._restore(session, data)
        self.adopted.add(session_id)
        self.taken += 1
        log.info("adopted session %s", session_id)
        return session

    def _restore(self, session: Session, data: dict[str, Any]) -> None:
        session.retained_values = int(data.get("rv", session.retained_values))
        session.log_level = data.get("ll")
        session.created_at = float(data.get("at", session.created_at))
        tracker = self.transport.server.subscriptions
        if tracker is not None:
            for uri in data.get("subs") or ():
                with contextlib.suppress(Exception):
                    tracker.subscribe(session, str(uri))
        events = data.get("events")
        store = self.transport.resumption.store
        if isinstance(events, dict) and isinstance(store, RedisEventStore):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                store.import_ledger(session.id, events)

    async def _free(self, session_id: str) -> None:
        with contextlib.suppress(*DOWN):
            await asyncio.wait_for(self.link.redis.hset(self.key(session_id), "state", "free"),
                                   LOOKUP_TIMEOUT)

    def _drop(self, session_id: str) -> None:
        self.adopted.discard(session_id)
        task = asyncio.ensure_future(self.link.redis.delete(self.key(session_id)))
        task.add_done_callback(_quiet)

    async def renew_loop(self) -> None:
        """Keep the records of the sessions adopted here alive while they live, and drop
        those of the ones that ended."""
        while not self.link.closing:
            await asyncio.sleep(self.record_ttl_ms() / 4000)
            await self.link.wait_up()
            sessions = self.transport.sessions
            ended = [s for s in self.adopted if sessions.get(s) is None]
            self.adopted.difference_update(ended)
            pipe = self.link.redis.pipeline(transaction=False)
            for session_id in ended:
                pipe.delete(self.key(session_id))
            ttl = self.record_ttl_ms()
            for session_id in self.adopted:
                pipe.pexpire(self.key(session_id), ttl)
            with contextlib.suppress(*DOWN):
                await pipe.execute()

    # -- handing over, while this process drains -------------------------------------------
    async def drain(self, deadline: float | None) -> None:
        """The engine's drain hook: announce the drain, then hand each session over as it
        goes idle (and every one left at ``deadline``)."""
        if self.cluster.closed:
            return  # left the cluster first: its sessions end with it
        await self.cluster.announce_drain()
        sessions = self.transport.sessions
        while len(sessions):
            last = deadline is not None and time.monotonic() >= deadline
            batch = [s for s in sessions if last or not s.in_flight]
            if batch and not await self._hand_over(batch):
                return  # Redis cannot take them: they end with this process
            if last:
                return
            await asyncio.sleep(DRAIN_POLL_S)

    async def _hand_over(self, batch: list[Session]) -> bool:
        store = self.transport.resumption.store
        shared = store if isinstance(store, RedisEventStore) else None
        if shared is not None:  # the frames a replay elsewhere will read are in Redis
            await settle(shared.flush(), HANDOVER_TIMEOUT)
        ttl = self.record_ttl_ms()
        pipe = self.link.redis.pipeline(transaction=False)
        for session in batch:
            data = _record(session)
            if shared is not None:
                data["events"] = shared.export_ledger(session.id)
            pipe.hset(self.key(session.id), mapping={
                "state": "free", "owner": self.cluster.id, "data": jsonio.dumps(data)})
            pipe.pexpire(self.key(session.id), ttl)
        try:
            if not self.link.connected:
                raise ConnectionError("Redis cannot be reached")
            await asyncio.wait_for(pipe.execute(), HANDOVER_TIMEOUT)
        except DOWN as exc:
            self.lost += len(self.transport.sessions)
            log.warning("could not hand %d legacy session(s) over (%s): they end with this "
                        "process", len(self.transport.sessions), exc)
            return False
        for session in batch:
            if shared is not None:
                shared.release(session.id)  # its events stay in Redis for the adopter
            self.adopted.discard(session.id)
            self.transport.sessions.remove(session)
        self.handed_over += len(batch)
        return True


def _record(session: Session) -> dict[str, Any]:
    return {"v": session.protocol_version, "ci": session.client_info,
            "cap": session.client_capabilities,
            "rv": session.retained_values - len(session.subscriptions),
            "ll": session.log_level, "subs": sorted(session.subscriptions),
            "caller": session.principal.caller, "at": session.created_at}


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def looks_like_process_id(text: str) -> bool:
    """A process id is 12 lowercase hex digits; anything else names no process, and is
    not asked of Redis."""
    return len(text) == 12 and all(c in "0123456789abcdef" for c in text)
