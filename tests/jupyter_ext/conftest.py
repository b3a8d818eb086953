"""Real Jupyter servers with the extension, one per configuration, shared by a module.

* ``jupyter`` -- execution on (3 s, 1000 bytes of output), a tool from configuration, a tool
  from an installed package's entry point, and a ``jupyter_server_config.py``;
* ``jupyter_no_exec`` -- the defaults: ``run_code`` off;
* ``jupyter_no_execute_auth`` -- execution on, but Jupyter's authorizer denies ``execute``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .jupyter_proc import JupyterProc

HERE = Path(__file__).resolve().parent
CODE_TIMEOUT = 3
MAX_OUTPUT = 1000
CONFIG_FILE = "c.MCPExtension.max_stream_queue = 77\n"


def installed_tool_package(site: Path) -> Path:
    """A package on ``site`` whose ``tornado_mcp.jupyter_tools`` entry point names a tool,
    as ``pip install`` would leave it (module plus ``.dist-info``)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "contrib_tools.py").write_text(
        'def word_count(text: str) -> int:\n'
        '    """Count the words of a text (contributed by another package)."""\n'
        '    return len(text.split())\n', encoding="utf-8")
    info = site / "contrib_tools-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: contrib-tools\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[tornado_mcp.jupyter_tools]\nword_count = contrib_tools:word_count\n", encoding="utf-8")
    return site


def _start(tmp: Path, args: list[str], **kwargs: object) -> Iterator[JupyterProc]:
    site = installed_tool_package(tmp / "site")
    proc = JupyterProc(tmp, args, env={"PYTHONPATH": f"{HERE}:{site}"}, **kwargs)  # type: ignore[arg-type]
    try:
        yield proc.wait()
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    yield from _start(tmp_path_factory.mktemp("jupyter"), [
        "--MCPExtension.allow_code_execution=True",
        f"--MCPExtension.code_timeout={CODE_TIMEOUT}",
        f"--MCPExtension.max_output_bytes={MAX_OUTPUT}",
        "--MCPExtension.max_sessions=5",
        "--MCPExtension.tools=jupyter_helpers:shout",
    ], config=CONFIG_FILE)


@pytest.fixture(scope="module")
def jupyter_no_exec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    yield from _start(tmp_path_factory.mktemp("jupyter-no-exec"), [])


@pytest.fixture(scope="module")
def jupyter_no_execute_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterProc]:
    yield from _start(tmp_path_factory.mktemp("jupyter-no-execute"), [
        "--MCPExtension.allow_code_execution=True",
        "--ServerApp.authorizer_class=jupyter_helpers.NoExecuteAuthorizer",
    ])
