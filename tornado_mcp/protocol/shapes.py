"""marshmallow schemas for the request shapes the transport accepts.

Each schema validates shape only and keeps unknown members (``INCLUDE``), so that a newer
client's additions pass through.  :func:`load` turns a validation failure into a -32602
:class:`~tornado_mcp.protocol.errors.MCPError` whose message names the first offending field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from . import (
    INVALID_PARAMS,
    LOG_LEVELS,
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_VERSION,
)
from .errors import MCPError
from .field_errors import dotted, first_error


class _Open(Schema):
    class Meta:
        unknown = INCLUDE


class StrictDict(fields.Dict):
    """A JSON object (``dict``), nothing else; ``null`` only where allowed."""


class StrictBoolean(fields.Boolean):
    """``true`` or ``false``; not 1, 0 or strings."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("Not a valid boolean.")
        return value


class ImplementationSchema(_Open):
    name = fields.String(required=True)
    version = fields.String(required=True)
    title = fields.String()


class InitializeParamsSchema(_Open):
    protocolVersion = fields.String(required=True)
    capabilities = StrictDict(required=True)
    clientInfo = fields.Nested(ImplementationSchema, required=True)


class EnvelopeSchema(_Open):
    """The 2026-07-28 ``_meta`` envelope every modern request carries."""

    protocol_version = fields.String(required=True, data_key=META_VERSION)
    client_capabilities = StrictDict(required=True, data_key=META_CAPABILITIES)
    client_info = fields.Nested(ImplementationSchema, data_key=META_CLIENT_INFO)
    log_level = fields.String(validate=validate.OneOf(LOG_LEVELS), data_key=META_LOG_LEVEL)
    progress_token = fields.Raw(data_key="progressToken")


class SubscriptionFilterSchema(_Open):
    """``params.notifications`` of ``subscriptions/listen``."""

    toolsListChanged = StrictBoolean()
    promptsListChanged = StrictBoolean()
    resourcesListChanged = StrictBoolean()
    resourceSubscriptions = fields.List(fields.String(), allow_none=False)


class UriParamsSchema(_Open):
    uri = fields.String(required=True)


class ToolCallParamsSchema(_Open):
    name = fields.String(required=True)
    arguments = StrictDict(allow_none=True)


class PromptGetParamsSchema(_Open):
    name = fields.String(required=True)
    arguments = fields.Dict(keys=fields.String(), values=fields.String(), allow_none=True)


class SetLevelParamsSchema(_Open):
    level = fields.String(required=True, validate=validate.OneOf(LOG_LEVELS))


class CompleteParamsSchema(_Open):
    ref = StrictDict(required=True)
    argument = StrictDict(required=True)
    context = StrictDict()


class CursorParamsSchema(_Open):
    cursor = fields.String(allow_none=True)


def _first_error(messages: Any) -> str:
    first = first_error(messages)
    if first is None:
        return "invalid"
    path, message = first
    return f"`{dotted(path)}`: {message}" if path else message


# -- a fast path compiled from each schema's own declarations --------------------------------
#
# marshmallow's per-call machinery costs more than a whole request of bare Tornado.  For the
# schemas on the hot path, ``_plan`` reads the schema's declared fields once and builds a
# checker that vouches only for plainly well-formed input (every present field of the right
# JSON type, every required field present, no field with extra validators present); its
# output is what ``schema.load`` returns for that input.  Anything else goes through
# marshmallow itself, so the schema stays the single definition and the error messages are
# marshmallow's.

_TYPE_CHECKS: dict[type, type | tuple[type, ...]] = {
    fields.String: str, StrictDict: dict, fields.Dict: dict, StrictBoolean: bool,
}
# (data_key, attribute, required, allow_none, check)
_Plan = tuple[tuple[str, str, bool, bool, Any], ...]


