"""marshmallow's nested error messages, flattened once and formatted by each caller."""

from __future__ import annotations

import marshmallow
import pytest
from marshmallow import fields

from admin_ui.schemas import flatten_messages
from tornado_mcp.protocol import INVALID_PARAMS
from tornado_mcp.protocol.errors import MCPError
from tornado_mcp.protocol.field_errors import error_messages, first_error
from tornado_mcp.protocol.shapes import TOOL_CALL_PARAMS, load
from tornado_mcp.schema.convert import ConversionError, converter_for

NESTED = {"name": ["Missing data for required field."],
          "items": {0: {"size": ["Not a valid integer.", "Too big."]}},
          "_schema": ["Inconsistent."]}


def test_every_message_comes_with_its_path_in_order() -> None:
    assert list(error_messages(NESTED)) == [
        (("name",), "Missing data for required field."),
        (("items", 0, "size"), "Not a valid integer."),
        (("items", 0, "size"), "Too big."),
        ((), "Inconsistent."),
    ]
    assert first_error(NESTED) == (("name",), "Missing data for required field.")
    assert first_error({}) is None


def test_a_wire_shape_names_the_first_bad_field() -> None:
    with pytest.raises(MCPError) as caught:
        load(TOOL_CALL_PARAMS, {"name": 5}, "tools/call")
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == "Invalid params: tools/call: `name`: Not a valid string."


class Point(marshmallow.Schema):
    x = fields.Integer(required=True)
    tags = fields.List(fields.String())


def test_a_marshmallow_argument_names_the_path_of_its_first_problem() -> None:
    convert = converter_for(Point)
    assert convert is not None
    with pytest.raises(ConversionError) as caught:
        convert({"x": 1, "tags": ["a", 7]})
    assert caught.value.path == ("tags", 1)
    assert caught.value.message == "Not a valid string."


def test_the_dashboard_gets_one_message_per_field() -> None:
    assert flatten_messages(NESTED) == {
        "name": "Missing data for required field.",
        "items": "0.size: Not a valid integer. 0.size: Too big.",
        "_body": "Inconsistent.",
    }
    assert flatten_messages(["Not an object."]) == {"_body": "Not an object."}
