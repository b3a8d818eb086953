"""Marshmallow schemas for what the dashboard accepts: limit changes and list queries.

Both schemas answer the same way when input is wrong: a dict with one plain-English message
per field, ready to send back as ``{"errors": {...}}`` with status 400 and to show next to
the field in the form.

The limits schema is built from :data:`tornado_mcp.options.OPTION_SPECS`, so a live option
added to the library shows up here (and in the form) with no change to this package.  It
checks the *shape* of each value; the library's own :meth:`TransportOptions.update` then
applies the change (all or nothing) and has the last word.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate

from tornado_mcp.options import LIVE_OPTIONS, OPTION_SPECS, SPECS_BY_NAME, OptionSpec

#: Largest integer a browser's JavaScript can hold exactly; larger limits are refused.
MAX_SAFE_INTEGER = 2**53 - 1

#: Columns ``GET api/sessions?sort=`` accepts.
SESSION_SORT_KEYS: tuple[str, ...] = (
    "id",
    "client_name",
    "protocol_version",
    "created_at",
    "last_active_at",
    "in_flight",
    "retained_bytes",
    "retained_values",
)
#: Columns ``GET api/streams?sort=`` accepts.
STREAM_SORT_KEYS: tuple[str, ...] = (
    "id",
    "opened_at",
    "uri_count",
    "uri_bytes",
    "queue_depth",
)
#: Most rows one page may hold.
MAX_PAGE = 500


def _none_hint(spec: OptionSpec) -> str:
    return ", or null for no limit" if spec.nullable else ""


def _value_validator(spec: OptionSpec) -> Callable[[Any], None]:
    """Return a marshmallow validator that checks one value of ``spec``'s kind.

    JSON has no integer type of its own and ``True`` is an ``int`` in Python, so each kind
    says exactly what it takes: ``"5"`` or ``true`` is never a count of sessions.
    """

    def check_int(value: Any) -> None:
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole:
            raise ValidationError(f"Must be a whole number{_none_hint(spec)}.")
        if value < 1:
            raise ValidationError(f"Must be at least 1{_none_hint(spec)}.")
        if value > MAX_SAFE_INTEGER:
            raise ValidationError(f"Must be at most {MAX_SAFE_INTEGER}.")

    def check_seconds(value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError(f"Must be a number of seconds{_none_hint(spec)}.")
        if not math.isfinite(value) or value <= 0:
            raise ValidationError(f"Must be more than 0 seconds{_none_hint(spec)}.")

    def check_bool(value: Any) -> None:
        if not isinstance(value, bool):
            raise ValidationError("Must be true or false.")

    checks = {"int": check_int, "seconds": check_seconds, "bool": check_bool}
    if spec.kind not in checks:
        raise ValueError(f"{spec.name}: kind {spec.kind!r} cannot be tuned from the dashboard")
    return checks[spec.kind]


def _limit_field(spec: OptionSpec) -> fields.Field:  # type: ignore[type-arg,unused-ignore]
    return fields.Raw(
        required=False,
        allow_none=spec.nullable,
        validate=_value_validator(spec),
        error_messages={"null": "May not be null: this limit cannot be removed."},
        metadata={"help": spec.help, "kind": spec.kind},
    )


def _build_limits_schema() -> type[Schema]:
    specs = [s for s in OPTION_SPECS if s.live]
    return Schema.from_dict({s.name: _limit_field(s) for s in specs}, name="LimitsSchema")


#: The schema for ``PATCH api/limits`` bodies: every live option, all optional.
LimitsSchema: type[Schema] = _build_limits_schema()


def _kind(value: Any) -> int:
    """Turn ``1.0`` into ``1`` so integer options receive integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value  # type: ignore[no-any-return]


