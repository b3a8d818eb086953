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
#: A legacy client resuming an SSE stream names the last event it received.
HEADER_LAST_EVENT_ID = "Last-Event-ID"
HEADER_RETRY_AFTER = "Retry-After"
#: W3C trace context (https://www.w3.org/TR/trace-context/), as headers or ``_meta`` keys.
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
HEADER_AUTHORIZATION = "Authorization"
HEADER_WWW_AUTHENTICATE = "WWW-Authenticate"

#: RFC 9728: protected resource metadata lives under this prefix, followed by the path of
#: the endpoint it describes (``/.well-known/oauth-protected-resource/mcp`` for ``/mcp``).
WELL_KNOWN_PROTECTED_RESOURCE = "/.well-known/oauth-protected-resource"

# -- methods ---------------------------------------------------------------------------------
INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
PING = "ping"
LOGGING_SET_LEVEL = "logging/setLevel"
SERVER_DISCOVER = "server/discover"
SUBSCRIPTIONS_LISTEN = "subscriptions/listen"
TOOLS_LIST = "tools/list"
TOOLS_CALL = "tools/call"
PROMPTS_LIST = "prompts/list"
PROMPTS_GET = "prompts/get"
RESOURCES_LIST = "resources/list"
RESOURCES_TEMPLATES_LIST = "resources/templates/list"
RESOURCES_READ = "resources/read"
RESOURCES_SUBSCRIBE = "resources/subscribe"
RESOURCES_UNSUBSCRIBE = "resources/unsubscribe"
COMPLETION_COMPLETE = "completion/complete"
#: Server-to-client requests: what a handler asks its client for.
SAMPLING_CREATE_MESSAGE = "sampling/createMessage"
ELICITATION_CREATE = "elicitation/create"
ROOTS_LIST = "roots/list"
PROGRESS = "notifications/progress"
LOG_MESSAGE = "notifications/message"
CANCELLED = "notifications/cancelled"
SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
RESOURCES_UPDATED = "notifications/resources/updated"
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
ROOTS_LIST_CHANGED = "notifications/roots/list_changed"
ELICITATION_COMPLETE = "notifications/elicitation/complete"

#: The first legacy version whose clients take a priming event (an ``id`` with empty
#: ``data``) and a ``retry`` field on a POST's SSE stream, and poll a stream the server
#: closed (SSE polling, 2025-11-25).
POLLING_VERSION = "2025-11-25"

TASKS_GET = "tasks/get"
TASKS_UPDATE = "tasks/update"
TASKS_CANCEL = "tasks/cancel"
#: 2025-11-25 only: the blocking result fetch and the listing, both removed by the extension.
TASKS_RESULT = "tasks/result"
TASKS_LIST = "tasks/list"
TASKS_STATUS = "notifications/tasks/status"

#: The methods a server answers itself (a custom method may not take one of these names).
SERVER_METHODS = frozenset({
    PING, LOGGING_SET_LEVEL, SERVER_DISCOVER, TOOLS_LIST, TOOLS_CALL, RESOURCES_LIST,
    RESOURCES_TEMPLATES_LIST, RESOURCES_READ, RESOURCES_SUBSCRIBE, RESOURCES_UNSUBSCRIBE,
    PROMPTS_LIST, PROMPTS_GET, COMPLETION_COMPLETE,
})
#: Methods whose handlers may ask for input: at 2026-07-28 they may answer with an
#: input-required result, and their retries carry ``inputResponses``.
INPUT_METHODS = frozenset({TOOLS_CALL, PROMPTS_GET, RESOURCES_READ})

#: The methods whose target is named by a parameter, which the 2026-07-28 ``Mcp-Name``
#: header must repeat: method -> parameter.
NAME_BEARING = {TOOLS_CALL: "name", PROMPTS_GET: "name", RESOURCES_READ: "uri",
                TASKS_GET: "taskId", TASKS_UPDATE: "taskId", TASKS_CANCEL: "taskId"}

