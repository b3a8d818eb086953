"""Resumable legacy streams (SSE polling and resumption, 2025-11-25).

With the ``resumable_streams`` option on, the SSE stream a legacy POST opens (once its
handler emits a notification, sends a request, or closes the stream) becomes a
:class:`ResumableStream`:

* every event carries an id ``<stream>.<seq>``: a random stream key, unique within the
  session, and the event's number in that stream, so a ``Last-Event-ID`` names exactly
  one stream and a position in it;
* a 2025-11-25 session first gets a *priming* event (an id, empty ``data``) with the
  ``retry`` its client must wait before reconnecting (older clients get neither, and
  their streams are never closed at will: they would take the close as the end);
* every event is kept in the transport's :class:`~tornado_mcp.transport.event_store.EventStore`
  before it is written, so the connection can go at any time: the client disconnected,
  or the server closed it at will (:meth:`tornado_mcp.Context.close_sse_stream`) to make
  the client poll.  The handler runs on: a disconnect is not a cancellation here;
* ``GET`` with ``Last-Event-ID`` (:func:`resume`) replays that stream's events after the
  id, and only that stream's, then carries the rest of it (its response included) live.

A ``Last-Event-ID`` that is malformed, names no stream of this session (forged, or from
another session) or a stream whose events are gone (past ``event_store_max_age``, or
dropped by ``event_store_max_bytes``) is answered 400 with a JSON-RPC error, never with a
partial replay.
"""

from __future__ import annotations

import logging
import re
import secrets
from typing import TYPE_CHECKING, Any

from ..protocol import INVALID_REQUEST, POLLING_VERSION, jsonio
from ..server.session import Session
from .event_store import EventStore
from .sse import SSEChannel, frame
from .wire import Reply

if TYPE_CHECKING:
    from .core import Transport
    from .flow import RequestFlow

#: ``<stream key>.<sequence number>``: the key as :func:`secrets.token_urlsafe` makes it.
log = logging.getLogger("tornado_mcp.transport")

EVENT_ID = re.compile(r"(?P<key>[A-Za-z0-9_-]{12})\.(?P<seq>0|[1-9][0-9]{0,15})")

NOT_RESUMABLE = ("Bad Request: Last-Event-ID names no stream this session can resume "
                 "(unknown, or its events are no longer kept)")


def retry_ms(t: Transport) -> int:
    return max(1, round(t.options.sse_retry_interval * 1000))


class ResumableStream:
    """One POST's SSE stream that survives its connection; see the module docstring."""

    __slots__ = ("_backlog", "channel", "done", "key", "polling", "registry", "seq",
                 "session_id")

    def __init__(self, registry: Resumption, session_id: str, polling: bool) -> None:
        self.registry = registry
        self.session_id = session_id
        #: The client polls (2025-11-25): it takes a priming event, and reconnects after
        #: the server closed the connection.
        self.polling = polling
        self.key = secrets.token_urlsafe(9)
        self.seq = -1
        #: The connection the stream is written to now, if any.
        self.channel: SSEChannel | None = None
        self.done = False
        #: Events sent while a resuming connection is replaying: (seq, frame).
        self._backlog: list[tuple[int, bytes]] | None = None

    def _event(self, data: bytes) -> tuple[int, bytes]:
        self.seq += 1
        framed = b"id: " + f"{self.key}.{self.seq}".encode() + b"\n" + data
        self.registry.store.append(self.session_id, self.key, self.seq, framed)
        return self.seq, framed

    def prime(self, retry: int) -> None:
        """The first event: an id to resume from, and the retry to wait."""
        seq, framed = self._event(b"retry: %d\ndata: \n\n" % retry)
        self._write(seq, framed)

    def send(self, message: dict[str, Any]) -> bool:
        """Keep ``message`` for resumption and write it to the live connection, if any."""
        if self.done:
            return False
        seq, framed = self._event(frame(jsonio.dumps(message)))
        self._write(seq, framed)
        return True

    def _write(self, seq: int, framed: bytes) -> None:
        if self._backlog is not None:
            self._backlog.append((seq, framed))
        elif self.channel is not None and not self.channel.send_frame(framed):
            self.channel = None  # the connection is gone; the store has the event

    def finish(self, response: dict[str, Any] | None) -> None:
        """The request is over: send its response (if any) and end the stream."""
        if response is not None:
            self.send(response)
        self.done = True
        self.registry.live.pop((self.session_id, self.key), None)
        if self.channel is not None and self._backlog is None:
            self.channel.close()

    def close_connection(self, retry: int) -> bool:
        """Close the connection without ending the stream: the client polls (reconnects
        with ``Last-Event-ID`` after ``retry`` ms)."""
        channel = self.channel
        if channel is None or self.done or not self.polling:
            return False  # a client before 2025-11-25 would take the close as the end
        channel.send_frame(b"retry: %d\n\n" % retry)
        self.channel = None
        channel.close()
        return True

    def detach(self, channel: SSEChannel | None) -> None:
        """``channel``'s connection is gone."""
        if channel is not None and self.channel is channel:
            self.channel = None

    def start_replay(self) -> None:
        """A client is resuming: events sent until :meth:`take_over` or
        :meth:`cancel_replay` wait, so none falls between the replay and the live tail."""
        if self._backlog is None:
            self._backlog = []

    def take_over(self, channel: SSEChannel, replayed_up_to: int) -> None:
        """The resuming connection ``channel`` has the replay: it carries the rest."""
        backlog, self._backlog = self._backlog or [], None
        old, self.channel = self.channel, channel
        if old is not None and old is not channel:
            old.abort()  # the client reconnected: the old connection is dead to it
        for seq, framed in backlog:
            if seq > replayed_up_to:
                self._write(seq, framed)
        if self.done and self.channel is not None:
            self.channel.close()

    def cancel_replay(self) -> None:
        """The resume was refused: what waited goes to the connection there was."""
        backlog, self._backlog = self._backlog or [], None
        for seq, framed in backlog:
            self._write(seq, framed)
        if self.done and self.channel is not None:
            self.channel.close()


