"""What a tool's signature becomes: input and output schemas from type hints, refused
schemas at declaration, docstring descriptions, and the validator's messages."""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import annotated_types
import marshmallow
import pytest
from marshmallow import fields, validate

from tornado_mcp import Arg, InputRequired, Server
from tornado_mcp.schema.docstrings import param_docs
from tornado_mcp.schema.validate import (
    MAX_ERROR_CHARS,
    MAX_QUOTE_CHARS,
    InvalidSchema,
    compile_schema,
)

try:
    from pydantic_models import Outer
except ImportError:  # pydantic is optional
    Outer = None  # type: ignore[assignment,misc]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Point:
    """A point.

    Attributes:
        x: Across.
        y: Up.
    """

    x: float
    y: float = 0.0
    tags: list[str] = field(default_factory=list)


class Window(TypedDict):
    start: int
    end: NotRequired[int]


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


class AddressSchema(marshmallow.Schema):
    street = fields.String(required=True, validate=validate.Length(min=1, max=80),
                           metadata={"description": "Street and number"})
    kind = fields.String(validate=validate.OneOf(["home", "work"]))
    floor = fields.Integer(validate=validate.Range(min=0, max=200), allow_none=True)


def schema_of(fn: Any, **kwargs: Any) -> dict[str, Any]:
    server = Server("s")
    return server.add_tool(fn, **kwargs).describe()


def props(fn: Any) -> dict[str, Any]:
    return dict(schema_of(fn)["inputSchema"]["properties"])


def test_scalars_defaults_and_required() -> None:
    def f(s: str, i: int, x: float, b: bool, d: int = 3, o: str | None = None) -> None: ...
    schema = schema_of(f)["inputSchema"]
    assert schema["required"] == ["s", "i", "x", "b"]
    assert schema["properties"] == {
        "s": {"type": "string"}, "i": {"type": "integer"}, "x": {"type": "number"},
        "b": {"type": "boolean"}, "d": {"type": "integer", "default": 3},
        "o": {"type": ["string", "null"]}}


