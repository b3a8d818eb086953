"""Transport options: one validated object, part of it tunable while the server runs.

Every bound a client can push against lives here.  Each option is described once, in
:data:`OPTION_SPECS`, and that one table drives validation, the command-line flags of the
demo and example servers, the dashboard's tuning form and the docs' reference table.

``None`` removes a bound wherever the spec says ``nullable``.  Options marked ``live`` can
be changed on a running transport with :meth:`Options.update`; the change applies to
new admissions at once, and whatever sessions and streams already hold is left as it is.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .protocol import ALL_VERSIONS

log = logging.getLogger("tornado_mcp.options")

KiB = 1024
MiB = 1024 * 1024

#: An ``initialize``'s params may hold at most this many JSON values (stateful mode).
MAX_INITIALIZE_PARAMS_VALUES = 1024
#: A listen stream may name at most this many distinct resource URIs, whatever the byte bound.
MAX_RESOURCE_SUBSCRIPTION_URIS = 1024
#: A modern request buffers or streams at most this many notifications before its response.
MAX_REQUEST_NOTIFICATIONS = 1000


#: Largest integer an option may be given from JSON (``OptionSpec.coerce(from_json=True)``):
#: 2**53 - 1, the largest every JSON reader, a browser's included, holds exactly.
MAX_JSON_INTEGER = 2**53 - 1

#: :attr:`OptionError.errors` message for a name that is not an option.
UNKNOWN_OPTION = "unknown option"
#: :attr:`OptionError.errors` message for an option :meth:`Options.update` cannot change.
NOT_LIVE = "cannot be changed while the server runs"


class OptionError(ValueError):
    """A transport option was given a value it cannot take.

    ``errors`` maps each offending option name to a message a person can act on.
    """

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{k}: {v}" for k, v in self.errors.items()))


@dataclass(frozen=True)
class OptionSpec:
    name: str
    kind: str  # a key of COERCERS: "int", "seconds", "bool", "hosts", "versions", "tool_bounds"
    default: Any
    nullable: bool
    live: bool
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def coerce(self, value: Any, *, from_json: bool = False) -> Any:
        """Validate ``value`` for this option; return it as the option holds it.

        ``value`` is a Python value, or text as the command line gives it (``"10"``,
        ``"none"``).  With ``from_json=True`` it is a value decoded from JSON instead (the
        dashboard's limits API): a string is then never read as a number or a boolean, a
        whole number written as a float (``5.0``) counts as an integer, since JSON has one
        number type, and an integer may be at most :data:`MAX_JSON_INTEGER`.  The rules and
        the messages are the same either way; each kind's are its :class:`Coercer`'s
        (:data:`COERCERS`).
        """
        coercer = COERCERS[self.kind]
        if from_json:
            value = coercer.read_json(value)
        elif isinstance(value, str):
            value = coercer.read_text(self, value)
        if value is None:
            if self.nullable:
                return None
            raise ValueError("may not be none")
        return coercer.check(self, value, from_json)


#: Command-line words for "no bound" (of a nullable option) and for each boolean.
NONE_WORDS = ("none", "null", "off")
TRUE_WORDS = ("true", "yes", "1", "on")
FALSE_WORDS = ("false", "no", "0", "off")


def _or_none(spec: OptionSpec) -> str:
    return " or none" if spec.nullable else ""


class Coercer:
    """How one kind of option takes a value: :meth:`read_text` reads command-line text,
    :meth:`read_json` adjusts a value decoded from JSON, and :meth:`check` validates what
    either gives (never ``None``: :meth:`OptionSpec.coerce` judges that), returning the
    value as the option holds it."""

    def read_text(self, spec: OptionSpec, text: str) -> Any:
        return text

    def read_json(self, value: Any) -> Any:
        return value

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> Any:
        raise NotImplementedError


class _Number(Coercer):
    """A number from text: ``none`` (when the bound may be off), else the number."""

    def read_text(self, spec: OptionSpec, text: str) -> Any:
        t = text.strip().lower()
        if t in NONE_WORDS and spec.nullable:
            return None
        try:
            return self.parse(t)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None

    def parse(self, text: str) -> int | float:
        raise NotImplementedError


class PositiveInt(_Number):
    """``int``: a count or a size, above zero; from JSON at most :data:`MAX_JSON_INTEGER`."""

    def parse(self, text: str) -> int:
        return int(text)

    def read_json(self, value: Any) -> Any:
        return int(value) if isinstance(value, float) and value.is_integer() else value

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError("must be a positive integer" + _or_none(spec))
        if from_json and value > MAX_JSON_INTEGER:
            raise ValueError(f"must be at most {MAX_JSON_INTEGER}")
        return value


class Seconds(_Number):
    """``seconds``: a finite duration above zero, held as a ``float``."""

    def parse(self, text: str) -> float:
        return float(text)

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> float:
        not_seconds = "must be a positive number of seconds" + _or_none(spec)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(not_seconds)
        try:
            seconds = float(value)
        except OverflowError:  # an int past float's range: no finite number of seconds
            raise ValueError(not_seconds) from None
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(not_seconds)
        return seconds


class Flag(Coercer):
    """``bool``: ``True`` or ``False``; from text, the usual words for either."""

    def read_text(self, spec: OptionSpec, text: str) -> Any:
        t = text.strip().lower()
        if t in NONE_WORDS and spec.nullable:
            return None
        if t in TRUE_WORDS:
            return True
        if t in FALSE_WORDS:
            return False
        raise ValueError("must be true or false")

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> bool:
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value


def _listed(value: Any) -> Any:
    """A comma-separated string as its non-empty items; anything else as it is."""
    if isinstance(value, str):
        return [v for v in (p.strip() for p in value.split(",")) if v]
    return value


class Hosts(Coercer):
    """``hosts``: strings (a list, or comma-separated text), held lower-case in a tuple."""

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> tuple[str, ...]:
        value = _listed(value)
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            raise ValueError("must be a list of strings")
        return tuple(v.lower() for v in value)


class Versions(Coercer):
    """``versions``: known protocol versions (at least one), held in the canonical order."""

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> tuple[str, ...]:
        value = _listed(value)
        if not isinstance(value, list | tuple) or not value:
            raise ValueError("must be a non-empty list of protocol versions")
        unknown = [v for v in value if v not in ALL_VERSIONS]
        if unknown:
            raise ValueError(f"unknown protocol versions {unknown}; "
                             f"known: {list(ALL_VERSIONS)}")
        return tuple(v for v in ALL_VERSIONS if v in value)


class ToolBounds(Coercer):
    """``tool_bounds``: per tool, the bounds an operator overrides
    (:func:`coerce_tool_bounds`); from text, JSON (``none`` or nothing: no overrides)."""

    def read_text(self, spec: OptionSpec, text: str) -> Any:
        try:
            return json.loads(text) if text.strip().lower() not in ("none", "null", "") else {}
        except ValueError:
            raise ValueError(f"{text!r} is not a JSON object") from None

    def check(self, spec: OptionSpec, value: Any, from_json: bool) -> dict[str, dict[str, Any]]:
        return coerce_tool_bounds(value)


#: Each kind of option and its rules.
COERCERS: dict[str, Coercer] = {
    "int": PositiveInt(), "seconds": Seconds(), "bool": Flag(), "hosts": Hosts(),
    "versions": Versions(), "tool_bounds": ToolBounds(),
}


#: The bounds a ``tool_bounds`` entry may override, and what each must be.
TOOL_BOUND_FIELDS: dict[str, str] = {
    "timeout": "must be a positive number of seconds or null",
    "max_concurrency": "must be a positive integer or null",
}


def coerce_tool_bound(field_name: str, value: Any) -> float | int | None:
    """One overridden bound of a tool: ``timeout`` (seconds) or ``max_concurrency``;
    ``None`` removes the bound.  Raises ``ValueError`` with the field's rule."""
    rule = TOOL_BOUND_FIELDS.get(field_name)
    if rule is None:
        raise ValueError("unknown field; known: " + ", ".join(TOOL_BOUND_FIELDS))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(rule)
    if field_name == "max_concurrency":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or value <= 0 or value > MAX_JSON_INTEGER:
            raise ValueError(rule)
        return value
    try:
        seconds = float(value)
    except OverflowError:
        raise ValueError(rule) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(rule)
    return seconds


def coerce_tool_bounds(value: Any) -> dict[str, dict[str, Any]]:
    """A ``tool_bounds`` value: ``{tool: {"timeout": s|None, "max_concurrency": n|None}}``,
    each entry holding only the bounds it overrides."""
    if not isinstance(value, Mapping):
        raise ValueError("must map tool names to {timeout, max_concurrency} objects")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        if not isinstance(name, str) or not isinstance(entry, Mapping):
            raise ValueError("must map tool names to {timeout, max_concurrency} objects")
        bounds: dict[str, Any] = {}
        for field_name, bound in entry.items():
            try:
                bounds[field_name] = coerce_tool_bound(str(field_name), bound)
            except ValueError as exc:
                raise ValueError(f"{name}.{field_name} {exc}") from None
        if bounds:
            out[name] = bounds
    return out


OPTION_SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("stateless", "bool", False, False, False,
               "No sessions: every POST stands alone; GET answers 405."),
    OptionSpec("json_response", "bool", False, False, False,
               "Answer legacy requests with one application/json body instead of SSE."),
    OptionSpec("protocol_versions", "versions", ALL_VERSIONS, False, False,
               "Protocol versions served; e.g. only 2026-07-28 for a modern-only endpoint."),
    OptionSpec("serve_subscriptions_listen", "bool", True, False, False,
               "Serve subscriptions/listen streams (False for hosts that buffer responses)."),
    OptionSpec("dns_rebinding_protection", "bool", True, False, False,
               "Check Host and Origin on every request (403 when they do not match)."),
    OptionSpec("allowed_hosts", "hosts", (), False, False,
               "Extra Host values accepted besides loopback (bare host or host:port)."),
    OptionSpec("allowed_origins", "hosts", (), False, False,
               "Extra Origin values accepted besides same-origin."),
    OptionSpec("max_sessions", "int", 10_000, True, True,
               "Concurrent legacy sessions; initialize over it is 503."),
    OptionSpec("session_idle_timeout", "seconds", 1800.0, True, True,
               "Seconds a session with nothing in flight may stay idle."),
    OptionSpec("max_request_bytes", "int", 4 * MiB, False, True,
               "Largest POST body, in bytes (413 over it)."),
    OptionSpec("body_timeout", "seconds", None, True, True,
               "Seconds a POST body may take to arrive whole; a body still arriving then is "
               "cut off (kept by the endpoint at no cost per request; the servers started "
               "here default to 60)."),
    OptionSpec("max_initialize_request_bytes", "int", 64 * KiB, True, True,
               "Largest initialize body in stateful mode, in bytes (413 over it)."),
    OptionSpec("max_listen_subscriptions", "int", 1000, True, True,
               "Concurrent subscriptions/listen streams (503 over it)."),
    OptionSpec("max_resource_subscription_bytes", "int", 64 * KiB, True, True,
               "Summed UTF-8 bytes of the distinct URIs one listen stream names."),
    OptionSpec("listen_keepalive_interval", "seconds", 15.0, True, True,
               "Seconds between keepalive comments on listen streams."),
    OptionSpec("sse_keepalive_interval", "seconds", 15.0, True, True,
               "Seconds between keepalive comments on idle legacy SSE streams."),
    OptionSpec("shutdown_grace", "seconds", 30.0, True, True,
               "Seconds requests and task runs in flight may take to finish at shutdown "
               "before they are cancelled."),
    OptionSpec("server_to_client_request_timeout", "seconds", 600.0, False, True,
               "Default wait for sampling, elicitation, roots and ping answers."),
    OptionSpec("max_stream_queue", "int", 1000, False, True,
               "Frames one SSE stream may have queued; a consumer past it is disconnected."),
    OptionSpec("stream_stall_timeout", "seconds", 30.0, True, True,
               "Seconds a stream's client may take nothing while data waits for it (in our "
               "queue or the kernel's) before it is dropped."),
    OptionSpec("cluster_outage_buffer", "int", 10_000, False, True,
               "Notifications kept for Redis while it is unreachable; newer ones are dropped."),
    OptionSpec("cluster_stream_length", "int", 10_000, False, False,
               "Approximate length the shared Redis notification stream is trimmed to."),
    OptionSpec("cluster_heartbeat_ttl", "seconds", 5.0, False, False,
               "Seconds a process stays listed in its cluster after its last heartbeat."),
    OptionSpec("cluster_wide_limits", "bool", False, False, False,
               "Count max_sessions and max_listen_subscriptions over the whole cluster."),
    OptionSpec("resumable_streams", "bool", False, False, False,
               "Legacy SSE streams carry event ids and can be resumed with GET + Last-Event-ID."),
    OptionSpec("event_store_max_bytes", "int", 1 * MiB, False, True,
               "Bytes of stream events one session keeps for resumption (oldest dropped)."),
    OptionSpec("event_store_max_age", "seconds", 300.0, False, True,
               "Seconds a stream event is kept for resumption."),
    OptionSpec("sse_retry_interval", "seconds", 1.0, False, True,
               "The retry a resumable stream tells its client to wait before reconnecting."),
    OptionSpec("cors_allowed_origins", "hosts", (), False, False,
               "Origins browsers may call from (CORS); each also passes the Origin check."),
    OptionSpec("rate_limit_per_principal", "int", None, True, True,
               "Requests one caller may make per minute (429 over it); shared by the "
               "processes of a cluster."),
    OptionSpec("max_concurrent_calls_per_principal", "int", None, True, True,
               "Tool calls, resource reads and prompt gets one caller may have in flight "
               "at once (429 over it)."),
    OptionSpec("tool_bounds", "tool_bounds", {}, False, True,
               "Operator overrides of tools' timeout and max_concurrency, as JSON: "
               '{"tool": {"timeout": 2, "max_concurrency": null}} (null removes a bound).'),
    OptionSpec("max_audit_entries", "int", 1000, False, True,
               "Calls the in-memory audit trail keeps (oldest dropped)."),
    OptionSpec("sync_handler_threads", "int", 4, True, False,
               "Threads running plain def handlers off the IOLoop; none runs them on it."),
    OptionSpec("max_tasks", "int", 1000, True, True,
               "Tasks kept at once, running or finished within their TTL; a new task over it "
               "is refused."),
    OptionSpec("max_task_result_bytes", "int", 256 * KiB, True, True,
               "Largest task result kept, in JSON bytes; a task over it fails instead."),
    OptionSpec("task_ttl", "seconds", 3600.0, False, True,
               "Seconds a task is kept from its creation; work still running then is "
               "cancelled."),
    OptionSpec("max_bearer_token_bytes", "int", 8 * KiB, False, True,
               "Longest bearer token an OAuth endpoint verifies, in bytes (401 over it)."),
    OptionSpec("hide_unauthorized", "bool", False, False, True,
               "Lists leave out tools, prompts and resources the caller lacks the scopes "
               "for; a call naming one answers as an unknown name."),
    OptionSpec("forward_idle_timeout", "seconds", 60.0, True, True,
               "Seconds a request forwarded to its session's process may wait for a byte."),
    OptionSpec("oauth_max_clients", "int", 1000, False, True,
               "OAuth clients the built-in authorization server keeps; past it a client "
               "nobody authorized makes room, else registration is refused (503)."),
    OptionSpec("oauth_max_redirect_uris", "int", 10, False, True,
               "Redirect URIs one OAuth client may register (400 over it)."),
    OptionSpec("oauth_max_client_metadata_bytes", "int", 8 * KiB, False, True,
               "Largest client registration or Client ID Metadata Document, in bytes."),
    OptionSpec("oauth_registrations_per_minute", "int", 10, True, True,
               "Client registrations one address may make per minute (429 over it)."),
)

