"""Bounds on calls, per tool and per caller, their statistics and the audit trail.

Every ``tools/call``, ``resources/read`` and ``prompts/get`` the engine dispatches, and
every task run, goes through :meth:`Governance.call`, on every transport:

* a caller (the principal's subject, else ``address:<ip>``) with
  ``max_concurrent_calls_per_principal`` calls in flight is refused at once;
* a tool (resource, prompt) with ``max_concurrency`` calls running is refused at once;
  both refusals are -32029 with ``data.retryAfter``, and HTTP 429 with ``Retry-After``
  where the era answers a request on its own;
* a call running past its ``timeout`` is cancelled and answered as a tool error naming
  the timeout (-32603 naming it for a resource or a prompt).  A plain ``def`` running in
  the pool cannot be interrupted: its result is dropped, and it is counted in flight
  (against ``max_concurrency`` too) until its thread returns;
* each call is counted for its tool and its caller (calls, errors, refusals, in flight,
  a latency histogram of fixed buckets) and recorded in the audit trail
  (:mod:`tornado_mcp.engine.audit`).

A task run is not refused (its creating call was admitted) but is bounded by the timeout
and counted in flight.  The bounds in force are the operator's ``tool_bounds`` override
when it names the bound, else what the tool declared (:mod:`tornado_mcp.server.bounds`).
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from ..introspection import LATENCY_BUCKETS, PrincipalInfo, ToolInfo
from ..protocol import (
    INTERNAL_ERROR,
    META_SERVER_INFO,
    PROMPTS_GET,
    RATE_LIMITED,
    RESOURCES_READ,
    TOOLS_CALL,
    Refusal,
)
from ..protocol.errors import MCPError, Refused
from ..protocol.identity import caller_key
from ..server.bounds import CallBounds
from ..sync.handlers import CURRENT as CURRENT_RUNNER
from ..sync.handlers import SyncRunner
from .audit import TRACE_ID, AuditTrail, bounded, bounded_id, digest, kept_arguments

if TYPE_CHECKING:
    from ..options import Options
    from ..server.context import Context
    from ..server.server import Server

#: The methods governed, and the param naming each one's target.
GOVERNED: dict[str, str] = {TOOLS_CALL: "name", RESOURCES_READ: "uri", PROMPTS_GET: "name"}
KINDS = {TOOLS_CALL: "tool", RESOURCES_READ: "resource", PROMPTS_GET: "prompt"}
OUTCOMES = ("ok", "error", "refused", "timeout", "cancelled")
#: Callers whose statistics are kept at most; the least recently seen is dropped.
MAX_PRINCIPALS = 1000
#: Seconds a client refused by a concurrency bound is told to wait.
RETRY_AFTER_BUSY_S = 1
_NO_BOUNDS = CallBounds()
_NO_OVERRIDE: dict[str, Any] = {}

#: What a governed call runs: ``inner(method, params, ctx)`` (the engine's handler).
Inner = Callable[[str, dict[str, Any], "Context"], Awaitable[dict[str, Any]]]


class TargetStats:
    """What the calls of one tool, resource or prompt did."""

    __slots__ = ("buckets", "calls", "duration_sum", "errors", "in_flight", "kind", "method",
                 "name", "outcomes", "refusals")

    def __init__(self, method: str, name: str) -> None:
        self.method, self.name, self.kind = method, name, KINDS[method]
        self.calls = self.errors = self.refusals = self.in_flight = 0
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.duration_sum = 0.0

    def percentile(self, q: float) -> float | None:
        """The ``q`` quantile in milliseconds, interpolated in its histogram bucket."""
        total = sum(self.buckets)
        if not total:
            return None
        rank, seen = q * total, 0
        for i, count in enumerate(self.buckets):
            if count and seen + count >= rank:
                low = LATENCY_BUCKETS[i - 1] if i else 0.0
                high = LATENCY_BUCKETS[i] if i < len(LATENCY_BUCKETS) else low * 2
                return round((low + (high - low) * (rank - seen) / count) * 1000, 3)
            seen += count
        return None  # pragma: no cover


class CallerStats:
    __slots__ = ("calls", "errors", "last_seen", "refusals")

    def __init__(self) -> None:
        self.calls = self.errors = self.refusals = 0
        self.last_seen = 0.0


class _PoolWatch:
    """Stands in for the pool during a call with a timeout: counts the threads it runs,
    so a timed-out plain ``def`` is counted until its thread returns."""

    __slots__ = ("loop", "on_idle", "runner", "running", "threads")

    def __init__(self, runner: SyncRunner) -> None:
        self.runner, self.threads = runner, runner.threads
        self.running = 0
        self.on_idle: Callable[[], None] | None = None
        self.loop = asyncio.get_running_loop()

    def submit(self, fn: Callable[..., Any], kwargs: dict[str, Any]) -> asyncio.Future[Any]:
        self.running += 1
        loop = self.loop

        def watched(**kw: Any) -> Any:
            try:
                return fn(**kw)
            finally:
                loop.call_soon_threadsafe(self._returned)

        return self.runner.submit(watched, kwargs)

    def _returned(self) -> None:
        self.running -= 1
        if not self.running and self.on_idle is not None:
            on_idle, self.on_idle = self.on_idle, None
            on_idle()


def _nothing() -> None:
    return None


class Governance:
    """One engine's call bounds, statistics and audit trail; see the module docstring."""

    def __init__(self, server: Server, options: Options,
                 sync_runner: SyncRunner) -> None:
        self.server, self.options, self.sync_runner = server, options, sync_runner
        self.targets: dict[tuple[str, str], TargetStats] = {}
        self.callers: OrderedDict[str, CallerStats] = OrderedDict()
        self.caller_in_flight: dict[str, int] = {}
        #: The slot (target, caller) of each call running now, by id of its context; a
        #: call that creates a task hands its slot to the task (:meth:`hand_over`).
        #: The calls in flight holding a slot (a task's creating call hands its over).
        self._slots: dict[Context, tuple[TargetStats | None, str]] = {}
        self._handed: set[Context] = set()
        self.trail = AuditTrail(options.max_audit_entries)
        #: This process's id in its cluster (set by the cluster), for the audit records.
        self.process_id: str | None = None
        options.subscribe(self._options_changed)

    def _options_changed(self, diff: dict[str, tuple[Any, Any]], actor: str) -> None:
        if "max_audit_entries" in diff:
            self.trail.resize(self.options.max_audit_entries)

    # -- lookups ----------------------------------------------------------------------------
    def target(self, method: str, name: str) -> TargetStats | None:
        """The statistics of a registered target (``None`` for a name nothing answers to,
        so a client cannot make us keep one row per name it invents)."""
        stats = self.targets.get((method, name))
        if stats is not None:
            return stats
        key = (method, name)
        server = self.server
        if method == TOOLS_CALL:
            known = name in server.registry.tools
        elif method == PROMPTS_GET:
            known = name in server.registry.prompts
        else:
            known = name in server.registry.resources
            if not known:
                key = (method, self._template_of(name) or "")
                known = bool(key[1])
                if known and key in self.targets:
                    return self.targets[key]
        if not known:
            return None
        stats = self.targets[key] = TargetStats(*key)
        return stats

    def _template_of(self, uri: str) -> str | None:
        """The template with declared bounds that ``uri`` matches, if any."""
        templates = self.server.registry.templates
        for method, name in self.server.call_bounds:
            if method == RESOURCES_READ and name in templates \
                    and templates[name].template.match(uri) is not None:
                return name
        return None

    def bounds(self, stats: TargetStats) -> tuple[float | None, int | None]:
        """The timeout and max_concurrency in force for ``stats``' target."""
        declared = self.server.call_bounds.get((stats.method, stats.name), _NO_BOUNDS)
        override = self.options.tool_bounds.get(stats.name, _NO_OVERRIDE) \
            if stats.method == TOOLS_CALL else _NO_OVERRIDE
        return (override.get("timeout", declared.timeout),
                override.get("max_concurrency", declared.max_concurrency))

    # -- the call ----------------------------------------------------------------------------
    async def call(self, ctx: Context, inner: Inner, task_run: bool = False,
                   known: bool = True) -> dict[str, Any]:
        """Run ``inner(method, params, ctx)`` within the bounds of its target and its
        caller (``known=False``: a target hidden from this caller, governed as a name
        nothing answers to).  (Written flat: this runs around every call, and each helper
        call costs.)"""
        started = perf_counter()
        method = ctx.method
        name = ctx.params.get(GOVERNED[method])
        if type(name) is not str:
            name = ""
        stats = (self.targets.get((method, name)) or self.target(method, name)) if known \
            else None
        caller = caller_key(ctx.principal, ctx.remote_ip)
        callers = self.callers
        who = callers.get(caller)
        if who is None:
            who = self._new_caller(caller)
        else:
            callers.move_to_end(caller)
        flying = self.caller_in_flight
        outcome, code = "ok", None
        declared: CallBounds | None = None
        timeout: float | None = None
        watch: _PoolWatch | None = None
        held = False
        try:
            if stats is not None:
                declared = self.server.call_bounds.get((stats.method, stats.name))
                if declared is not None or self.options.tool_bounds:
                    timeout, limit = self.bounds(stats)
                    if limit is not None and stats.in_flight >= limit and not task_run:
                        raise _busy(f"{stats.kind} {name} has {limit} calls running "
                                    f"(its max_concurrency)", Refusal.MAX_CONCURRENCY)
            cap = self.options.max_concurrent_calls_per_principal
            if cap is not None and not task_run and flying.get(caller, 0) >= cap:
                raise _busy(f"this caller has {cap} calls in flight (the "
                            f"max_concurrent_calls_per_principal limit)",
                            Refusal.MAX_CONCURRENT_CALLS_PER_PRINCIPAL)
            held = True
            if not task_run:  # a task's runs use the slot its creating call handed over
                if stats is not None:
                    stats.in_flight += 1
                flying[caller] = flying.get(caller, 0) + 1
                self._slots[ctx] = (stats, caller)
            if timeout is None:
                result = await inner(method, ctx.params, ctx)
            else:
                watch = _PoolWatch(self.sync_runner)
                result = await self._timed(ctx, inner, timeout, watch, name)
                if result is _TIMED_OUT:
                    outcome = "timeout"
                    result = self._timeout_result(ctx, method, name, timeout)
            if result.get("isError") is True and outcome == "ok":
                outcome = "error"
            return result
        except Refused as exc:
            outcome, code = "refused", exc.code
            raise
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        except MCPError as exc:
            outcome = "timeout" if outcome == "timeout" else "error"
            code = exc.code
            raise
        except Exception:
            outcome, code = "error", INTERNAL_ERROR
            raise
        finally:
            seconds = perf_counter() - started
            now = time.time()
            who.last_seen = now
            who.calls += 1
            if outcome != "ok":
                if outcome == "refused":
                    who.refusals += 1
                elif outcome == "error" or outcome == "timeout":
                    who.errors += 1
            if held and not task_run:
                self._slots.pop(ctx, None)
                if self._handed and ctx in self._handed:  # now the task's, released when
                    self._handed.discard(ctx)  # its run ends
                elif watch is not None and watch.running:
                    watch.on_idle = lambda: self._release(stats, caller)
                else:
                    if stats is not None:
                        stats.in_flight -= 1
                    left = flying[caller] - 1
                    if left:
                        flying[caller] = left
                    else:
                        del flying[caller]
            if stats is not None:
                stats.calls += 1
                stats.outcomes[outcome] += 1
                if outcome == "refused":
                    stats.refusals += 1
                elif outcome == "error" or outcome == "timeout":
                    stats.errors += 1
                if held:
                    stats.buckets[bisect_left(LATENCY_BUCKETS, seconds)] += 1
                    stats.duration_sum += seconds
            params = ctx.params
            arguments = {"uri": name} if method == RESOURCES_READ else params.get("arguments")
            kept = kept_arguments(arguments or {}, declared.redact) \
                if declared is not None and declared.audit_arguments else None
            session = ctx.session
            rid = ctx.request_id
            if type(rid) is not int or not -_INT64 <= rid < _INT64:
                rid = bounded_id(rid)  # short ids (most) are kept as they are
            self.trail.add((now, caller if len(caller) <= _SHORT else bounded(caller), method,
                            name if len(name) <= _SHORT else bounded(name), digest(arguments),
                            outcome, code, seconds, rid, session.id if session else None,
                            TRACE_ID.get(), self.process_id, kept))

    async def _timed(self, ctx: Context, inner: Inner, timeout: float, watch: _PoolWatch,
                     name: str) -> dict[str, Any]:
        token = CURRENT_RUNNER.set(watch)  # type: ignore[arg-type]
        try:
            async with asyncio.timeout(timeout) as scope:
                return await inner(ctx.method, ctx.params, ctx)
        except TimeoutError:
            if not scope.expired():
                raise
            return _TIMED_OUT
        finally:
            CURRENT_RUNNER.reset(token)

    def _timeout_result(self, ctx: Context, method: str, name: str,
                        timeout: float) -> dict[str, Any]:
        message = f"{KINDS[method].capitalize()} {name} timed out after {timeout:g} s " \
                  f"(its timeout) and was cancelled"
        if method != TOOLS_CALL:
            raise MCPError(INTERNAL_ERROR, message, {"timeout": timeout})
        result: dict[str, Any] = {"content": [{"type": "text", "text": message}],
                                  "isError": True}
        if ctx.modern:
            result["resultType"] = "complete"
            result["_meta"] = {META_SERVER_INFO: self.server.server_info()}
        return result

    # -- bookkeeping -------------------------------------------------------------------------
    def _new_caller(self, caller: str) -> CallerStats:
        callers = self.callers
        if len(callers) >= MAX_PRINCIPALS:
            callers.popitem(last=False)
        who = callers[caller] = CallerStats()
        return who

    def hand_over(self, ctx: Context) -> Callable[[], None]:
        """The slot of the call ``ctx`` is handling, for the task it creates: kept when the
        call returns, so the tool's ``max_concurrency`` and the caller's count hold from
        the call's admission until the task's run ends; the returned function releases it
        (once).  A call not governed has no slot: nothing to release."""
        slot = self._slots.get(ctx)
        if slot is None or ctx in self._handed:
            return _nothing
        self._handed.add(ctx)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._release(*slot)

        return release

    def _release(self, stats: TargetStats | None, caller: str) -> None:
        if stats is not None:
            stats.in_flight -= 1
        left = self.caller_in_flight.get(caller, 1) - 1
        if left > 0:
            self.caller_in_flight[caller] = left
        else:
            self.caller_in_flight.pop(caller, None)

    # -- introspection -----------------------------------------------------------------------
    def tool_rows(self) -> tuple[ToolInfo, ...]:
        """Every registered tool, then every resource and prompt that has been called or
        declares bounds, with its statistics."""
        server = self.server
        names = [(TOOLS_CALL, n) for n in server.registry.tools]
        names += [k for k in self.targets if k[0] != TOOLS_CALL]
        names += [k for k in server.call_bounds if k[0] != TOOLS_CALL and k not in names]
        rows = []
        for key in names:
            stats = self.targets.get(key) or TargetStats(*key)
            timeout, limit = self.bounds(stats)
            rows.append(ToolInfo(
                name=stats.name, kind=stats.kind, calls=stats.calls, errors=stats.errors,
                refusals=stats.refusals, timeouts=stats.outcomes["timeout"],
                in_flight=stats.in_flight, timeout=timeout, max_concurrency=limit,
                p50_ms=stats.percentile(0.5), p99_ms=stats.percentile(0.99),
                outcomes=dict(stats.outcomes), buckets=tuple(stats.buckets),
                duration_sum=stats.duration_sum))
        return tuple(rows)

    def principal_rows(self) -> tuple[PrincipalInfo, ...]:
        flying = self.caller_in_flight
        return tuple(PrincipalInfo(principal=key, calls=c.calls, errors=c.errors,
                                   refusals=c.refusals, in_flight=flying.get(key, 0),
                                   last_seen=c.last_seen)
                     for key, c in reversed(self.callers.items()))


_TIMED_OUT: dict[str, Any] = {}
#: A name or caller this long (characters) is within the audit's field bound whatever it
#: holds (four bytes a character at most); longer ones are checked (:func:`bounded`).
_SHORT = 64
_INT64 = 2 ** 63


def _busy(what: str, refusal: Refusal) -> Refused:
    return Refused(f"Too many concurrent calls: {what}; retry after {RETRY_AFTER_BUSY_S} s",
                   code=RATE_LIMITED, retry_after=RETRY_AFTER_BUSY_S, refusal=refusal)
