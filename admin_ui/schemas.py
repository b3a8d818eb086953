"""Marshmallow schemas for what the dashboard accepts: limit changes and list queries.

Both schemas answer the same way when input is wrong: a dict with one plain-English message
per field, ready to send back as ``{"errors": {...}}`` with status 400 and to show next to
the field in the form.

The limits schema gives a ``PATCH api/limits`` body its shape: an object whose keys are
option names, one field per option of :data:`tornado_mcp.options.OPTION_SPECS`, so an option
added to the library shows up here (and in the form) with no change to this package.  It
has no rules of its own for the values: each field hands its value to the library's
:meth:`OptionSpec.coerce <tornado_mcp.options.OptionSpec.coerce>` (with the JSON rules), so
the dashboard refuses exactly what the library refuses, with the library's messages.  The
library's :meth:`Options.update` then applies the change (all or nothing) and has
the last word.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, validate

from tornado_mcp.options import NOT_LIVE, OPTION_SPECS, UNKNOWN_OPTION, OptionSpec
from tornado_mcp.protocol.field_errors import dotted, error_messages

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


class OptionValue(fields.Raw):
    """A new value for one option, judged by the library: ``spec.coerce(value, from_json=True)``.

    ``null`` goes to the library too (it knows which options may be switched off), and an
    option that cannot change while the server runs is refused with the library's message.
    """

    def __init__(self, spec: OptionSpec) -> None:
        super().__init__(
            required=False,
            allow_none=spec.nullable,
            metadata={"help": spec.help, "kind": spec.kind, "live": spec.live},
        )
        self.spec = spec

    def _validate_missing(self, value: Any) -> None:
        if value is not None:  # null is the library's to judge, like any other value
            super()._validate_missing(value)

    def _deserialize(
        self, value: Any, attr: str | None, data: Mapping[str, Any] | None, **kwargs: Any
    ) -> Any:
        if not self.spec.live:
            raise ValidationError(NOT_LIVE)
        try:
            return self.spec.coerce(value, from_json=True)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


class _OptionsSchema(Schema):
    """A key that names no option is refused with the library's message."""

    error_messages = {"unknown": UNKNOWN_OPTION}


def _build_limits_schema() -> type[Schema]:
    return _OptionsSchema.from_dict(
        {s.name: OptionValue(s) for s in OPTION_SPECS}, name="LimitsSchema"
    )


#: The schema for ``PATCH api/limits`` bodies: every option, all optional (only live ones
#: may change).
LimitsSchema: type[Schema] = _build_limits_schema()


def load_limit_changes(body: Any) -> dict[str, Any]:
    """Validate a ``PATCH api/limits`` body; return the changes or raise :class:`FieldErrors`.

    >>> load_limit_changes({"max_sessions": 5})
    {'max_sessions': 5}
    >>> load_limit_changes({"max_sessions": 0})
    Traceback (most recent call last):
      ...
    admin_ui.schemas.FieldErrors: max_sessions: must be a positive integer or none
    """
    if not isinstance(body, Mapping):
        raise FieldErrors({"_body": "Send a JSON object of the limits to change."})
    try:
        loaded: dict[str, Any] = LimitsSchema(unknown=RAISE).load(body)
    except ValidationError as exc:
        raise FieldErrors(flatten_messages(exc.messages)) from None
    if not loaded:
        raise FieldErrors({"_body": "Name at least one limit to change."})
    return loaded


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
    """Marshmallow's ``{"field": ["msg", ...]}`` to ``{"field": "msg msg"}`` (``_body`` for
    what is about the whole input; a nested field's message names the rest of its path)."""
    flat: dict[str, list[str]] = {}
    for path, message in error_messages(messages):
        field, rest = (str(path[0]), path[1:]) if path else ("_body", ())
        flat.setdefault(field, []).append(f"{dotted(rest)}: {message}" if rest else message)
    return {field: " ".join(parts) for field, parts in flat.items()}
