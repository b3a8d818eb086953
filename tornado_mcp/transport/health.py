"""Liveness and readiness probes for orchestrators (Kubernetes, load balancers).

``transport.health_routes()`` gives two unauthenticated, cheap ``GET`` handlers:

* ``/healthz``: 200 ``{"status": "ok"}`` whenever the IOLoop runs (it answered);
* ``/readyz``: 200 ``{"status": "ready"}`` when the transport can serve; 503
  ``{"status": "unavailable", "reason": ...}`` with ``Retry-After`` while it drains
  (``close()`` began) and while its cluster's Redis has been unreachable for longer than
  ``cluster_heartbeat_ttl`` (the other processes have forgotten this one by then).

Neither reads a request body, a session or a credential; both answer ``HEAD`` too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import tornado.web

from ..protocol import jsonio

if TYPE_CHECKING:
    from .core import Transport

#: Seconds a client of ``/readyz`` is told to wait when it is not ready.
READY_RETRY_AFTER_S = 5


class _Probe(tornado.web.RequestHandler):
    def initialize(self, transport: Transport) -> None:
        self.transport = transport

    def check_xsrf_cookie(self) -> None:  # pragma: no cover - GET and HEAD only
        return

    def _answer(self, status: int, body: dict[str, Any], head: bool) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        if status == 503:
            self.set_header("Retry-After", str(READY_RETRY_AFTER_S))
        self.finish(b"" if head else jsonio.dumps(body))


class HealthHandler(_Probe):
    """``GET /healthz``: the process answers."""

    def get(self) -> None:
        self._answer(200, {"status": "ok"}, False)

    def head(self) -> None:
        self._answer(200, {"status": "ok"}, True)


class ReadyHandler(_Probe):
    """``GET /readyz``: the transport can serve."""

    def _check(self, head: bool) -> None:
        reason = self.transport.engine.not_ready()
        if reason is None:
            self._answer(200, {"status": "ready"}, head)
        else:
            self._answer(503, {"status": "unavailable", "reason": reason}, head)

    def get(self) -> None:
        self._check(False)

    def head(self) -> None:
        self._check(True)


def probe_routes(transport: Transport, healthz: str, readyz: str
                 ) -> list[tuple[str, type[Any], dict[str, Any]]]:
    kw = {"transport": transport}
    return [(healthz, HealthHandler, kw), (readyz, ReadyHandler, kw)]
