"""One vocabulary: the method names the server answers are the protocol's list, and a
custom method cannot take one of them."""

from __future__ import annotations

import pytest

from tornado_mcp import Server
from tornado_mcp.protocol import INPUT_METHODS, SERVER_METHODS
from tornado_mcp.server.builtins import BUILTIN


def test_the_built_in_methods_are_the_protocols_server_methods() -> None:
    assert set(BUILTIN) == SERVER_METHODS
    assert INPUT_METHODS < SERVER_METHODS


@pytest.mark.parametrize("name", sorted(SERVER_METHODS))
def test_a_custom_method_cannot_take_a_built_in_name(name: str) -> None:
    server = Server("s")
    with pytest.raises(ValueError, match="already defined"):
        server.add_method(name, lambda params: {})


def test_a_custom_method_with_a_new_name_is_registered() -> None:
    server = Server("s")
    server.add_method("example/echo", lambda params: params)
    server.check_method("example/echo", modern=False)  # served: no -32601
    with pytest.raises(ValueError, match="already defined"):
        server.add_method("example/echo", lambda params: params)
