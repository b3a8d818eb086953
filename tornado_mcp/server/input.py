"""Input-required results (2026-07-28 multi round-trip requests) and the elicitation rules.

A tool, prompt or resource handler that needs something from the user returns
:class:`InputRequired`; the client asks the user and retries the same call with
``inputResponses`` (and the ``requestState``), which the handler reads from its context::

    @server.tool()
    async def book(city: str, ctx: Context) -> str | InputRequired:
        answer = ctx.input_response("confirm")
        if answer is None:
            return InputRequired(
                {"confirm": elicitation(f"Book a room in {city}?", {
                    "type": "object", "properties": {"ok": {"type": "boolean"}}})},
                request_state=ctx.seal_state({"city": city}),
            )
        return "booked" if answer.get("action") == "accept" else "cancelled"

:meth:`Context.sample <tornado_mcp.Context.sample>`, ``elicit`` and ``list_roots`` build on
the same rounds at 2026-07-28 (see :class:`NeedsInput`), so a handler can simply await them.

``requestState`` comes back from the client, so it is sealed: see
:mod:`tornado_mcp.server.request_state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..protocol import ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE

#: The client capability each kind of input request needs.
INPUT_KIND_CAPABILITY = {
    ELICITATION_CREATE: "elicitation",
    SAMPLING_CREATE_MESSAGE: "sampling",
    ROOTS_LIST: "roots",
}

#: Input rounds one call may take before it is ended, in both eras: the input requests a
#: 2026-07-28 call makes through ``ctx.sample`` / ``ctx.elicit`` / ``ctx.list_roots``, and
#: the rounds a legacy session answers for a handler returning :class:`InputRequired`
#: (the official clients give up after ten).
MAX_INPUT_ROUNDS = 8
#: The key under which the answers of earlier rounds travel in the sealed ``requestState``.
STATE_INPUTS_KEY = "tornado_mcp/inputs"

#: Property types an elicitation form may use: the spec's primitive schemas.
_PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean"})


class ElicitationSchemaError(ValueError):
    """An elicitation ``requestedSchema`` that MCP does not allow (raised when it is built,
    so the developer sees it in the server log rather than a client refusing it)."""


def check_elicitation_schema(schema: Any) -> None:
    """Raise :class:`ElicitationSchemaError` unless ``schema`` is what the MCP spec allows
    for a form: ``{"type": "object", "properties": {...}, "required": [...]}`` whose
    properties are flat primitives (string, number, integer, boolean, or a string enum, or
    an array of enum strings for multi-select).  Nested objects are not allowed."""
    def fail(why: str) -> None:
        raise ElicitationSchemaError(f"Invalid elicitation requestedSchema: {why}")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        fail('it must be an object schema, {"type": "object", "properties": {...}}')
    props = schema.get("properties")
    if not isinstance(props, dict):
        fail('"properties" is required and must map field names to primitive schemas')
    for name, prop in props.items():
        if not isinstance(prop, dict):
            fail(f"property {name!r} must be a schema object")
        kind = prop.get("type")
        if kind == "array":
            items = prop.get("items")
            if not isinstance(items, dict) or not ("enum" in items or "anyOf" in items):
                fail(f"property {name!r}: an array must be a multi-select with enum items")
        elif kind not in _PRIMITIVE_TYPES:
            fail(f"property {name!r} has type {kind!r}; forms allow only flat primitive "
                 "properties (string, number, integer, boolean, enums)")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(r in props for r in required):
        fail('"required" must list names of declared properties')


class NeedsInput(BaseException):
    """Raised by ``ctx.sample`` / ``ctx.elicit`` / ``ctx.list_roots`` at 2026-07-28 when the
    answer is not in the request yet: the server answers with :attr:`input_required` and
    the client retries the call, which runs the handler again from the start.

    A ``BaseException``, so a handler's own ``except Exception`` does not swallow it."""

    def __init__(self, input_required: InputRequired) -> None:
        super().__init__("input required")
        self.input_required = input_required


@dataclass
class InputRequired:
    """Return this from a handler to ask the client for input before completing."""

    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    request_state: str | None = None

    def to_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"resultType": "input_required"}
        if self.input_requests:
            result["inputRequests"] = self.input_requests
        if self.request_state is not None:
            result["requestState"] = self.request_state
        return result


def elicitation(message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
    """An ``elicitation/create`` input request in form mode; the schema is checked with
    :func:`check_elicitation_schema`."""
    check_elicitation_schema(requested_schema)
    return {"method": ELICITATION_CREATE,
            "params": {"mode": "form", "message": message, "requestedSchema": requested_schema}}


def sampling(messages: list[dict[str, Any]], max_tokens: int, **extra: Any) -> dict[str, Any]:
    """A ``sampling/createMessage`` input request."""
    return {"method": SAMPLING_CREATE_MESSAGE,
            "params": {"messages": messages, "maxTokens": max_tokens, **extra}}


def roots() -> dict[str, Any]:
    """A ``roots/list`` input request."""
    return {"method": ROOTS_LIST, "params": {}}
