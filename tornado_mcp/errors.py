"""JSON-RPC and MCP error codes, and the exceptions that carry them.

Raise :class:`MCPError` (or one of its helpers) from a handler to answer with a JSON-RPC
error; anything else a handler raises becomes -32603 with a generic message, and the
exception is logged on the server, never sent to the client.
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001
RESOURCE_NOT_FOUND_LEGACY = -32002
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
URL_ELICITATION_REQUIRED = -32042

#: Codes that the 2026-07-28 HTTP binding answers with 400 (and -32601 with 404).
MODERN_BAD_REQUEST_CODES = frozenset(
    {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, HEADER_MISMATCH,
     MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


class MCPError(Exception):
    """A JSON-RPC error to send back: ``code``, ``message`` and optional ``data``.

    ``http_status`` overrides the status the transport would choose for it.
    """

    def __init__(self, code: int, message: str, data: Any = None,
                 http_status: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.http_status = http_status

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


def invalid_params(message: str, data: Any = None) -> MCPError:
    return MCPError(INVALID_PARAMS, message, data)


def method_not_found(method: str) -> MCPError:
    return MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")


class ResourceNotFound(MCPError):
    """Raise from a resource handler when ``uri`` names nothing.

    The transport answers -32002 in the legacy era and -32602 at 2026-07-28, both with
    ``data.uri``.
    """

    def __init__(self, uri: str) -> None:
        super().__init__(RESOURCE_NOT_FOUND_LEGACY, "Resource not found", {"uri": uri})
        self.uri = uri


class ToolError(Exception):
    """Raise from a tool to return a tool result with ``isError: true`` and this message."""


class MissingClientCapability(MCPError):
    """The request needs a client capability its sender did not declare (-32021)."""

    def __init__(self, required: dict[str, Any]) -> None:
        super().__init__(MISSING_CLIENT_CAPABILITY, "Missing required client capability",
                         {"requiredCapabilities": required})
