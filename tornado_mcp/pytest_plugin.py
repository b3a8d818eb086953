"""pytest fixtures for testing a tornado-mcp server (registered as the ``tornado_mcp``
pytest plugin when tornado-mcp is installed; needs pytest-asyncio).

Define an ``mcp_server`` fixture returning your :class:`~tornado_mcp.Server`, then ask for
``mcp_client``: a connected :class:`tornado_mcp.testing.Client`.  It speaks the 2026-07-28
era unless ``mcp_era`` says otherwise; parametrize it to run a test in both eras::

    @pytest.fixture
    def mcp_server() -> Server:
        return build_server()

    @pytest.mark.parametrize("mcp_era", ["modern", "legacy"])
    async def test_add(mcp_client: Client) -> None:
        assert (await mcp_client.call_tool("add", {"a": 1, "b": 2})).structured == {"result": 3}

Without the plugin registered (or to be explicit), import the fixtures into a test module
or conftest: ``from tornado_mcp.pytest_plugin import mcp_client, mcp_era``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from .server.server import Server
from .testing import Client, Era

try:
    import pytest_asyncio
    _async_fixture: Callable[..., Any] = pytest_asyncio.fixture
except ImportError:  # pragma: no cover - the fixture then needs another async plugin
    _async_fixture = pytest.fixture


@pytest.fixture
def mcp_era() -> Era:
    """The protocol era ``mcp_client`` speaks: ``"modern"`` or ``"legacy"``."""
    return "modern"


@_async_fixture
async def mcp_client(mcp_server: Server, mcp_era: Era) -> AsyncIterator[Client]:
    """A :class:`~tornado_mcp.testing.Client` connected to your ``mcp_server`` fixture."""
    async with Client(mcp_server, era=mcp_era) as client:
        yield client