def test_enum_literal_and_containers() -> None:
    def f(c: Color, lv: Level, mode: Literal["a", "b"], xs: list[int],
          m: dict[str, float], s: set[str], pair: tuple[int, str],
          many: tuple[int, ...], when: datetime.date) -> None: ...
    p = props(f)
    assert p["c"] == {"type": "string", "enum": ["red", "green"]}
    assert p["lv"] == {"type": "integer", "enum": [1, 2]}
    assert p["mode"] == {"enum": ["a", "b"]}
    assert p["xs"] == {"type": "array", "items": {"type": "integer"}}
    assert p["m"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["s"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert p["pair"] == {"type": "array", "prefixItems": [{"type": "integer"},
                                                          {"type": "string"}],
                         "minItems": 2, "maxItems": 2}
    assert p["many"] == {"type": "array", "items": {"type": "integer"}}
    assert p["when"] == {"type": "string", "format": "date"}


def test_dataclass_typeddict_and_recursion() -> None:
    def f(p: Point, w: Window, tree: Node) -> None: ...
    schema = schema_of(f)["inputSchema"]
    p = schema["properties"]
    assert p["p"] == {"type": "object", "properties": {
        "x": {"type": "number", "description": "Across."},
        "y": {"type": "number", "description": "Up.", "default": 0.0},
        "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["x"], "additionalProperties": False}
    assert p["w"]["required"] == ["start"] and p["w"]["additionalProperties"] is False
    assert p["tree"] == {"$ref": "#/$defs/Node"}
    node = schema["$defs"]["Node"]
    assert node["properties"]["children"] == {"type": "array",
                                              "items": {"$ref": "#/$defs/Node"}}


def test_annotated_descriptions_and_constraints() -> None:
    def f(a: Annotated[int, Arg("Days ahead", ge=1, le=14)],
          b: Annotated[str, "A name", Arg(max_length=20, pattern="^[a-z]+$")],
          c: Annotated[list[int], Arg(min_length=1, max_length=5)],
          d: Annotated[float, annotated_types.Gt(0), annotated_types.Lt(1)],
          e: Annotated[str, {"format": "email"}]) -> None: ...
    p = props(f)
    assert p["a"] == {"type": "integer", "description": "Days ahead", "minimum": 1,
                      "maximum": 14}
    assert p["b"] == {"type": "string", "description": "A name", "maxLength": 20,
                      "pattern": "^[a-z]+$"}
    assert p["c"] == {"type": "array", "items": {"type": "integer"}, "minItems": 1,
                      "maxItems": 5}
    assert p["d"] == {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
    assert p["e"] == {"type": "string", "format": "email"}


@pytest.mark.parametrize("doc", [
    """Do it.

    Args:
        city: The city's name,
            in full.
        days (int): How many days.
    """,
    """Do it.

    Parameters
    ----------
    city : str
        The city's name,
        in full.
    days : int
        How many days.
    """,
    """Do it.

    :param city: The city's name,
        in full.
    :param int days: How many days.
    """,
])
def test_docstring_parameter_sections(doc: str) -> None:
    assert param_docs(doc) == {"city": "The city's name, in full.", "days": "How many days."}

    def f(city: str, days: int = 1) -> None: ...
    f.__doc__ = doc
    p = props(f)
    assert p["city"]["description"] == "The city's name, in full."
    assert p["days"]["description"] == "How many days."


def test_marshmallow_schema_parameter() -> None:
    def f(address: AddressSchema) -> None: ...
    assert props(f)["address"] == {
        "type": "object",
        "properties": {
            "street": {"type": "string", "minLength": 1, "maxLength": 80,
                       "description": "Street and number"},
            "kind": {"type": "string", "enum": ["home", "work"]},
            "floor": {"type": ["integer", "null"], "minimum": 0, "maximum": 200}},
        "required": ["street"], "additionalProperties": False}


def test_pydantic_model_parameter_and_result() -> None:
    if Outer is None:
        pytest.skip("pydantic is not installed")

    def f(o: Outer) -> Outer: ...
    d = schema_of(f)
    assert d["inputSchema"]["properties"]["o"]["properties"]["inner"] == {
        "$ref": "#/$defs/Inner"}
    assert "Inner" in d["inputSchema"]["$defs"]
    assert d["outputSchema"]["properties"]["name"]["description"] == "Who"
    compile_schema(d["inputSchema"])  # the hoisted $defs resolve


def test_output_schemas() -> None:
    def prim() -> int: ...
    def obj() -> Point: ...
    def text() -> str: ...
    def untyped() -> dict[str, Any]: ...
    def blocks() -> list[dict[str, Any]]: ...
    def maybe_input() -> Point | InputRequired: ...
    assert schema_of(prim)["outputSchema"] == {
        "type": "object", "properties": {"result": {"type": "integer"}},
        "required": ["result"]}
    assert schema_of(obj)["outputSchema"]["properties"]["x"] == {
        "type": "number", "description": "Across."}
    assert schema_of(maybe_input)["outputSchema"]["required"] == ["x"]
    for fn in (text, untyped, blocks):
        assert "outputSchema" not in schema_of(fn)
    assert "outputSchema" not in schema_of(prim, structured_output=False)
    assert schema_of(text, structured_output=True)["outputSchema"]["properties"] == {
        "result": {"type": "string"}}


class Opaque:
    pass


def test_untranslatable_parameter_is_refused_at_declaration() -> None:
    def f(thing: Opaque) -> None: ...
    with pytest.raises(TypeError, match=r"parameter 'thing'.*no JSON Schema"):
        Server("s").add_tool(f)

    class Local:
        pass

    def g(thing: Local) -> None: ...
    with pytest.raises(TypeError, match=r"parameter 'thing'.*cannot resolve"):
        Server("s").add_tool(g)


@pytest.mark.parametrize("schema, match", [
    ({"type": "object", "properties": {"a": {"type": "strin"}}}, "invalid schema"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "does not resolve"),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
     "does not resolve"),
    ({"$schema": "https://example.com/my-dialect", "type": "object"}, "unsupported"),
    ({"type": "object", "minProperties": -1}, "invalid schema"),
])
def test_invalid_or_dangling_schema_is_refused(schema: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidSchema, match=match):
        Server("s").add_tool(lambda **_: "ok", "t", input_schema=schema)
    with pytest.raises(InvalidSchema, match=match):
        Server("s").add_tool(lambda: "ok", "t", output_schema=schema)


def test_draft7_schema_is_validated_by_draft7_rules() -> None:
    check = compile_schema({"$schema": "http://json-schema.org/draft-07/schema#",
                            "type": "array", "items": [{"type": "integer"}],
                            "additionalItems": False})
    assert check([1]) is None
    assert check([1, 2]) is not None


def test_fast_path_serves_simple_schemas_only() -> None:
    simple = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 5}},
              "required": ["text"], "additionalProperties": False, "x-note": "ignored"}
    assert compile_schema(simple).fast
    assert not compile_schema({**simple, "patternProperties": {"^a": {}}}).fast
    assert not compile_schema({"type": "object", "properties": {
        "n": {"type": "number", "multipleOf": 0.1}}}).fast


@pytest.mark.parametrize("value, message", [
    ({"n": True}, "arguments.n must be of type integer"),
    ({"n": 1.5}, "arguments.n must be of type integer"),
    ({}, "arguments.n is required"),
    ({"n": 1, "zzz": 2}, "arguments.zzz is not an allowed property"),
    ({"n": 0}, "arguments.n must be >= 1"),
    ({"n": 1, "tags": ["a", 3]}, "arguments.tags[1] must be of type string"),
    ({"n": 1, "tags": ["x"] * 4}, "arguments.tags must have at most 3 items"),
    ({"n": 1, "name": "x" * 100}, "arguments.name must be at most 10 characters"),
    ({"n": 1, "color": "blue"}, 'arguments.color must be one of ["red", "green"]'),
])
def test_messages_name_the_argument_and_the_rule(value: Any, message: str) -> None:
    check = compile_schema({
        "type": "object", "required": ["n"], "additionalProperties": False,
        "properties": {"n": {"type": "integer", "minimum": 1},
                       "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                       "name": {"type": "string", "maxLength": 10},
                       "color": {"enum": ["red", "green"]}}})
    assert check(value) == message


def test_quoted_names_at_and_over_the_bound() -> None:
    check = compile_schema({"type": "object", "additionalProperties": False})
    at, over = "a" * MAX_QUOTE_CHARS, "b" * (MAX_QUOTE_CHARS + 1)
    assert check({at: 1}) == f"arguments.{at} is not an allowed property"
    assert check({over: 1}) == f"arguments.{over[:MAX_QUOTE_CHARS - 1]}… is not an allowed property"


def test_false_subschema_message() -> None:
    check = compile_schema({"type": "object", "properties": {"a": False}})
    assert check({"a": 1}) == ("arguments holds a value that is not allowed "
                               "(False schema does not allow 1)")


def test_messages_are_bounded_whatever_the_value() -> None:
    check = compile_schema({"type": "object", "properties": {
        "a": {"not": {"type": "string"}}}, "additionalProperties": False})
    huge_name = "k" * 100_000
    for value in ({"a": "x" * 1_000_000}, {huge_name: 1}, {"a": "y", huge_name: [1] * 1000}):
        problem = check(value)
        assert problem is not None and len(problem) <= MAX_ERROR_CHARS
