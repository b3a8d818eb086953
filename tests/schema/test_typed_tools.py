"""Typed tools end to end, in both protocol eras, over the real transport: arguments
arrive as their annotated types, results leave as validated ``structuredContent``, and
bad input is a clear error naming the argument (never a 500, never a traceback)."""

from __future__ import annotations

import datetime
import enum
import logging
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import marshmallow
import pytest
from marshmallow import fields, validate

from tornado_mcp import Arg, Server, resource_link
from tornado_mcp.protocol import INTERNAL_ERROR, INVALID_PARAMS
from tornado_mcp.pytest_plugin import mcp_client, mcp_era  # noqa: F401 - fixtures
from tornado_mcp.schema.validate import MAX_ERROR_CHARS
from tornado_mcp.server.contract import MAX_ARGUMENT_DEPTH
from tornado_mcp.testing import Client, RPCError

try:
    from pydantic_models import Outer
except ImportError:  # pydantic is optional
    Outer = None  # type: ignore[assignment,misc]

pytestmark = pytest.mark.parametrize("mcp_era", ["modern", "legacy"])


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@dataclass
class Place:
    name: str
    lat: float
    lon: float


class Window(TypedDict):
    start: datetime.date
    days: int


@dataclass
class Forecast:
    place: Place
    unit: Unit
    highs: list[float]
    notes: dict[str, str] = field(default_factory=dict)


class Ticket(marshmallow.Schema):
    title = fields.String(required=True, validate=validate.Length(min=3))
    priority = fields.Integer(load_default=3)

    @marshmallow.validates("title")
    def no_shouting(self, value: str, **_: Any) -> None:
        if value.isupper():
            raise marshmallow.ValidationError("no shouting")


SEEN: list[Any] = []


def build() -> Server:
    server = Server("typed")

    @server.tool()
    def forecast(places: list[Place], unit: Unit, window: Window,
                 grid: list[list[int]] | None = None) -> list[Forecast]:
        """Forecast several places.

        Args:
            places: Where.
            unit: Temperature unit.
        """
        SEEN[:] = [places, unit, window, grid]
        return [Forecast(p, unit, [20.0 + i for i in range(window["days"])]) for p in places]

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    def liar(n: int) -> int:
        return "not a number"  # type: ignore[return-value]

    @server.tool()
    def opaque() -> Place:
        return object()  # type: ignore[return-value]

    @server.tool(output_schema={"type": "object", "properties": {"ok": {"type": "boolean"}},
                                "required": ["ok"]})
    def declared(ok: bool) -> dict[str, Any]:
        return {"ok": ok} if ok else {"ok": "yes"}

    @server.tool()
    def file_ticket(ticket: Ticket) -> str:
        SEEN[:] = [ticket]
        return "filed"

    @server.tool()
    def bounded(items: Annotated[list[int], Arg("Numbers", max_items=100)],
                name: Annotated[str, Arg(max_length=1000)] = "") -> int:
        return len(items) + len(name)

    @server.tool()
    def nested(value: Any) -> str:
        return "ok"

    @server.tool()
    def flexible(a: int, **extra: Any) -> dict[str, Any]:
        return {"a": a, **extra}

    @server.tool(input_schema={"type": "object", "properties": {"q": {"type": "string"}}})
    def hand_written(q: str) -> str:
        return q

    @server.tool(structured_output=False)
    def unserialisable() -> Place:
        return object()  # type: ignore[return-value]

    @server.tool(structured_output=False)
    def plain_dataclass() -> Place:
        return Place("Oslo", 1.0, 2.0)

    @server.tool()
    def link() -> list[dict[str, Any]]:
        return [resource_link("file:///r/q3.pdf", "q3.pdf", mime_type="application/pdf")]

    if Outer is not None:
        @server.tool()
        def echo_model(o: Outer) -> Outer:
            assert isinstance(o, Outer)
            return o
    return server


@pytest.fixture
def mcp_server() -> Server:
    return build()


