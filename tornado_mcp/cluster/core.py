"""The :class:`Cluster`: one process's membership in a group that behaves like one server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..introspection import ClusterSnapshot, ProcessInfo
from ..protocol import jsonio
from .caps import Caps
from .dpop_replay import attach as attach_dpop
from .feed import Feed, notification_fields
from .link import DOWN, Link, log, settle
from .members import Members
from .rate_limit import SharedRateLimit
from .rate_limit import attach as attach_governance
from .sessions import Sessions, looks_like_process_id
from .shared import SharedConfig, parse_version

if TYPE_CHECKING:
    from ..auth.dpop import DPoP
    from ..server.session import Session
    from ..transport import Transport
    from ..transport.flow import RequestFlow

#: What a client is asked to wait before retrying a session whose owner is uncertain.
RETRY_AFTER_S = 1.0
TOTALS = ("sessions", "get_streams", "listen_streams", "retained_bytes", "retained_values")
#: The bound on each step of leaving: the tasks' ends, the leaving write, the disconnect
#: (seconds).  A process leaves within a few of them, whatever Redis or redis-py does.
CLOSE_TIMEOUT = 2.0


class Cluster:
    """Joins ``transport`` (and its :class:`~tornado_mcp.Server`) to the processes sharing
    the Redis at ``url``::

        cluster = Cluster(transport, "redis://10.0.0.5:6379/0",
                          advertise_url="http://10.0.0.7:8000/mcp")
        await cluster.start()      # raises if Redis cannot be reached now
        ...
        await cluster.close()

    Once started, ``transport.cluster`` is this object: notifications reach every process
    exactly once (:mod:`~tornado_mcp.cluster.feed`), live limits and the requestState key
    are shared (:mod:`~tornado_mcp.cluster.shared`), every live process is listed
    (:mod:`~tornado_mcp.cluster.members`) and a legacy session's requests that reach the
    wrong process are forwarded to ``advertise_url`` of the process that holds it.
    :meth:`snapshot` is the public view the dashboard reads.
    """

    def __init__(self, transport: Transport, url: str | None = None, *,
                 namespace: str = "tornado-mcp", advertise_url: str | None = None,
                 link: Link | None = None) -> None:
        if link is None:
            if url is None:
                raise TypeError("Cluster needs a Redis url= or a link=")
            link = Link(url, namespace=namespace)
        self.transport = transport
        self.server = transport.server
        #: The one connection of this process to Redis, shared with its Redis stores.
        self.link = link
        self.url = link.url
        self.namespace = link.namespace
        self.advertise_url = advertise_url
        self.id = link.process_id
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.started_at = time.time()
        self.closed = False
        #: This process began to drain: its legacy sessions are being handed over.
        self.draining = False
        #: Every legacy session id this process mints starts with it: its owner's id.
        self.session_prefix = self.id + "."
        link.on_up(self._resync)
        options = transport.options
        ns = self.namespace
        self.feed = Feed(link, self.id, ns, options, deliver=self.server.deliver_local,
                         on_refusal=transport.count_refusal)
        self.members = Members(link, self.id, ns, options.cluster_heartbeat_ttl,
                               self._describe, advertise_url)
        self.shared = SharedConfig(link, self.id, ns, options, self.server, self._push,
                                   self.host, self.pid)
        self.feed.on_limits = self.shared.on_remote
        self.feed.on_counts = self.members.announced
        self.feed.on_left = self.members.left
        self.feed.on_drain = self.members.drains
        self.feed.on_write = self._write_extra
        self.members.on_replaced = self._replaced
        self.caps = Caps(link, self.id, ns, self._held, self._cap)
        self.members.on_leave = self.caps.forget
        #: Where legacy sessions live, and their hand-over (:mod:`~tornado_mcp.cluster.sessions`).
        self.sessions = Sessions(self)
        #: The shared rate limit and the DPoP replay check, once started (their fallbacks
        #: are in :meth:`snapshot`).
        self.rate_limit: SharedRateLimit | None = None
        self.dpop: DPoP | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._counts_due = False

    def _replaced(self, gone: str) -> None:
        """A dead process had this one's URL: the others forget it at once."""
        self.feed.push({"k": "g", "g": gone})

    def _push(self, fields: dict[str, Any]) -> None:
        self.on_loop(lambda: self.feed.push(fields))

    def _write_extra(self, pipe: Any, fields: dict[str, Any]) -> None:
        if fields.get("k") == "l":  # a limit change: the versioned write of its values
            changes = fields["c"]
            self.shared.write(pipe, jsonio.loads(changes if isinstance(changes, bytes)
                                                 else changes.encode()),
                              parse_version(fields["v"]))

    def _describe(self) -> ProcessInfo:
        snap = self.transport.snapshot(sessions=False, streams=False)
        t = snap.totals
        return ProcessInfo(id=self.id, host=self.host, pid=self.pid, url=self.advertise_url,
                           started_at=self.started_at, heartbeat_at=time.time(),
                           connected=self.link.connected, sessions=t.sessions,
                           get_streams=t.get_streams, listen_streams=t.listen_streams,
                           retained_bytes=t.retained_bytes, retained_values=t.retained_values,
                           refusals={k: v for k, v in snap.refusals.items() if v},
                           draining=self.draining)

    async def start(self) -> None:
        """Join the cluster, on the IOLoop that serves the transport: connect to Redis
        (raising if it cannot be reached now), follow the shared notifications, share
        this process's live limits, announce it, and keep it announced."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        await self.link.connect()
        await self.feed.start_at_end()
        await self.shared.publish_own()
        await self.members.beat()
        self.transport.options.subscribe(self.shared.on_local)
        self.server.add_relay(self)
        self.transport.cluster = self
        # the shared rate limit, audit process id, readiness
        self.rate_limit = attach_governance(self)
        oauth = self.transport.oauth
        self.dpop = attach_dpop(oauth.dpop if oauth is not None else None, self.link,
                                self.namespace)
        self.transport.engine.drain_hooks.append(self.sessions.drain)
        self._tasks = [asyncio.create_task(t()) for t in (
            self.link.supervise, self.feed.write_loop, self.feed.read_loop, self.members.loop,
            self._caps_loop, self.sessions.renew_loop)]
        log.info("process %s joined the cluster at %s", self.id, self.link.shown_url)

    async def _resync(self) -> None:
        """After Redis came back: catch up from the last id, restore what it lost."""
        await self.feed.resync()
        await self.shared.publish_own()
        await self.members.beat()

    async def announce_drain(self) -> None:
        """This process began to drain: the others learn it at once (on the feed, and in
        its heartbeat record), so they stop forwarding to it and wait for its sessions."""
        if self.draining:
            return
        self.draining = True
        self.on_loop(lambda: self.feed.push({"k": "d"}))
        if self.link.connected:
            with contextlib.suppress(*DOWN):
                await asyncio.wait_for(self.members.beat(), 1.0)

    async def close(self) -> None:
        """Leave the cluster: what is still queued for Redis gets up to a second, and
        every other step is bounded (:data:`CLOSE_TIMEOUT`), so a process always leaves,
        whatever redis-py does with a cancelled command."""
        if self.closed:
            return
        self.closed = self.shared.closed = True
        self.server.remove_relay(self)
        self.on_loop(lambda: self.feed.push({"k": "x"}))  # others forget us at once
        if self.link.connected and self.feed.outbox:
            deadline = time.monotonic() + 1.0
            while self.feed.outbox and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        self.link.closing = True  # every loop ends at its next turn
        stuck = await cancel_and_wait(self._tasks, CLOSE_TIMEOUT)
        if stuck:
            log.warning("%d cluster task(s) did not stop within %g s; leaving anyway",
                        stuck, CLOSE_TIMEOUT)
        if self.link.connected:
            await settle(self.members.leave(), CLOSE_TIMEOUT)
        if self.transport.cluster is self:
            self.transport.cluster = None
        await settle(self.link.aclose(), CLOSE_TIMEOUT)

    def on_loop(self, fn: Callable[[], Any]) -> None:
        if self._loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            fn()
        else:
            self._loop.call_soon_threadsafe(fn)

    # -- NotificationSink: every locally originated server-wide notification -----------------
    def publish(self, method: str, params: dict[str, Any] | None) -> None:
        fields = notification_fields(method, params)
        self.on_loop(lambda: self.feed.push(fields))

    # -- for the transport --------------------------------------------------------------------
    async def session_owner(self, session_id: str) -> ProcessInfo | None:
        """The live process, other than this one, whose prefix ``session_id`` carries;
        raises :class:`~tornado_mcp.cluster.members.Unsure` when Redis cannot say now."""
        owner, dot, _ = session_id.partition(".")
        if not dot or owner == self.id or not looks_like_process_id(owner):
            return None
        return await self.members.lookup(owner)

    async def find_session(self, h: RequestFlow, session_id: str,
                           body: bytes | None) -> Session | None:
        """For the transport, a legacy session it does not hold: adopted here, or the
        request forwarded to the process holding it, or a 503 while that cannot be
        confirmed; ``None`` when the session is gone
        (:meth:`~tornado_mcp.cluster.sessions.Sessions.find`)."""
        return await self.sessions.find(h, session_id, body)

    def owner_uncertain(self, session_id: str) -> float | None:
        """For a session no live process holds: the seconds a client should wait before
        retrying when the process its id names may still be alive (Redis is down or came
        back less than ``cluster_heartbeat_ttl`` ago, or that process's heartbeat expired
        less than two TTLs ago without it leaving: partitioned, or frozen); ``None`` when
        the session is gone for good (its process left, was replaced at its URL, or was
        never known)."""
        owner, dot, _ = session_id.partition(".")
        if not dot or owner == self.id or not looks_like_process_id(owner):
            return None
        return RETRY_AFTER_S if self.members.uncertain(owner) \
            or owner in self.members.draining else None

    async def reserve(self, kind: str) -> bool:
        """With ``cluster_wide_limits``: reserve, atomically across the cluster, a place
        for one more ``"sessions"`` or ``"listen_streams"`` (:mod:`~tornado_mcp.cluster.caps`);
        False when the cluster holds its cap.  Admit right after a True (in the same IOLoop
        iteration); the place is this process's until what it holds drops again.  Always
        True without cluster-wide limits, or while Redis is down."""
        return await self.caps.reserve(kind)

    async def _caps_loop(self) -> None:
        await self.caps.loop(self.members.interval)

    def _held(self, kind: str) -> int:
        held = self.transport.sessions if kind == "sessions" else self.transport.listen_index
        return len(held)

    def _cap(self, kind: str) -> int | None:
        opts = self.transport.options
        if not opts.cluster_wide_limits:
            return None
        return opts.max_sessions if kind == "sessions" else opts.max_listen_subscriptions

    def remote_count(self, kind: str) -> int:
        """Sessions or listen streams the other live processes hold (the newest of their
        last heartbeat and their last admission announcement), when
        ``cluster_wide_limits`` is on; 0 otherwise."""
        if not self.transport.options.cluster_wide_limits:
            return 0
        return sum(int(getattr(p, kind)) for p in self.members.current())

    def admitted(self) -> None:
        """This process admitted a session or a listen stream: with cluster-wide limits,
        announce its counts on the feed (once per IOLoop iteration, however many were
        admitted in it) so the others count them within milliseconds instead of at the
        next heartbeat.  Not while Redis is down: the heartbeat after reconnection tells."""
        if self._counts_due or not self.transport.options.cluster_wide_limits \
                or not self.link.connected or self._loop is None:
            return
        self._counts_due = True
        self._loop.call_soon(self._announce_counts)

    def _announce_counts(self) -> None:
        self._counts_due = False
        t = self.transport
        self.feed.push({"k": "c", "t": repr(time.time()), "ss": len(t.sessions),
                        "ls": len(t.listen_index)})

    # -- introspection ------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        """Every live process (this one as of now) and the totals over them."""
        processes = (self.members.own(), *sorted(self.members.current(),
                                                  key=lambda p: (p.host, p.pid, p.id)))
        totals = {name: sum(int(getattr(p, name)) for p in processes) for name in TOTALS}
        totals["refusals"] = sum(sum(p.refusals.values()) for p in processes)
        totals["processes"] = len(processes)
        f = self.feed
        relay = {"published": f.published, "received": f.received,
                 "duplicates": f.duplicates, "buffered": len(f.outbox), "dropped": f.dropped,
                 "trimmed": f.trimmed, "unreplicated": f.unreplicated,
                 "reconnects": self.link.reconnects,
                 "sessions_handed_over": self.sessions.handed_over,
                 "sessions_adopted": self.sessions.taken}
        fallbacks = {"rate_limit": self.rate_limit.fallbacks if self.rate_limit else 0,
                     "dpop_replay": self.dpop.fallbacks if self.dpop else 0}
        return ClusterSnapshot(taken_at=time.time(), self_id=self.id,
                               connected=self.link.connected, processes=processes,
                               totals=totals, relay=relay, fallbacks=fallbacks)


#: :func:`cancel_and_wait` cancels again what still runs after this long.
CANCEL_WAIT_S = 0.5


async def cancel_and_wait(tasks: list[asyncio.Task[Any]], timeout: float) -> int:
    """Cancel ``tasks`` and wait for them, at most ``timeout`` seconds, cancelling again
    any that still runs every :data:`CANCEL_WAIT_S`: redis-py can lose a cancellation that
    lands during a blocking command (redis/redis-py#2028; the loops also end on
    ``Link.closing``).  Returns how many still run at the bound."""
    pending = {task for task in tasks if not task.done()}
    deadline = time.monotonic() + timeout
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for task in pending:
            task.cancel()
        _done, pending = await asyncio.wait(pending, timeout=min(CANCEL_WAIT_S, left))
    for task in tasks:
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: a task that failed is over all the same
    return len(pending)
