"""A tool's contract: the schema its arguments must meet, the Python values its function
receives, and the schema its structured result must meet before it leaves the server.
(:class:`HandlerSpec`, how any handler's function is called, lives here too.)

Built once when the tool is declared (an invalid schema, or a parameter type with no
faithful JSON Schema, is refused then, with :class:`TypeError` or
:class:`~tornado_mcp.schema.validate.InvalidSchema`), and used on every ``tools/call``:

1. :meth:`ToolContract.bind` validates the arguments, refuses an argument the function
   does not take (unless it has ``**kwargs``), bounds nesting, and converts each argument
   to its annotated type.  A schema violation raises :class:`ArgumentError` (the client
   gets a tool result with ``isError: true`` naming the argument and the rule); an
   undeclared argument raises it with ``protocol=True`` (a -32602 error).
2. :meth:`ToolContract.structured` turns the function's return value into
   ``structuredContent`` (wrapped as ``{"result": value}`` when the return type is not an
   object) and validates it against ``outputSchema``; a mismatch is a server-side error.
"""

from __future__ import annotations

import asyncio
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol import jsonio
from ..schema.convert import ConversionError, Converter, converter_for, to_json
from ..schema.docstrings import param_docs
from ..schema.from_types import (
    SchemaBuilder,
    add_default,
    is_marshmallow_schema,
    is_pydantic_model,
    strip_annotated,
    union_arms,
)
from ..schema.validate import MAX_ERROR_CHARS, SchemaCheck, compile_schema, where
from ..sync.handlers import call_handler
from .context import Context
from .input import InputRequired
from .results import plain_tool_result, text

Handler = Callable[..., Any]

#: Deepest nesting of one argument's value (an argument that is a list of objects of lists
#: is 3 deep); deeper is refused naming the argument.  The transport's own bound on a
#: whole request body (64) applies first.
MAX_ARGUMENT_DEPTH = 32

_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})


class ArgumentError(Exception):
    """Arguments a tool cannot take.  ``protocol`` selects a -32602 JSON-RPC error over
    an ``isError`` tool result."""

    def __init__(self, message: str, protocol: bool = False) -> None:
        super().__init__(message)
        self.message = message[:MAX_ERROR_CHARS]
        self.protocol = protocol


#: Result types that are never awaitable: skip the (slower) general check for them.
_PLAIN = frozenset({str, dict, list, bytes, int, float, bool, type(None)})


@dataclass
class HandlerSpec:
    """A user function and how to call it."""

    fn: Handler
    ctx_param: str | None
    params: list[inspect.Parameter]
    accepts_kwargs: bool
    #: Resolved annotations (``Annotated`` kept), by parameter name and ``"return"``.
    hints: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, fn: Handler) -> HandlerSpec:
        sig = inspect.signature(fn)
        hints = _hints(fn)
        ctx_param = None
        params: list[inspect.Parameter] = []
        accepts_kwargs = False
        for p in sig.parameters.values():
            if p.kind is p.VAR_KEYWORD:
                accepts_kwargs = True
                continue
            if p.kind is p.VAR_POSITIONAL:
                continue
            ann = hints.get(p.name, p.annotation)
            if ann is Context or (isinstance(ann, str) and ann.split(".")[-1] == "Context") \
                    or (ann is inspect.Parameter.empty and p.name in ("ctx", "context")):
                ctx_param = p.name
                continue
            params.append(p)
        return cls(fn, ctx_param, params, accepts_kwargs, hints)

    async def call(self, ctx: Context, kwargs: dict[str, Any]) -> Any:
        if self.ctx_param is not None:
            kwargs = {**kwargs, self.ctx_param: ctx}
        result = call_handler(self.fn, kwargs)  # a plain def: in the transport's pool
        kind = type(result)
        if kind is types.CoroutineType or kind is asyncio.Future or (  # the pool's future
                kind not in _PLAIN and inspect.isawaitable(result)):
            result = await result
        return result

    def input_schema(self) -> dict[str, Any]:
        """A JSON Schema for the function's parameters (for tools declared without one)."""
        return input_schema_for(self)


