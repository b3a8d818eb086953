"""marshmallow schemas for the request shapes the transport accepts.

Each schema validates shape only and keeps unknown members (``INCLUDE``), so that a newer
client's additions pass through.  :func:`load` turns a validation failure into a -32602
:class:`~tornado_mcp.errors.MCPError` whose message names the first offending field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marshmallow import INCLUDE, Schema, ValidationError, fields, validate

from .errors import INVALID_PARAMS, MCPError

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


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


def _first_error(messages: Any, path: str = "") -> str:
    if isinstance(messages, Mapping):
        for key, value in messages.items():
            sub = f"{path}.{key}" if path else str(key)
            return _first_error(value, sub)
    if isinstance(messages, list) and messages:
        first = messages[0]
        if isinstance(first, str):
            return f"`{path}`: {first}" if path else first
        return _first_error(first, path)
    return f"`{path}` is invalid" if path else "invalid"


def load(schema: Schema, data: Any, what: str) -> dict[str, Any]:
    """Validate ``data`` against ``schema``; raise -32602 naming the offending field."""
    if not isinstance(data, dict):
        raise MCPError(INVALID_PARAMS, f"Invalid params: {what} must be an object")
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
