"""The bounds of the Jupyter tools, each exactly at its limit and one over.

``list_files`` names at most 1000 entries of a directory (and says it cut), ``read_file``
and ``read_notebook`` read at most ``max_read_bytes``, and a legacy session subscribes to
at most 100 notebooks (and only to ``notebook://`` URIs).
"""

from __future__ import annotations

from typing import Any

import pytest

from .jupyter_proc import JupyterProc, legacy_call, legacy_session, post, result

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow,
              pytest.mark.xdist_group("jupyter_bounds")]  # one worker: its Jupyter servers

MAX_LIST_ENTRIES = 1000
MAX_SUBSCRIPTIONS = 100
MAX_READ_BYTES = 1024 * 1024  # the default


def call(jp: JupyterProc, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return result(post(jp, jp.auth(), "tools/call", {"name": name, "arguments": arguments},
                       name))


@pytest.mark.parametrize(("count", "truncated"), [(MAX_LIST_ENTRIES, False),
                                                   (MAX_LIST_ENTRIES + 1, True)])
def test_list_files_names_at_most_1000_entries(jupyter_no_exec: JupyterProc, count: int,
                                               truncated: bool) -> None:
    folder = jupyter_no_exec.root / f"many-{count}"
    folder.mkdir()
    for i in range(count):
        (folder / f"f{i:04d}.txt").touch()
    listed = call(jupyter_no_exec, "list_files", {"path": folder.name})["structuredContent"]
    assert len(listed["entries"]) == MAX_LIST_ENTRIES
    assert listed["entries"][0]["name"] == "f0000.txt"
    assert listed["entries"][-1]["name"] == "f0999.txt"
    assert listed["truncated"] is truncated


def test_a_file_of_exactly_max_read_bytes_is_read(jupyter_no_exec: JupyterProc) -> None:
    (jupyter_no_exec.root / "at.txt").write_bytes(b"a" * MAX_READ_BYTES)
    read = call(jupyter_no_exec, "read_file", {"path": "at.txt"})
    assert "isError" not in read
    assert read["content"][0]["text"] == "a" * MAX_READ_BYTES


def test_a_file_over_max_read_bytes_is_refused(jupyter_no_exec: JupyterProc) -> None:
    (jupyter_no_exec.root / "over.txt").write_bytes(b"a" * (MAX_READ_BYTES + 1))
    read = call(jupyter_no_exec, "read_file", {"path": "over.txt"})
    assert read["isError"] is True
    assert read["content"][0]["text"] == (
        f"'over.txt' is {MAX_READ_BYTES + 1} bytes, over the {MAX_READ_BYTES} bytes this "
        "server reads for a tool.")
    wrong_kind = call(jupyter_no_exec, "read_notebook", {"path": "over.txt"})
    assert wrong_kind["content"][0]["text"] == "'over.txt' is a file, not a notebook."


def test_a_session_subscribes_to_at_most_100_notebooks(jupyter_no_exec: JupyterProc) -> None:
    sid = legacy_session(jupyter_no_exec)
    for i in range(MAX_SUBSCRIPTIONS):
        reply = legacy_call(jupyter_no_exec, sid, "resources/subscribe",
                            {"uri": f"notebook://n{i}.ipynb"})
        assert reply["result"] == {}, reply
    again = legacy_call(jupyter_no_exec, sid, "resources/subscribe",
                        {"uri": "notebook://n0.ipynb"})  # already counted
    assert again["result"] == {}
    over = legacy_call(jupyter_no_exec, sid, "resources/subscribe",
                       {"uri": f"notebook://n{MAX_SUBSCRIPTIONS}.ipynb"})
    assert over["error"] == {"code": -32602,
                             "message": "A session may subscribe to at most 100 notebooks",
                             "data": {"uri": f"notebook://n{MAX_SUBSCRIPTIONS}.ipynb"}}
    legacy_call(jupyter_no_exec, sid, "resources/unsubscribe", {"uri": "notebook://n0.ipynb"})
    freed = legacy_call(jupyter_no_exec, sid, "resources/subscribe",
                        {"uri": f"notebook://n{MAX_SUBSCRIPTIONS}.ipynb"})
    assert freed["result"] == {}
    other = legacy_call(jupyter_no_exec, sid, "resources/subscribe", {"uri": "file:///etc"})
    assert other["error"]["message"] == "Only notebook:// resources can be subscribed to"