def load_limit_changes(body: Any) -> dict[str, Any]:
    """Validate a ``PATCH api/limits`` body; return the changes or raise :class:`FieldErrors`.

    >>> load_limit_changes({"max_sessions": 5})
    {'max_sessions': 5}
    >>> load_limit_changes({"max_sessions": 0})
    Traceback (most recent call last):
      ...
    admin_ui.schemas.FieldErrors: max_sessions: Must be at least 1, or null for no limit.
    """
    if not isinstance(body, Mapping):
        raise FieldErrors({"_body": "Send a JSON object of the limits to change."})
    # Name options that exist but cannot change live more helpfully than "Unknown field."
    fixed = {k: "Cannot be changed while the server runs." for k in body
             if k in SPECS_BY_NAME and k not in LIVE_OPTIONS}
    rest = {k: v for k, v in body.items() if k not in fixed}
    try:
        loaded: dict[str, Any] = LimitsSchema(unknown=RAISE).load(rest)
    except ValidationError as exc:
        raise FieldErrors({**flatten_messages(exc.messages), **fixed}) from None
    if fixed:
        raise FieldErrors(fixed)
    if not loaded:
        raise FieldErrors({"_body": "Name at least one limit to change."})
    return {k: _kind(v) if SPECS_BY_NAME[k].kind == "int" else v for k, v in loaded.items()}


class _PageSchema(Schema):
    """Query parameters shared by the sessions and streams lists."""

    class Meta:
        unknown = EXCLUDE

    order = fields.String(
        load_default="desc",
        validate=validate.OneOf(("asc", "desc"), error="Must be asc or desc."),
    )
    q = fields.String(
        load_default="",
        validate=validate.Length(max=200, error="Keep the filter under 200 characters."),
    )
    offset = fields.Integer(
        load_default=0,
        validate=validate.Range(min=0, error="Must be 0 or more."),
        error_messages={"invalid": "Must be a whole number."},
    )
    limit = fields.Integer(
        load_default=50,
        validate=validate.Range(min=1, max=MAX_PAGE, error=f"Must be between 1 and {MAX_PAGE}."),
        error_messages={"invalid": "Must be a whole number."},
    )


class SessionQuerySchema(_PageSchema):
    """``GET api/sessions`` query: ``sort``, ``order``, ``q``, ``offset``, ``limit``."""

    sort = fields.String(
        load_default="last_active_at",
        validate=validate.OneOf(
            SESSION_SORT_KEYS, error="Must be one of: " + ", ".join(SESSION_SORT_KEYS) + "."
        ),
    )


class StreamQuerySchema(_PageSchema):
    """``GET api/streams`` query: ``sort``, ``order``, ``q``, ``offset``, ``limit``."""

    sort = fields.String(
        load_default="opened_at",
        validate=validate.OneOf(
            STREAM_SORT_KEYS, error="Must be one of: " + ", ".join(STREAM_SORT_KEYS) + "."
        ),
    )


def load_query(schema: Schema, args: Mapping[str, list[bytes]]) -> dict[str, Any]:
    """Validate Tornado's ``request.query_arguments`` (last value wins) with ``schema``."""
    flat = {k: v[-1].decode("utf-8", "replace") for k, v in args.items() if v}
    try:
        loaded: dict[str, Any] = schema.load(flat)
    except ValidationError as exc:
        raise FieldErrors(flatten_messages(exc.messages)) from None
    return loaded


class FieldErrors(ValueError):
    """Input was refused; ``errors`` maps each field to one message (``_body`` for the whole)."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))


def flatten_messages(messages: Any) -> dict[str, str]:
    """Marshmallow's ``{"field": ["msg", ...]}`` to ``{"field": "msg msg"}``."""
    if not isinstance(messages, Mapping):
        return {"_body": _join(messages)}
    return {str(k): _join(v) for k, v in messages.items()}


def _join(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return " ".join(_join(v) for v in value)
    if isinstance(value, Mapping):
        return " ".join(f"{k}: {_join(v)}" for k, v in value.items())
    return str(value)
