"""The official JSON-Schema-Test-Suite against the validation path tools use.

``tests/data/json-schema-test-suite/`` holds the suite's ``draft2020-12`` and ``draft7``
case files (without ``optional/`` and ``refRemote.json``) and its LICENSE, as shipped in
the ``jsonschema`` 4.26.0 source distribution.  Each schema is compiled with
:func:`tornado_mcp.schema.validate.compile_schema` (what a tool's contract uses) and each case's
data checked with it.  A draft-07 schema is declared as such with ``$schema``.

Cases whose schemas need documents from the suite's remote server (``localhost:1234``)
are out of scope: tornado-mcp never fetches a reference, so those schemas are refused
when declared (a dangling ``$ref``, an unknown ``$schema``); only schemas that mention that
server may be refused.

The figures are printed in the test output and quoted in docs/tools.md.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tornado_mcp.schema.validate import InvalidSchema, compile_schema

SUITE = Path(__file__).resolve().parents[1] / "data" / "json-schema-test-suite"
DIALECTS = {"draft2020-12": None, "draft7": "http://json-schema.org/draft-07/schema#"}
REMOTE = "localhost:1234"
#: Cases answered wrongly on purpose, with the reason: (file, group, case) -> reason.
KNOWN: dict[tuple[str, str, str], str] = {}


@dataclass
class Case:
    draft: str
    file: str
    group: str
    description: str
    schema: Any
    data: Any
    valid: bool

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.file, self.group, self.description)


def cases(draft: str) -> list[Case]:
    out = []
    for path in sorted((SUITE / draft).glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            schema = group["schema"]
            dialect = DIALECTS[draft]
            if dialect and isinstance(schema, dict) and "$schema" not in schema:
                schema = {"$schema": dialect, **schema}
            for test in group["tests"]:
                out.append(Case(draft, path.name, group["description"], test["description"],
                                schema, test["data"], test["valid"]))
    return out


def run(draft: str) -> tuple[Counter[str], list[str]]:
    counts: Counter[str] = Counter()
    wrong: list[str] = []
    compiled: dict[str, Any] = {}
    for case in cases(draft):
        text = json.dumps(case.schema, sort_keys=True)
        if text not in compiled:
            try:
                compiled[text] = compile_schema(case.schema)
            except InvalidSchema as exc:
                assert REMOTE in text, f"refused a local schema: {case.key}: {exc}"
                compiled[text] = None
        check = compiled[text]
        if check is None:
            counts["remote"] += 1
            continue
        accepted = check(case.data) is None
        if check.fast:
            counts["fast"] += 1
            fast = check.predicate(case.data)
            assert fast == check.library.is_valid(case.data), \
                f"fast path disagrees with the library: {case.key}"
        if accepted == case.valid:
            counts["pass"] += 1
            assert case.key not in KNOWN, f"known failure now passes: {case.key}"
            continue
        counts["false accept" if accepted else "false reject"] += 1
        if case.key in KNOWN:
            counts["known"] += 1
        else:
            wrong.append(f"{'accepted' if accepted else 'rejected'}: {case.key}")
    return counts, wrong


def report(capsys: pytest.CaptureFixture[str], draft: str, counts: Counter[str]) -> None:
    judged = counts["pass"] + counts["false accept"] + counts["false reject"]
    line = (f"JSON-Schema-Test-Suite {draft}: {counts['pass']}/{judged} pass, "
            f"{counts['false accept']} false accepts, {counts['false reject']} false rejects, "
            f"{counts['known']} known; {counts['remote']} remote-ref cases refused at "
            f"declaration; fast path decided {counts['fast']} cases")
    with capsys.disabled():
        print(f"\n{line}")


@pytest.mark.parametrize("draft", list(DIALECTS))
def test_suite(draft: str, capsys: pytest.CaptureFixture[str]) -> None:
    counts, wrong = run(draft)
    report(capsys, draft, counts)
    judged = counts["pass"] + counts["false accept"] + counts["false reject"]
    assert judged > 800
    assert counts["false accept"] == 0, wrong
    assert counts["pass"] >= 0.99 * judged, wrong
    assert not wrong, wrong
    assert counts["fast"] > 400 if draft == "draft2020-12" else True


def test_suite_data_is_complete() -> None:
    """The licence ships with the data, and no case file went missing."""
    assert "Permission is hereby granted" in (SUITE / "LICENSE").read_text()
    assert len(list((SUITE / "draft2020-12").glob("*.json"))) == 45
    assert len(list((SUITE / "draft7").glob("*.json"))) == 36
