"""What a tool, resource or prompt declares about its own calls: how long one may run,
how many may run at once, and what the audit trail may keep of its arguments.

    @server.tool(timeout=2.0, max_concurrency=4)
    async def search(query: str) -> str: ...

    @server.tool(audit_arguments=True, redact=lambda args: {**args, "password": "***"})
    def login(user: str, password: str) -> str: ...

The engine enforces them on every transport (:mod:`tornado_mcp.engine.governance`); an
operator overrides ``timeout`` and ``max_concurrency`` live with the ``tool_bounds`` option.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: ``redact(arguments) -> arguments``: what the audit trail keeps of a call's arguments.
Redact = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class CallBounds:
    """The declared bounds of one tool, resource (or template) or prompt."""

    #: Seconds one call may run before it is cancelled (``None``: no bound).
    timeout: float | None = None
    #: Calls that may run at once; one more is refused at once (``None``: no bound).
    max_concurrency: int | None = None
    #: Whether the audit trail keeps the call's arguments (after ``redact``), bounded.
    audit_arguments: bool = False
    redact: Redact | None = None

    def __post_init__(self) -> None:
        t = self.timeout
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                              or not math.isfinite(t) or t <= 0):
            raise ValueError("timeout must be a positive number of seconds or None")
        n = self.max_concurrency
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n <= 0):
            raise ValueError("max_concurrency must be a positive integer or None")
        if self.redact is not None and not callable(self.redact):
            raise ValueError("redact must be a function of the arguments")

    @property
    def declared(self) -> bool:
        return self.timeout is not None or self.max_concurrency is not None \
            or self.audit_arguments


def bounds_of(timeout: float | None, max_concurrency: int | None, audit_arguments: bool,
              redact: Redact | None) -> CallBounds | None:
    """The bounds a decorator was given, or ``None`` when it was given none."""
    bounds = CallBounds(None if timeout is None else float(timeout), max_concurrency,
                        audit_arguments, redact)
    return bounds if bounds.declared or redact is not None else None
