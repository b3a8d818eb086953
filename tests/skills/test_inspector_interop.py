"""The MCP Inspector's CLI (2.12) reads this server's skills at 2026-07-28, over HTTP and
over stdio: it checks every result against the schema, so a result without the fields the
era requires (``ttlMs``, ``cacheScope``) is refused by it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from inspector_cli import inspector
from mcp_http import running

from tornado_mcp import Server

pytestmark = pytest.mark.timeout(120)

SKILLS = REPO_ROOT / "examples" / "skills"
SERVER = REPO_ROOT / "examples" / "conformance_server.py"
STDIO = [sys.executable, "-m", "tornado_mcp", "stdio", f"{SERVER}:build_server"]
METHODS = [("resources/directory/read", "skill://release-notes"),
           ("skills/list", None), ("skills/get", "skill://release-notes/SKILL.md"),
           ("resources/read", "skill://release-notes/SKILL.md")]


def args(method: str, uri: str | None) -> list[str]:
    return ["--protocol-era", "modern", "--method", method, *(["--uri", uri] if uri else [])]


def check(method: str, got: dict[str, object]) -> None:
    assert "error" not in got, got
    result = got["result"]
    assert isinstance(result, dict)
    if method == "resources/directory/read":
        names = [r["name"] for r in result["resources"]]
        assert names == ["release-notes", "scripts", "templates"], names
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private"


@pytest.mark.parametrize(("method", "uri"), METHODS)
async def test_inspector_reads_skills_over_http(method: str, uri: str | None) -> None:
    server = Server("s")
    server.skills_from(SKILLS)
    async with running(server) as srv:
        got = await inspector(*args(method, uri), srv.url)
    check(method, got)


@pytest.mark.parametrize(("method", "uri"), METHODS)
async def test_inspector_reads_skills_over_stdio(method: str, uri: str | None,
                                                 tmp_path: Path) -> None:
    got = await inspector(*args(method, uri), "--cwd", str(tmp_path), *STDIO)
    check(method, got)
