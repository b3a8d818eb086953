"""The call audit trail: one record per governed call, kept in a bounded ring and written
as one JSON line to the ``tornado_mcp.audit`` logger.

A record (:class:`~tornado_mcp.introspection.AuditRecord`) says who called what, when, how
it ended and how long it took; of the arguments it keeps only a digest (the SHA-256 of
their canonical JSON: sorted keys, no spaces, UTF-8), unless the tool opted in with
``audit_arguments=True``, and then only what its ``redact`` hook returns, at most
:data:`MAX_AUDIT_ARGUMENT_BYTES` of JSON.  The ring holds ``max_audit_entries`` records
(live: a change resizes it, keeping the newest).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

from ..introspection import AuditRecord

log = logging.getLogger("tornado_mcp.audit")

#: Largest JSON of a call's kept arguments (``audit_arguments=True``), in bytes.
MAX_AUDIT_ARGUMENT_BYTES = 4096
#: The trace id of the request being handled, hex, as the OpenTelemetry middleware set it.
TRACE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tornado_mcp_trace_id", default=None)

_EMPTY_DIGEST = hashlib.sha256(b"{}").hexdigest()


def canonical(value: Any) -> bytes:
    """The canonical JSON of ``value``: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode()


def digest(arguments: Any) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``arguments``."""
    if not arguments:
        return _EMPTY_DIGEST if isinstance(arguments, dict) or arguments is None \
            else hashlib.sha256(canonical(arguments)).hexdigest()
    return hashlib.sha256(canonical(arguments)).hexdigest()


def kept_arguments(arguments: Any, redact: Any) -> Any:
    """What the trail keeps of an opted-in call's arguments: ``redact(arguments)`` (the
    arguments themselves without a hook), or a marker when its JSON is over the bound."""
    try:
        shown = redact(dict(arguments)) if redact is not None else arguments
        body = canonical(shown)
    except Exception:
        log.exception("the redact hook raised; the arguments are not kept")
        return {"$redact_failed": True}
    if len(body) > MAX_AUDIT_ARGUMENT_BYTES:
        return {"$truncated": len(body)}
    return json.loads(body)


class AuditTrail:
    """The ring of the newest records (``size`` of them)."""

    def __init__(self, size: int) -> None:
        self.records: deque[AuditRecord] = deque(maxlen=size)
        self.total = 0

    def resize(self, size: int) -> None:
        if size != self.records.maxlen:
            self.records = deque(self.records, maxlen=size)

    def add(self, record: AuditRecord) -> None:
        self.records.append(record)
        self.total += 1
        if log.isEnabledFor(logging.INFO):
            log.info("%s", json.dumps(record.as_dict(), separators=(",", ":"), default=str))

    def query(self, principal: str | None = None, name: str | None = None,
              outcome: str | None = None, limit: int = 100) -> tuple[AuditRecord, ...]:
        """The newest records first, at most ``limit``, matching every filter given."""
        out: list[AuditRecord] = []
        if limit <= 0:
            return ()
        for record in _newest_first(self.records):
            if (principal is None or record.principal == principal) \
                    and (name is None or record.name == name) \
                    and (outcome is None or record.outcome == outcome):
                out.append(record)
                if len(out) >= limit:
                    break
        return tuple(out)


def _newest_first(records: deque[AuditRecord]) -> Iterable[AuditRecord]:
    return reversed(list(records))