class Resumption:
    """A transport's resumable streams: the live ones by (session, key), and the store."""

    def __init__(self, transport: Transport, store: EventStore) -> None:
        opts = transport.options
        self.transport = transport
        self.store = store
        store.bind(lambda: opts.event_store_max_bytes, lambda: opts.event_store_max_age,
                   transport.count_refusal)
        self.live: dict[tuple[str, str], ResumableStream] = {}

    @property
    def enabled(self) -> bool:
        return self.transport.options.resumable_streams

    def open(self, session: Session, channel: SSEChannel) -> ResumableStream:
        """Make the SSE stream ``channel`` starts resumable, and prime it."""
        rs = ResumableStream(self, session.id, session.protocol_version >= POLLING_VERSION)
        rs.channel = channel
        self.live[(session.id, rs.key)] = rs
        if rs.polling:  # older clients would choke on an event with empty data
            rs.prime(retry_ms(self.transport))
        return rs

    def forget(self, session: Session) -> None:
        """The session ended: its streams end, its events go."""
        for (sid, key), rs in list(self.live.items()):
            if sid == session.id:
                rs.done = True
                del self.live[(sid, key)]
                if rs.channel is not None:
                    rs.channel.close()
        self.store.forget(session.id)


async def resume(h: RequestFlow, session: Session, last_event_id: str) -> None:
    """``GET`` with ``Last-Event-ID``: replay the named stream's missed events, then carry
    the rest of it live (or end it, when its request is already answered)."""
    t = h.transport
    match = EVENT_ID.fullmatch(last_event_id.strip())
    if match is None:
        raise Reply(400, INVALID_REQUEST,
                    "Bad Request: Last-Event-ID is not an event id this server gave out")
    key, after = match["key"], int(match["seq"])
    rs = t.resumption.live.get((session.id, key))
    if rs is not None:
        rs.start_replay()
    try:
        events = await t.resumption.store.replay(session.id, key, after)
    except Exception:
        log.exception("event store failed to replay a stream")
        events = None
    if events is None or h.transport.sessions.get(session.id) is not session:
        if rs is not None:
            rs.cancel_replay()
        raise Reply(400, INVALID_REQUEST, NOT_RESUMABLE)
    opts = t.options
    channel = h.open_channel(lambda: opts.sse_keepalive_interval)
    h.on_disconnect = channel.abort
    channel.start()
    upto = after
    for seq, framed in events:
        channel.send_frame(framed)
        upto = seq
    if rs is not None:
        rs.take_over(channel, upto)
    else:
        channel.close()  # its request was answered: the replay ends the stream
    try:
        await h.stream(channel)
    finally:
        if rs is not None:
            rs.detach(channel)
        session.touch()