def _hints(fn: Handler) -> dict[str, Any]:
    """``fn``'s resolved annotations.  One that cannot be resolved (a class local to a
    function, under ``from __future__ import annotations``) is kept as its string, which
    a tool's schema builder then refuses by name."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass
    out: dict[str, Any] = {}
    globalns = getattr(fn, "__globals__", {})
    for name, ann in getattr(fn, "__annotations__", {}).items():
        try:
            out[name] = typing.get_type_hints(
                _Probe(ann), globalns=globalns, include_extras=True)["x"]
        except Exception:
            out[name] = ann
    return out


class _Probe:
    """An object whose only annotation is ``x``, for resolving one annotation."""

    def __init__(self, ann: Any) -> None:
        self.__annotations__ = {"x": ann}


def input_schema_for(spec: HandlerSpec) -> dict[str, Any]:
    """The JSON Schema of ``spec``'s parameters, from their annotations, defaults and the
    docstring's parameter section."""
    builder = SchemaBuilder()
    docs = param_docs(getattr(spec.fn, "__doc__", None))
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in spec.params:
        ann = spec.hints.get(p.name, Any)
        try:
            schema = builder.build(ann)
        except TypeError as exc:
            raise TypeError(f"parameter {p.name!r} of {_name(spec.fn)}: {exc}") from None
        if p.name in docs and "description" not in schema:
            schema["description"] = docs[p.name]
        props[p.name] = schema
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            add_default(schema, p.default)
    root: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        root["required"] = required
    return builder.root(root)


def output_schema_for(ann: Any, force: bool = False) -> tuple[dict[str, Any], bool] | None:
    """``(outputSchema, wrapped)`` for a return annotation, or ``None`` for none.

    Without ``force``, only fully typed annotations get one: not ``str`` (that is text
    content), nor ``None``, ``Any``, bare ``dict``/``list`` or anything mentioning them,
    nor a union with a non-JSON type such as ``InputRequired``.
    """
    arms = union_arms(ann)
    if arms is not None and InputRequired in arms:  # a control-flow answer, not data
        rest = tuple(a for a in arms if a is not InputRequired)
        ann = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
    if ann is inspect.Parameter.empty or ann is None or ann is type(None) \
            or ann is InputRequired:
        return None
    base, _ = strip_annotated(ann)
    if not force and (base is str or _untyped(ann)):
        return None
    try:
        schema = (builder := SchemaBuilder()).build(ann)
    except TypeError:
        if force:
            raise
        return None
    if _is_object(base):
        return builder.root(schema), False
    return builder.root({"type": "object", "properties": {"result": schema},
                         "required": ["result"]}), True


def _untyped(ann: Any) -> bool:
    base, _ = strip_annotated(ann)
    if base is Any or base in (dict, list, tuple, set, frozenset, object):
        return True
    return any(_untyped(a) for a in typing.get_args(base) if a is not Ellipsis
               and not isinstance(a, str | int | float | bool))


def _is_object(base: Any) -> bool:
    if union_arms(base) is not None:
        return False
    origin = typing.get_origin(base) or base
    return origin in (dict, typing.Mapping) or typing.is_typeddict(base) \
        or (isinstance(base, type) and hasattr(base, "__dataclass_fields__")) \
        or is_pydantic_model(base) or is_marshmallow_schema(base)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn))))


