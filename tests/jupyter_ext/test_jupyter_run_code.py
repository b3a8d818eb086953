"""``run_code`` in a real ipykernel started by Jupyter's kernel manager, and its bounds.

Off by default (not listed, and calling it is an unknown tool); when on, code runs in a
kernel whose state persists between calls, output is cut at ``max_output_bytes`` (exactly
at the bound it is whole), and code running past ``code_timeout`` is interrupted, after
which the kernel still answers.  A bad limit on the command line gets the flags' message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import CODE_TIMEOUT, MAX_OUTPUT
from .jupyter_proc import STEP, JupyterProc, post, result

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow,
              pytest.mark.xdist_group("jupyter_run_code")]  # one worker: its Jupyter servers


def run(jp: JupyterProc, code: str, **extra: Any) -> dict[str, Any]:
    return result(post(jp, jp.auth(), "tools/call",
                       {"name": "run_code", "arguments": {"code": code, **extra}}, "run_code"))


def test_run_code_is_off_unless_enabled(jupyter_no_exec: JupyterProc) -> None:
    jp = jupyter_no_exec
    listed = result(post(jp, jp.auth(), "tools/list", {}))
    assert "run_code" not in {t["name"] for t in listed["tools"]}
    r = post(jp, jp.auth(), "tools/call", {"name": "run_code", "arguments": {"code": "1"}},
             "run_code")
    assert r.status_code == 400
    assert r.json()["error"] == {"code": -32602, "message": "Unknown tool: run_code"}


def test_code_runs_in_a_kernel_whose_state_persists(jupyter: JupyterProc) -> None:
    first = run(jupyter, "import os\nanswer = 6 * 7\nprint('pid', os.getpid() > 0)\nanswer")
    assert first["isError"] is False
    assert first["structuredContent"]["status"] == "ok"
    assert first["structuredContent"]["output"] == "pid True\n42\n"
    assert first["structuredContent"]["truncated"] is False
    kernel = first["structuredContent"]["kernel_id"]
    second = run(jupyter, "print(answer + 1)")
    assert second["structuredContent"]["output"] == "43\n"
    assert second["structuredContent"]["kernel_id"] == kernel
    # The kernel is one of Jupyter's own: its REST API lists it.
    kernels = httpx.get(f"{jupyter.base}/api/kernels", headers=jupyter.auth("token"),
                        timeout=STEP).json()
    assert kernel in {k["id"] for k in kernels}
    # Naming it runs there too; an unknown id is a tool error.
    named = run(jupyter, "print(answer)", kernel_id=kernel)
    assert named["structuredContent"]["output"] == "42\n"
    unknown = run(jupyter, "1", kernel_id="no-such-kernel")
    assert unknown["isError"] is True
    assert unknown["content"][0]["text"] == "No running kernel has the id 'no-such-kernel'."


def test_an_exception_is_an_error_result_with_its_traceback(jupyter: JupyterProc) -> None:
    failed = run(jupyter, "1 / 0")
    assert failed["isError"] is True
    assert failed["structuredContent"]["status"] == "error"
    assert "ZeroDivisionError: division by zero" in failed["structuredContent"]["output"]
    assert "\x1b[" not in failed["structuredContent"]["output"]


def test_output_exactly_at_the_bound_is_whole(jupyter: JupyterProc) -> None:
    at = run(jupyter, f"print('a' * {MAX_OUTPUT - 1})")  # plus the newline: the bound
    assert at["structuredContent"]["output"] == "a" * (MAX_OUTPUT - 1) + "\n"
    assert at["structuredContent"]["truncated"] is False


def test_output_over_the_bound_is_cut_and_says_so(jupyter: JupyterProc) -> None:
    over = run(jupyter, f"print('b' * {MAX_OUTPUT})")
    assert over["structuredContent"]["output"] == "b" * MAX_OUTPUT
    assert over["structuredContent"]["truncated"] is True
    assert over["content"][0]["text"].endswith(f"\n[output cut at {MAX_OUTPUT} bytes]")
    flood = run(jupyter, "for i in range(2000): print('line', i)")
    assert len(flood["structuredContent"]["output"].encode()) == MAX_OUTPUT
    assert flood["structuredContent"]["truncated"] is True


def test_code_past_the_time_bound_is_interrupted(jupyter: JupyterProc) -> None:
    slow = run(jupyter, f"import time\nprint('start', flush=True)\ntime.sleep({CODE_TIMEOUT * 20})")
    assert slow["isError"] is True
    assert slow["structuredContent"]["status"] == "timeout"
    assert slow["structuredContent"]["output"] == "start\n"
    assert slow["content"][0]["text"].endswith(f"[interrupted after {CODE_TIMEOUT} seconds]")
    after = run(jupyter, "print('still here')")  # the interrupt stopped the sleep
    assert after["structuredContent"]["output"] == "still here\n"


def test_a_bad_limit_is_refused_with_the_flags_message(tmp_path: Path) -> None:
    jp = JupyterProc(tmp_path, ["--MCPExtension.max_sessions=0"])
    try:
        jp.wait()
        r = httpx.post(jp.mcp_url, headers=jp.auth(), content=json.dumps({}), timeout=STEP)
        assert r.status_code == 404  # Jupyter runs on without the extension, and says why:
        assert "MCPExtension.max_sessions: must be a positive integer or none" in jp.log
        assert "MCPExtension: the configuration above is invalid, so MCP is not served" \
            in jp.log
        assert httpx.get(f"{jp.base}/api/contents", headers=jp.auth("token"),
                         timeout=STEP).status_code == 200
    finally:
        jp.stop()
