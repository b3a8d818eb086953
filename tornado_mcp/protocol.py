"""The protocol's vocabulary, in one place: versions, headers, methods, ``_meta`` keys,
error codes, and the enums the transport counts and routes by.

Everything that names a piece of MCP on the wire is defined here once and imported
wherever it is used, so a typo is a ``NameError`` rather than a new, silent meaning.
"""

from __future__ import annotations

import enum

# -- protocol versions ---------------------------------------------------------------------
#: The legacy era: ``initialize``, ``Mcp-Session-Id`` sessions, the GET stream.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
#: The modern era: stateless requests carrying the ``_meta`` envelope.
MODERN_VERSIONS = ("2026-07-28",)
ALL_VERSIONS = MODERN_VERSIONS + LEGACY_VERSIONS
#: What a legacy request without an ``MCP-Protocol-Version`` header is taken to speak.
DEFAULT_LEGACY_VERSION = "2025-03-26"
#: The only legacy version that allowed JSON-RPC batches.
BATCHING_VERSION = "2025-03-26"


class Era(enum.Enum):
    """The two protocol eras one endpoint serves, chosen per request."""

    LEGACY = "legacy"
    MODERN = "modern"


# -- HTTP headers ----------------------------------------------------------------------------
HEADER_PROTOCOL_VERSION = "MCP-Protocol-Version"
HEADER_SESSION_ID = "Mcp-Session-Id"
HEADER_METHOD = "Mcp-Method"
HEADER_NAME = "Mcp-Name"
HEADER_PARAM_PREFIX = "Mcp-Param-"

# -- methods ---------------------------------------------------------------------------------
INITIALIZE = "initialize"
SERVER_DISCOVER = "server/discover"
SUBSCRIPTIONS_LISTEN = "subscriptions/listen"
TOOLS_CALL = "tools/call"
PROMPTS_GET = "prompts/get"
RESOURCES_READ = "resources/read"
CANCELLED = "notifications/cancelled"
SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
RESOURCES_UPDATED = "notifications/resources/updated"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"

#: The methods whose target is named by a parameter, which the 2026-07-28 ``Mcp-Name``
#: header must repeat: method -> parameter.
NAME_BEARING = {TOOLS_CALL: "name", PROMPTS_GET: "name", RESOURCES_READ: "uri"}

# -- ``_meta`` keys --------------------------------------------------------------------------
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# -- JSON-RPC and MCP error codes ----------------------------------------------------------
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

#: Codes that the 2026-07-28 HTTP binding answers with 400 (and -32601 with 404).
MODERN_BAD_REQUEST_CODES = frozenset(
    {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, HEADER_MISMATCH,
     MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


class Refusal(enum.StrEnum):
    """Why the transport refused something a client asked it to keep, one per bound.

    Counted in :attr:`tornado_mcp.Snapshot.refusals` under the member's value, which
    is the name of the option (or fixed bound) that refused it.
    """

    MAX_REQUEST_BYTES = "max_request_bytes"
    JSON_NESTING = "json_nesting"
    MAX_SESSIONS = "max_sessions"
    MAX_INITIALIZE_REQUEST_BYTES = "max_initialize_request_bytes"
    INITIALIZE_PARAMS_VALUES = "initialize_params_values"
    MAX_LISTEN_SUBSCRIPTIONS = "max_listen_subscriptions"
    MAX_RESOURCE_SUBSCRIPTION_BYTES = "max_resource_subscription_bytes"
    RESOURCE_SUBSCRIPTION_URIS = "resource_subscription_uris"
    MAX_STREAM_QUEUE = "max_stream_queue"
    STREAM_STALL_TIMEOUT = "stream_stall_timeout"
    CLUSTER_OUTAGE_BUFFER = "cluster_outage_buffer"
    FORWARD_IDLE_TIMEOUT = "forward_idle_timeout"