class ToolContract:
    """What a tool takes and gives; see the module docstring."""

    __slots__ = ("accepted", "check", "converters", "deep", "input_schema", "name", "output",
                 "output_schema", "required", "typed_output", "wrap")

    def __init__(self, name: str, spec: HandlerSpec, input_schema: dict[str, Any] | None = None,
                 output_schema: dict[str, Any] | None = None,
                 structured_output: bool | None = None) -> None:
        """Derive what ``input_schema``/``output_schema`` leave out from ``spec``'s
        signature; ``structured_output`` forces (``True``) or prevents (``False``) an
        ``outputSchema`` from the return annotation (default: only for typed returns)."""
        generated = input_schema is None
        if input_schema is None:
            input_schema = input_schema_for(spec)
        if not isinstance(input_schema, dict):
            raise TypeError(f"tool {name}: inputSchema must be a JSON object")
        wrap = False
        self.typed_output = False
        if output_schema is None and structured_output is not False:
            derived = output_schema_for(spec.hints.get("return", inspect.Parameter.empty),
                                        force=bool(structured_output))
            if derived is not None:
                output_schema, wrap = derived
                self.typed_output = True
        self.name = name
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.check: SchemaCheck = compile_schema(input_schema)
        self.output: SchemaCheck | None = None if output_schema is None \
            else compile_schema(output_schema, "structuredContent")
        self.wrap = wrap
        self.accepted = None if spec.accepts_kwargs else frozenset(p.name for p in spec.params)
        #: Parameters a hand-written schema might not require but the function does.
        self.required = () if generated else tuple(
            p.name for p in spec.params if p.default is inspect.Parameter.empty)
        converters: dict[str, Converter] = {}
        for p in spec.params:
            conv = converter_for(spec.hints.get(p.name, Any))
            if conv is not None:
                converters[p.name] = conv
        self.converters = converters
        closed = input_schema.get("additionalProperties", True) is False \
            or self.accepted is not None
        self.deep = not (self.check.fast and closed and _scalar_properties(input_schema))

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validated, converted keyword arguments for the function; see the module doc."""
        check = self.check
        predicate = check.predicate
        if predicate is None or not predicate(args):
            problem = check.explain(args)
            if problem is not None:
                raise ArgumentError(problem)
        accepted = self.accepted
        if accepted is not None:
            for name in args:
                if name not in accepted:
                    raise ArgumentError(
                        f"Invalid params: tool {self.name} takes no argument "
                        f"{where('', [name])[1:]!r}", protocol=True)
        for name in self.required:
            if name not in args:
                raise ArgumentError(f"{where('arguments', [name])} is required")
        if self.deep:
            for name, value in args.items():
                if type(value) in (dict, list) and jsonio.depth_exceeds(value,
                                                                        MAX_ARGUMENT_DEPTH):
                    raise ArgumentError(f"{where('arguments', [name])} nests deeper than "
                                        f"{MAX_ARGUMENT_DEPTH} levels")
        if self.converters:
            return self._convert(args)
        return args

    def _convert(self, args: dict[str, Any]) -> dict[str, Any]:
        out = dict(args)
        for name, convert in self.converters.items():
            if name in out:
                try:
                    out[name] = convert(out[name])
                except ConversionError as exc:
                    raise ArgumentError(
                        f"{where('arguments', [name, *exc.path])}: {exc.message}") from None
        return out

    def structured(self, value: Any) -> tuple[Any, str | None]:
        """``(structuredContent, problem)`` for a return value; ``problem`` is ``None`` when
        the result meets the output schema."""
        data = to_json(value)
        if self.wrap:
            data = {"result": data}
        output = self.output
        return data, (None if output is None else output(data))


def _scalar_properties(schema: dict[str, Any]) -> bool:
    """Whether every property ``schema`` declares is of scalar types, so (with no other
    arguments admitted) the nesting bound cannot be reached."""
    props = schema.get("properties", {})
    def scalar(s: Any) -> bool:
        t = s.get("type") if isinstance(s, dict) else None
        return (isinstance(t, str) and t in _SCALAR_TYPES) or (
            isinstance(t, list) and set(t) <= _SCALAR_TYPES)
    return all(scalar(s) for s in props.values())


class OutputError(Exception):
    """A tool result that breaks the tool's own output contract (a server-side bug)."""


def tool_result(raw: Any, contract: ToolContract) -> dict[str, Any]:
    """The ``tools/call`` result for ``raw``; :class:`OutputError` when it breaks the
    tool's ``outputSchema``."""
    if contract.output is None:
        try:
            return plain_tool_result(raw)
        except TypeError as exc:  # a value with no JSON form
            raise OutputError(str(exc)) from None
    if not contract.typed_output and isinstance(raw, dict) \
            and ("content" in raw or "structuredContent" in raw):
        result = dict(raw)
        result.setdefault("content", [])
        if result.get("isError") is True:
            return result
        if "structuredContent" not in result:
            raise OutputError("the result has no structuredContent")
        problem = contract.output(result["structuredContent"])
    else:
        try:
            structured, problem = contract.structured(raw)
        except TypeError as exc:
            raise OutputError(str(exc)) from None
        result = {"content": [text(jsonio.dumps_str(structured))],
                  "structuredContent": structured}
    if problem is not None:
        raise OutputError(problem)
    return result
