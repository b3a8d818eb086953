"""Everything one dashboard mount shares between its handlers.

:class:`AdminState` is built once by :func:`admin_ui.routes` and handed to every handler
through Tornado's ``initialize`` keyword arguments.  It holds the transport, the
:class:`~admin_ui.auth.Gatekeeper`, the wrong-token
:class:`~admin_ui.throttle.FailureThrottle`, the plot :class:`~admin_ui.history.History`, the
Jinja2 environment and a short log of what operators (and code) changed.

The dashboard talks to the transport only through :class:`TransportLike`: the handful of
public methods listed there, and nothing private.
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import jinja2
from prometheus_client import CollectorRegistry
from tornado.web import RequestHandler, StaticFileHandler

from tornado_mcp.introspection import AuditRecord, ClusterSnapshot, Snapshot
from tornado_mcp.options import Options

if TYPE_CHECKING:
    from tornado_mcp.authserver import SignIn

from . import metrics
from .auth import Gatekeeper
from .history import History, ProcessProbe
from .throttle import FailureLimits, FailureThrottle

PACKAGE_DIR = Path(__file__).resolve().parent
TEMPLATE_DIR = PACKAGE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "static"

#: How many entries the "Recent changes" panel keeps.
EVENT_LOG_SIZE = 100

#: The host application's own login, in place of the dashboard's token: called with the
#: request's handler, it returns the caller's name, or ``None`` for nobody (a plain value
#: or an awaitable one).  See :func:`admin_ui.routes`.
Authenticate = Callable[[RequestHandler], str | Awaitable[str | None] | None]


class TransportLike(Protocol):
    """The part of :class:`tornado_mcp.Transport` the dashboard reads and drives: its public
    API only.  A Protocol so that holds by type (and by test:
    ``tests/admin/test_admin_transport_surface.py`` mounts the dashboard on a stand-in with these
    members and nothing else)."""

    @property
    def options(self) -> Options: ...

    def snapshot(
        self, sessions: bool = True, streams: bool = True, stream_uris: bool = False
    ) -> Snapshot: ...

    def end_session(self, session_id: str) -> bool: ...

    def close_stream(self, stream_id: str) -> Awaitable[bool]: ...

    def host_origin_verdict(self, host_header: str | None, origin: str | None) -> str | None: ...

    def audit(self, principal: str | None = None, tool: str | None = None,
              outcome: str | None = None, limit: int = 100) -> tuple[AuditRecord, ...]: ...


@dataclass(frozen=True)
class Event:
    """One entry of the audit trail shown on the page (the log has them too)."""

    t: float
    actor: str
    action: str  # "limits", "end_session", "close_stream", "revoke_consent", ...
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class AdminState:
    """Shared, per-mount state of the dashboard."""

    def __init__(
        self, transport: TransportLike, prefix: str, token: str, read_only: bool,
        authenticate: Authenticate | None = None, login_url: str | None = None,
        failure_limits: FailureLimits | None = None, signin: SignIn | None = None,
    ) -> None:
        self.transport = transport
        #: The app's own authorization server, when the dashboard shows its clients.
        self.signin = signin
        self.prefix = prefix
        self.read_only = read_only
        if authenticate is not None and token:
            raise ValueError("pass token or authenticate, not both: the host's login "
                             "replaces the dashboard's token")
        #: The host's login when given (then nobody knows the gatekeeper's random token).
        self.authenticate = authenticate
        #: Where an anonymous browser is sent to log in, with ``?next=``; ``None`` for the
        #: dashboard's own login page.
        self.login_url = login_url
        self.gatekeeper = Gatekeeper(token if authenticate is None
                                     else secrets.token_urlsafe(32))
        #: How fast wrong tokens may come, per address and overall.
        self.throttle = FailureThrottle(failure_limits)
        self.probe = ProcessProbe()
        self.history = History(
            lambda: transport.snapshot(sessions=False, streams=False), self.probe
        )
        #: This mount's own Prometheus registry (never prometheus_client's global one).
        self.metrics: CollectorRegistry = metrics.registry(
            lambda: transport.snapshot(sessions=True, streams=True), self.probe,
            lambda: _cluster_snapshot(transport),
        )
        self.events: deque[Event] = deque(maxlen=EVENT_LOG_SIZE)
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
            autoescape=jinja2.select_autoescape(default=True),
            undefined=jinja2.StrictUndefined,
        )
        # Limit changes are recorded however they were made: this page, the API, or code.
        transport.options.subscribe(self._on_limits_changed)

    def _on_limits_changed(self, diff: dict[str, tuple[Any, Any]], actor: str) -> None:
        changes = {k: {"old": old, "new": new} for k, (old, new) in diff.items()}
        self.record(actor, "limits", changes)

    def record(self, actor: str, action: str, detail: dict[str, Any]) -> None:
        self.events.append(Event(time.time(), actor, action, detail))

    def static_url(self, name: str) -> str:
        """URL of a file in ``admin_ui/static`` with a content hash, so caches stay fresh."""
        version = StaticFileHandler.get_version({"static_path": str(STATIC_DIR)}, name)
        return f"{self.prefix}/static/{name}?v={version}"


def _cluster_snapshot(transport: TransportLike) -> ClusterSnapshot | None:
    """The public cluster view of a transport that belongs to one (``transport.cluster``)."""
    cluster = getattr(transport, "cluster", None)
    return None if cluster is None else cluster.snapshot()