# -- extensions ------------------------------------------------------------------------------
#: The tasks extension (SEP-2663): ``capabilities.extensions`` key, in both directions.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

# -- ``_meta`` keys --------------------------------------------------------------------------
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: 2025-11-25 tasks: messages about a task name it here (``{"taskId": ...}``).
META_RELATED_TASK = "io.modelcontextprotocol/related-task"

#: ``notifications/message`` levels, least severe first (RFC 5424 severities).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

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
#: A middleware refused the request (``data`` may say why).
REQUEST_REFUSED = -32030
#: The caller exceeded its request rate (``data.retryAfter`` in seconds).
RATE_LIMITED = -32029
#: The handler asked the client for input (sampling, elicitation, roots) where this request
#: cannot carry a question: ``data.mode`` names why (``stateless``, ``json_response``,
#: ``batch``, ``method``, ``task``); the client may retry where input can flow.
INPUT_UNAVAILABLE = -32031


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
    EVENT_STORE_MAX_BYTES = "event_store_max_bytes"
    RATE_LIMIT_PER_PRINCIPAL = "rate_limit_per_principal"
    #: a tool, resource or prompt with ``max_concurrency`` calls already running,
    MAX_CONCURRENCY = "max_concurrency"
    #: a caller with ``max_concurrent_calls_per_principal`` calls already in flight,
    MAX_CONCURRENT_CALLS_PER_PRINCIPAL = "max_concurrent_calls_per_principal"
    MAX_TASKS = "max_tasks"
    MAX_TASK_RESULT_BYTES = "max_task_result_bytes"
    #: Authentication (see :mod:`tornado_mcp.auth`): no credential where one is required,
    AUTH_MISSING = "auth_missing"
    #: a credential that did not verify (expired, wrong audience or issuer, malformed, ...),
    AUTH_INVALID = "auth_invalid"
    #: a bearer token longer than ``max_bearer_token_bytes``,
    MAX_BEARER_TOKEN_BYTES = "max_bearer_token_bytes"
    #: a valid credential without the scopes the endpoint, tool, resource or prompt needs,
    AUTH_INSUFFICIENT_SCOPE = "auth_insufficient_scope"
    #: a legacy session used by a caller other than the one that opened it (answered 404),
    AUTH_SESSION_MISMATCH = "auth_session_mismatch"
    #: a token the verifier could not judge in time (its outbound bound full; 503),
    AUTH_UNAVAILABLE = "auth_unavailable"
    #: a DPoP proof that did not check out (malformed, wrong key, method, URL, time or
    #: token hash, replayed, or without the server's nonce; see :mod:`tornado_mcp.auth.dpop`),
    AUTH_DPOP = "auth_dpop"
    #: a DPoP proof longer than ``DPoP(max_proof_bytes=...)``,
    DPOP_MAX_PROOF_BYTES = "dpop_max_proof_bytes"
    #: a DPoP proof arriving while ``DPoP(replay_cache_size=...)`` recent ones are remembered.
    DPOP_REPLAY_CACHE_SIZE = "dpop_replay_cache_size"
    FORWARD_IDLE_TIMEOUT = "forward_idle_timeout"
    #: The authorization server (``tornado_mcp.authserver``): a client registered while
    #: ``oauth_max_clients`` are kept and every one has been used,
    OAUTH_MAX_CLIENTS = "oauth_max_clients"
    #: client metadata naming more than ``oauth_max_redirect_uris`` redirect URIs,
    OAUTH_MAX_REDIRECT_URIS = "oauth_max_redirect_uris"
    #: client metadata (a registration or a metadata document) over its byte bound,
    OAUTH_MAX_CLIENT_METADATA_BYTES = "oauth_max_client_metadata_bytes"
    #: a registration past ``oauth_registrations_per_minute`` from one address,
    OAUTH_REGISTRATIONS_PER_MINUTE = "oauth_registrations_per_minute"
    #: an authorization code asked for while ``MAX_CODES`` wait to be traded in.
    OAUTH_PENDING_CODES = "oauth_pending_codes"