def _plan(schema: Schema) -> _Plan:
    """What the generated loader checks of each of ``schema``'s declared fields."""
    plan: list[tuple[str, str, bool, bool, Any]] = []
    for attr, field in schema.fields.items():
        check: Any
        if field.validators:
            check = None  # validated by marshmallow only
        elif type(field) is fields.Raw:
            check = True
        elif isinstance(field, fields.Nested) and isinstance(field.schema, Schema):
            check = _plan(field.schema)
        elif type(field) in _TYPE_CHECKS and (type(field) is not fields.Dict or (
                field.key_field is None and field.value_field is None)):
            check = _TYPE_CHECKS[type(field)]
        else:
            check = None
        plan.append((field.data_key or attr, attr, field.required, field.allow_none, check))
    return tuple(plan)


_Loader = Callable[[dict[str, Any]], "dict[str, Any] | None"]
_loaders: dict[int, _Loader] = {}


def _compiled(schema: Schema) -> _Loader:
    """``schema``'s plan as one generated function, made once per schema: straight-line
    checks, one per declared field (this runs on every request; a loop over the plan cost
    as much again)."""
    loader = _loaders.get(id(schema))
    if loader is None:
        loader = _loaders[id(schema)] = _generate(_plan(schema))
    return loader


def _generate(plan: _Plan) -> _Loader:
    """The source of one loader: per field, only the checks its declaration needs (a
    value stored again only when it is renamed or loaded from a nested schema)."""
    env: dict[str, Any] = {"dict": dict}
    lines = ["def load(data):", "    out = dict(data)"]
    for n, (data_key, attr, required, allow_none, check) in enumerate(plan):
        key = repr(data_key)
        if check is None:  # extra validators: marshmallow's to judge, present or missing
            lines += ["    return None"] if required else \
                [f"    if {key} in data:", "        return None"]
            continue
        body: list[str] = []
        if isinstance(check, tuple):
            env[f"nested{n}"] = _generate(check)
            inner = ["if type(v) is not dict:", "    return None", f"v = nested{n}(v)",
                     "if v is None:", "    return None"]
            body += ["if v is not None:", *("    " + line for line in inner)] \
                if allow_none else inner
        elif check is not True:
            env[f"type{n}"] = check  # str, dict or bool: None never passes for them
            body.append(f"if {'v is not None and ' if allow_none else ''}"
                        f"type(v) is not type{n}:")
            body.append("    return None")
        elif not allow_none:
            body += ["if v is None:", "    return None"]
        if data_key != attr:
            body.append(f"del out[{key}]")
        if data_key != attr or isinstance(check, tuple):
            body.append(f"out[{attr!r}] = v")
        if body:
            lines += [f"    if {key} in data:", f"        v = data[{key}]",
                      *("        " + line for line in body)]
            if required:
                lines += ["    else:", "        return None"]
        elif required:
            lines += [f"    if {key} not in data:", "        return None"]
    lines.append("    return out")
    exec("\n".join(lines), env)
    loader: _Loader = env["load"]
    return loader


def load(schema: Schema, data: Any, what: str) -> dict[str, Any]:
    """Validate ``data`` against ``schema``; raise -32602 naming the offending field."""
    if not isinstance(data, dict):
        raise MCPError(INVALID_PARAMS, f"Invalid params: {what} must be an object")
    fast = _compiled(schema)(data)
    if fast is not None:
        return fast
    try:
        result: dict[str, Any] = schema.load(data)
    except ValidationError as exc:
        raise MCPError(INVALID_PARAMS,
                       f"Invalid params: {what}: {_first_error(exc.messages)}") from None
    return result


INITIALIZE_PARAMS = InitializeParamsSchema()
ENVELOPE = EnvelopeSchema()
SUBSCRIPTION_FILTER = SubscriptionFilterSchema()
URI_PARAMS = UriParamsSchema()
TOOL_CALL_PARAMS = ToolCallParamsSchema()
PROMPT_GET_PARAMS = PromptGetParamsSchema()
SET_LEVEL_PARAMS = SetLevelParamsSchema()
COMPLETE_PARAMS = CompleteParamsSchema()
CURSOR_PARAMS = CursorParamsSchema()