async def test_arguments_arrive_as_their_types(mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("forecast", {
        "places": [{"name": "Oslo", "lat": 59.9, "lon": 10.7}],
        "unit": "celsius", "window": {"start": "2026-01-02", "days": 2},
        "grid": [[1, 2], [3]]})
    assert not result.is_error, result.raw
    places, unit, window, grid = SEEN
    assert places == [Place("Oslo", 59.9, 10.7)]
    assert unit is Unit.CELSIUS
    assert window == {"start": datetime.date(2026, 1, 2), "days": 2}
    assert grid == [[1, 2], [3]]
    assert result.structured == {"result": [{
        "place": {"name": "Oslo", "lat": 59.9, "lon": 10.7}, "unit": "celsius",
        "highs": [20.0, 21.0], "notes": {}}]}


async def test_primitive_results_are_wrapped_and_mirrored(mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured == {"result": 5}
    assert result.text == '{"result":5}'
    tools = {t["name"]: t for t in await mcp_client.list_tools()}
    assert tools["add"]["outputSchema"]["properties"]["result"] == {"type": "integer"}
    assert tools["forecast"]["inputSchema"]["properties"]["places"]["description"] == "Where."


async def test_result_that_breaks_its_schema_is_a_server_error(
        mcp_client: Client, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    for name, args in (("liar", {"n": 1}), ("declared", {"ok": False}), ("opaque", {})):
        with caplog.at_level(logging.ERROR, "tornado_mcp"), \
                pytest.raises(RPCError) as info:
            await mcp_client.call_tool(name, args)
        assert info.value.code == INTERNAL_ERROR
        assert f"tool {name} returned a result that does not match its outputSchema" \
            in info.value.message
        assert any(name in r.getMessage() and "outputSchema" in r.getMessage()
                   for r in caplog.records)
    good = await mcp_client.call_tool("declared", {"ok": True})
    assert good.structured == {"ok": True}


async def test_results_without_output_schema(mcp_client: Client) -> None:  # noqa: F811
    plain = await mcp_client.call_tool("plain_dataclass")
    assert plain.structured == {"name": "Oslo", "lat": 1.0, "lon": 2.0}
    with pytest.raises(RPCError) as info:
        await mcp_client.call_tool("unserialisable")
    assert info.value.code == INTERNAL_ERROR
    assert "tool unserialisable returned a result that has no JSON form" in info.value.message


async def test_marshmallow_parameter_is_loaded(mcp_client: Client) -> None:  # noqa: F811
    assert (await mcp_client.call_tool("file_ticket", {"ticket": {"title": "Fix"}})).text \
        == "filed"
    assert SEEN == [{"title": "Fix", "priority": 3}]
    schema_error = await mcp_client.call_tool("file_ticket", {"ticket": {"title": "x"}})
    assert schema_error.is_error
    assert "arguments.ticket.title must be at least 3 characters" in schema_error.text
    rule_error = await mcp_client.call_tool("file_ticket", {"ticket": {"title": "LOUD"}})
    assert rule_error.is_error and "arguments.ticket.title: no shouting" in rule_error.text


async def test_pydantic_model_round_trip(mcp_client: Client) -> None:  # noqa: F811
    if Outer is None:
        pytest.skip("pydantic is not installed")
    ok = await mcp_client.call_tool("echo_model", {"o": {"name": "n", "inner": {"v": 1}}})
    assert ok.structured == {"name": "n", "inner": {"v": 1}}
    bad = await mcp_client.call_tool("echo_model", {"o": {"name": "n", "inner": {"v": -1}}})
    assert bad.is_error and "arguments.o.inner.v" in bad.text


@pytest.mark.parametrize("args, message", [
    ({"a": "2", "b": 3}, "arguments.a must be of type integer"),
    ({"a": True, "b": 3}, "arguments.a must be of type integer"),
    ({"a": 2}, "arguments.b is required"),
])
async def test_bad_arguments_are_tool_errors_naming_the_argument(
        mcp_client: Client, args: dict[str, Any], message: str) -> None:  # noqa: F811
    result = await mcp_client.call_tool("add", args)
    assert result.is_error
    assert result.text == f"Invalid arguments for tool add: {message}"


async def test_extra_property_of_a_closed_object(mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("forecast", {
        "places": [{"name": "Oslo", "lat": 1, "lon": 2, "alt": 3}], "unit": "celsius",
        "window": {"start": "2026-01-02", "days": 1}})
    assert result.is_error
    assert "arguments.places[0].alt is not an allowed property" in result.text


async def test_malformed_date_names_the_argument(mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("forecast", {
        "places": [], "unit": "celsius", "window": {"start": "yesterday", "days": 1}})
    assert result.is_error and "arguments.window.start:" in result.text


async def test_undeclared_argument_is_invalid_params(
        mcp_client: Client, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    with caplog.at_level(logging.ERROR), pytest.raises(RPCError) as info:
        await mcp_client.call_tool("add", {"a": 1, "b": 2, "c": 3})
    assert info.value.code == INVALID_PARAMS
    assert info.value.message == "Invalid params: tool add takes no argument 'c'"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # A function with **kwargs gets what its schema allows.
    assert (await mcp_client.call_tool("flexible", {"a": 1, "z": 2})).structured == {
        "a": 1, "z": 2}


async def test_hand_written_schema_still_binds_required_parameters(
        mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("hand_written", {})
    assert result.is_error and result.text.endswith("arguments.q is required")


async def test_array_and_string_bounds_at_and_over(mcp_client: Client) -> None:  # noqa: F811
    assert (await mcp_client.call_tool("bounded", {"items": [0] * 100})).structured == {
        "result": 100}
    over = await mcp_client.call_tool("bounded", {"items": [0] * 101})
    assert over.is_error and over.text.endswith("arguments.items must have at most 100 items")
    assert not (await mcp_client.call_tool("bounded", {"items": [], "name": "x" * 1000})
                ).is_error
    long = await mcp_client.call_tool("bounded", {"items": [], "name": "x" * 1_000_000})
    assert long.is_error
    assert long.text.endswith("arguments.name must be at most 1000 characters")
    huge = await mcp_client.call_tool("bounded", {"items": ["x" * 1000] * 1000})
    assert huge.is_error and len(huge.text) <= MAX_ERROR_CHARS + 40


def nest(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


async def test_nesting_bound_at_and_over(mcp_client: Client) -> None:  # noqa: F811
    at = await mcp_client.call_tool("nested", {"value": nest(MAX_ARGUMENT_DEPTH)})
    assert not at.is_error
    over = await mcp_client.call_tool("nested", {"value": nest(MAX_ARGUMENT_DEPTH + 1)})
    assert over.is_error
    assert over.text.endswith(f"arguments.value nests deeper than {MAX_ARGUMENT_DEPTH} levels")


async def test_resource_link_content(mcp_client: Client) -> None:  # noqa: F811
    result = await mcp_client.call_tool("link")
    assert result.content == [{"type": "resource_link", "uri": "file:///r/q3.pdf",
                               "name": "q3.pdf", "mimeType": "application/pdf"}]
