"""The dashboard's API for call governance: tools and their live bounds, callers, and the
call audit trail (``docs/admin.md`` documents each endpoint).

Everything is read through the library's public introspection: ``transport.snapshot()``
(its ``tools`` and ``principals`` rows) and ``transport.audit(...)``.  A bound is changed
through the ``tool_bounds`` option (``transport.options.update``), so the change is
validated by the library, shared with the rest of a cluster like every other live limit,
and recorded in the "Recent changes" log.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from tornado_mcp.introspection import ToolInfo
from tornado_mcp.options import OptionError, coerce_tool_bound

from .base import AdminHandler, ApiError, log
from .state import AdminState

#: Outcomes ``GET api/audit?outcome=`` accepts.
AUDIT_OUTCOMES = ("ok", "error", "refused", "timeout", "cancelled")
#: Most records one ``GET api/audit`` returns.
MAX_AUDIT_PAGE = 1000
#: The longest filter value ``GET api/audit`` accepts.
MAX_FILTER_CHARS = 1000


def _row(t: ToolInfo) -> dict[str, Any]:
    d = asdict(t)
    d.pop("buckets", None)
    d.pop("duration_sum", None)
    return d


def _tool(admin: AdminState, name: str) -> ToolInfo:
    snap = admin.transport.snapshot(sessions=False, streams=False)
    for t in snap.tools:
        if t.kind == "tool" and t.name == name:
            return t
    raise ApiError(404, f"No such tool: {name}.")


class ToolsHandler(AdminHandler):
    """``GET api/tools``: every tool with its statistics and bounds (``others``: resources,
    templates and prompts that were called or declare bounds)."""

    def get(self) -> None:
        snap = self.admin.transport.snapshot(sessions=False, streams=False)
        self.write_json({
            "items": [_row(t) for t in snap.tools if t.kind == "tool"],
            "others": [_row(t) for t in snap.tools if t.kind != "tool"],
            "overrides": snap.limits.get("tool_bounds", {}),
            "read_only": self.admin.read_only,
        })


class ToolHandler(AdminHandler):
    """``GET api/tools/<name>`` shows one tool; ``PATCH`` overrides its ``timeout`` and
    ``max_concurrency`` (``null`` removes the bound) on every process of the cluster."""

    def get(self, name: str) -> None:
        self.write_json(_row(_tool(self.admin, name)))

    def patch(self, name: str) -> None:
        body = self.read_json()
        if not isinstance(body, dict) or not body:
            raise ApiError(400, "Send an object with timeout and/or max_concurrency.",
                           {"_body": "must be a non-empty JSON object"})
        errors: dict[str, str] = {}
        changes: dict[str, Any] = {}
        for field, value in body.items():
            try:
                changes[field] = coerce_tool_bound(str(field), value)
            except ValueError as exc:
                errors[str(field)] = str(exc)
        if errors:
            raise ApiError(400, "Some bounds were refused; nothing changed.", errors)
        _tool(self.admin, name)  # 404 before anything changes
        options = self.admin.transport.options
        overrides = {k: dict(v) for k, v in options.tool_bounds.items()}
        overrides[name] = {**overrides.get(name, {}), **changes}
        actor = self.actor()
        try:
            diff = options.update({"tool_bounds": overrides}, actor=actor)
        except OptionError as exc:  # pragma: no cover - validated above
            raise ApiError(400, "Some bounds were refused; nothing changed.",
                           exc.errors) from None
        if diff:
            log.info("admin: %s changed the bounds of tool %s: %s", actor, name, changes)
        self.write_json({**_row(_tool(self.admin, name)), "changed": bool(diff)})


class PrincipalsHandler(AdminHandler):
    """``GET api/principals``: the callers seen most recently, most recent first."""

    def get(self) -> None:
        snap = self.admin.transport.snapshot(sessions=False, streams=False)
        self.write_json({"items": [asdict(p) for p in snap.principals]})


class AuditHandler(AdminHandler):
    """``GET api/audit?principal=&tool=&outcome=&limit=``: the newest audit records first."""

    def get(self) -> None:
        errors: dict[str, str] = {}
        filters: dict[str, str | None] = {}
        for field in ("principal", "tool", "outcome"):
            value = self.get_query_argument(field, None) or None
            if value is not None and len(value) > MAX_FILTER_CHARS:
                errors[field] = f"Must be at most {MAX_FILTER_CHARS} characters."
            filters[field] = value
        if filters["outcome"] is not None and filters["outcome"] not in AUDIT_OUTCOMES:
            errors["outcome"] = "Must be one of " + ", ".join(AUDIT_OUTCOMES) + "."
        raw = self.get_query_argument("limit", None)
        limit = 100
        if raw:
            try:
                limit = int(raw)
            except ValueError:
                errors["limit"] = "Must be a whole number."
            else:
                if not 1 <= limit <= MAX_AUDIT_PAGE:
                    errors["limit"] = f"Must be between 1 and {MAX_AUDIT_PAGE}."
        if errors:
            raise ApiError(400, "Bad query.", errors)
        records = self.admin.transport.audit(principal=filters["principal"],
                                             tool=filters["tool"], outcome=filters["outcome"],
                                             limit=limit)
        audit = self.admin.transport.snapshot().audit
        self.write_json({"items": [r.as_dict() for r in records], "limit": limit,
                         "trail": asdict(audit) if audit is not None else None,
                         **{k: v for k, v in filters.items()}})
