"""The call audit trail: one record per governed call, kept in a bounded ring and written
as one JSON line to the ``tornado_mcp.audit`` logger.

A record (:class:`~tornado_mcp.introspection.AuditRecord`) says who called what, when, how
it ended and how long it took; of the arguments it keeps only a digest (the SHA-256 of
their canonical JSON: sorted keys, no spaces, UTF-8), unless the tool opted in with
``audit_arguments=True``, and then only what its ``redact`` hook returns, at most
:data:`MAX_AUDIT_ARGUMENT_BYTES` of JSON.  What a client chose (the name it called, its
request id) and the caller's name are kept to :data:`MAX_AUDIT_FIELD_BYTES` of UTF-8 each
(a longer one is cut and marked ``…[<n> bytes]``), so one record is at most about 1.5 KB,
5.6 KB with opted-in arguments.  The ring holds ``max_audit_entries`` records (live: a
change resizes it, keeping the newest) and counts their bytes (:attr:`AuditTrail.bytes`).
"""

from __future__ import annotations

import contextvars
import hashlib
import itertools
import json
import logging
from collections import deque
from collections.abc import Iterable
from typing import Any

from ..introspection import AuditRecord

log = logging.getLogger("tornado_mcp.audit")

#: Largest JSON of a call's kept arguments (``audit_arguments=True``), in bytes.
MAX_AUDIT_ARGUMENT_BYTES = 4096
#: Longest name, request id or caller a record keeps, in bytes of UTF-8.
MAX_AUDIT_FIELD_BYTES = 256
#: What a record costs besides its strings (the tuple, its numbers, the deque's slot).
ROW_OVERHEAD_BYTES = 200
#: The trace id of the request being handled, hex, as the OpenTelemetry middleware set it.
TRACE_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tornado_mcp_trace_id", default=None)

_EMPTY_DIGEST = hashlib.sha256(b"{}").hexdigest()
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              default=str)
_sha256 = hashlib.sha256

#: A record as the ring keeps it: the fields of :class:`AuditRecord`, in order, with the
#: duration in seconds (a tuple costs a fraction of a frozen dataclass per call; records
#: are built when read).
Row = tuple[float, str, str, str, str, str, "int | None", float, Any, "str | None",
            "str | None", "str | None", Any]


try:  # orjson (the ``speed`` extra) writes the same canonical bytes, ten times faster
    import orjson as _orjson

    _SORTED = _orjson.OPT_SORT_KEYS
    _fast: Any = _orjson.dumps
except ImportError:  # pragma: no cover
    _fast = None


def canonical(value: Any) -> bytes:
    """The canonical JSON of ``value``: sorted keys, no spaces, UTF-8."""
    if _fast is not None:
        try:
            out: bytes = _fast(value, option=_SORTED)
            return out
        except TypeError:  # not plain JSON data (a non-string key, an odd value)
            pass
    return _CANONICAL.encode(value).encode()


def digest(arguments: Any) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``arguments`` (``None`` counts as
    ``{}``: a call without arguments)."""
    if arguments is None or arguments == {}:
        return _EMPTY_DIGEST
    return _sha256(canonical(arguments)).hexdigest()


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


def bounded(text: str) -> str:
    """``text`` if it is at most :data:`MAX_AUDIT_FIELD_BYTES` of UTF-8, else its first
    bytes (whole characters) and ``…[<n> bytes]``."""
    if len(text) <= MAX_AUDIT_FIELD_BYTES // 4:  # no four-byte characters can exceed it
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_AUDIT_FIELD_BYTES:
        return text
    head = raw[:MAX_AUDIT_FIELD_BYTES].decode("utf-8", "ignore")
    return f"{head}…[{len(raw)} bytes]"


def bounded_id(request_id: Any) -> Any:
    """A request id as a record keeps it: a long string cut (:func:`bounded`), an integer
    beyond 64 bits as its cut decimal text; anything else as it is."""
    if isinstance(request_id, str):
        return bounded(request_id)
    if isinstance(request_id, int) and not -(2 ** 63) <= request_id < 2 ** 63:
        return bounded(str(request_id))
    return request_id


def row_bytes(row: Row) -> int:
    """What a record holds, in bytes: its strings as UTF-8, its kept arguments as JSON,
    and :data:`ROW_OVERHEAD_BYTES`."""
    size = ROW_OVERHEAD_BYTES
    for value in (row[1], row[2], row[3], row[4], row[8], row[9], row[10], row[11]):
        if isinstance(value, str):
            size += len(value.encode("utf-8", "surrogatepass"))
    if row[12] is not None:
        size += len(canonical(row[12]))
    return size


class AuditTrail:
    """The ring of the newest records (``size`` of them), with what they weigh."""

    def __init__(self, size: int) -> None:
        self.records: deque[Row] = deque(maxlen=size)
        #: Records kept since start (the ring holds the newest ``size`` of them).
        self.total = 0
        # What the records weigh is measured when asked (:attr:`bytes`), not per call:
        # the sizes of those measured so far, their sum, and ``total`` at that time.
        self._sizes: deque[int] = deque(maxlen=size)
        self._bytes = 0
        self._measured = 0

    @property
    def bytes(self) -> int:
        """The bytes the ring holds now (:func:`row_bytes` of each record), measuring
        only the records added since the last time this was asked."""
        records, sizes = self.records, self._sizes
        new = min(self.total - self._measured, len(records))
        if new > 0:
            for row in itertools.islice(records, len(records) - new, None):
                if len(sizes) == sizes.maxlen:
                    self._bytes -= sizes[0]
                size = row_bytes(row)
                sizes.append(size)
                self._bytes += size
        self._measured = self.total
        return self._bytes

    def resize(self, size: int) -> None:
        if size != self.records.maxlen:
            self.records = deque(self.records, maxlen=size)
            self._sizes = deque(maxlen=size)
            self._bytes = 0
            self._measured = self.total - len(self.records)  # measured again when asked

    def add(self, row: Row) -> None:
        """Keep ``row`` (its strings already :func:`bounded`), forgetting the oldest when
        full, and log it."""
        if self.records.maxlen:
            self.records.append(row)
        self.total += 1
        if log.isEnabledFor(logging.INFO):
            self.log(row)

    @staticmethod
    def log(row: Row) -> None:
        """Write ``row`` as one JSON line to the ``tornado_mcp.audit`` logger."""
        log.info("%s", json.dumps(record_of(row).as_dict(), separators=(",", ":"), default=str))

    def query(self, principal: str | None = None, name: str | None = None,
              outcome: str | None = None, limit: int = 100) -> tuple[AuditRecord, ...]:
        """The newest records first, at most ``limit``, matching every filter given."""
        out: list[AuditRecord] = []
        if limit <= 0:
            return ()
        for row in _newest_first(self.records):
            if (principal is None or row[1] == principal) \
                    and (name is None or row[3] == name) \
                    and (outcome is None or row[5] == outcome):
                out.append(record_of(row))
                if len(out) >= limit:
                    break
        return tuple(out)


def record_of(row: Row) -> AuditRecord:
    as_list = list(row)
    as_list[7] = round(row[7] * 1000, 3)
    return AuditRecord(*as_list)


def _newest_first(records: deque[Row]) -> Iterable[Row]:
    return reversed(list(records))