SPECS_BY_NAME: dict[str, OptionSpec] = {s.name: s for s in OPTION_SPECS}
LIVE_OPTIONS: tuple[str, ...] = tuple(s.name for s in OPTION_SPECS if s.live)

Listener = Callable[[dict[str, tuple[Any, Any]], str], None]


class Options:
    """Every option of the serving (the HTTP transport, stdio and the engine they share),
    validated at construction and tunable live.

    >>> opts = Options(max_sessions=5, session_idle_timeout=None)
    >>> opts.max_sessions
    5
    >>> opts.update({"max_sessions": 10}, actor="ops")
    {'max_sessions': (5, 10)}

    Reading an attribute is cheap and always sees a consistent value; :meth:`update`
    validates every change first and applies all of them or none.
    """

    # Every option is a slot, so reading one is a plain attribute access.
    __slots__ = ("_listeners", "_lock", "_values", *SPECS_BY_NAME)

    _lock: threading.Lock
    _listeners: list[Listener]
    _values: dict[str, Any]

    stateless: bool
    json_response: bool
    protocol_versions: tuple[str, ...]
    serve_subscriptions_listen: bool
    dns_rebinding_protection: bool
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    max_sessions: int | None
    session_idle_timeout: float | None
    max_request_bytes: int
    body_timeout: float | None
    max_initialize_request_bytes: int | None
    max_listen_subscriptions: int | None
    max_resource_subscription_bytes: int | None
    listen_keepalive_interval: float | None
    sse_keepalive_interval: float | None
    shutdown_grace: float | None
    server_to_client_request_timeout: float
    max_stream_queue: int
    stream_stall_timeout: float | None
    cluster_outage_buffer: int
    cluster_stream_length: int
    cluster_heartbeat_ttl: float
    cluster_wide_limits: bool
    resumable_streams: bool
    event_store_max_bytes: int
    event_store_max_age: float
    sse_retry_interval: float
    cors_allowed_origins: tuple[str, ...]
    rate_limit_per_principal: int | None
    max_concurrent_calls_per_principal: int | None
    tool_bounds: dict[str, dict[str, Any]]
    max_audit_entries: int
    sync_handler_threads: int | None
    max_tasks: int | None
    max_task_result_bytes: int | None
    task_ttl: float
    max_bearer_token_bytes: int
    hide_unauthorized: bool
    forward_idle_timeout: float | None
    oauth_max_clients: int
    oauth_max_redirect_uris: int
    oauth_max_client_metadata_bytes: int
    oauth_registrations_per_minute: int | None

    def __init__(self, **values: Any) -> None:
        object.__setattr__(self, "_lock", threading.Lock())
        object.__setattr__(self, "_listeners", [])
        unknown = sorted(set(values) - set(SPECS_BY_NAME))
        if unknown:
            raise OptionError({k: UNKNOWN_OPTION for k in unknown})
        resolved = {s.name: s.default for s in OPTION_SPECS}
        resolved.update(self._validate(values))
        if resolved["stateless"]:
            # Nothing is retained per session in stateless mode, so these bounds do not apply.
            if "session_idle_timeout" in values and values["session_idle_timeout"] is not None:
                raise OptionError({"session_idle_timeout": "is not supported in stateless mode"})
            resolved["session_idle_timeout"] = None
        self._store(resolved)

    def _store(self, values: dict[str, Any]) -> None:
        object.__setattr__(self, "_values", values)
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @staticmethod
    def _validate(values: Mapping[str, Any]) -> dict[str, Any]:
        errors: dict[str, str] = {}
        out: dict[str, Any] = {}
        for name, value in values.items():
            spec = SPECS_BY_NAME.get(name)
            if spec is None:
                errors[name] = UNKNOWN_OPTION
                continue
            try:
                out[name] = spec.coerce(value)
            except ValueError as exc:
                errors[name] = str(exc)
        if errors:
            raise OptionError(errors)
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        self.update({name: value})

    def update(self, changes: Mapping[str, Any], actor: str = "code") -> dict[str, tuple[Any, Any]]:
        """Validate and apply live changes; return ``{name: (old, new)}`` for what changed.

        Raises :class:`OptionError` (listing every bad field) and changes nothing when any
        value is invalid or names an option that cannot change while running.
        """
        not_live = {k: NOT_LIVE for k in changes
                    if k in SPECS_BY_NAME and not SPECS_BY_NAME[k].live}
        if not_live:
            raise OptionError(not_live)
        validated = self._validate(changes)
        with self._lock:
            if self._values["stateless"] and validated.get("session_idle_timeout") is not None:
                raise OptionError({"session_idle_timeout": "is not supported in stateless mode"})
            new = dict(self._values)
            diff = {k: (new[k], v) for k, v in validated.items() if new[k] != v}
            new.update(validated)
            self._store(new)
            listeners = list(self._listeners)
        if diff:
            log.info("limits changed by %s: %s", actor,
                     ", ".join(f"{k} {o!r} -> {n!r}" for k, (o, n) in diff.items()))
            for listener in listeners:
                listener(diff, actor)
        return diff

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(diff, actor)`` after every change that altered something."""
        with self._lock:
            self._listeners.append(listener)

    def as_dict(self, names: Iterable[str] | None = None) -> dict[str, Any]:
        values = self._values
        return {n: values[n] for n in (names or SPECS_BY_NAME)}

    def live_values(self) -> dict[str, Any]:
        return self.as_dict(LIVE_OPTIONS)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if SPECS_BY_NAME[k].default != v}
        return f"Options({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
