"""A short, seeded fuzz pass over both eras (see tests/fuzz.py for the long run).

Every request is checked as it is answered: never a 5xx, never a traceback in a body,
every request answered (or its connection closed after ``Connection: close``), no
session left by a refused request; and after the run nothing is left in progress and
nothing was logged at ERROR.
"""

from __future__ import annotations

from fuzz import fuzz

EXAMPLES = 400


def test_seeded_fuzz_pass_keeps_every_invariant() -> None:
    figures, errors = fuzz(EXAMPLES, seed=None, derandomize=True)
    assert figures.problems == [], "\n".join(figures.problems[:10])
    assert [r.getMessage() for r in errors.records] == []
    assert figures.requests >= EXAMPLES * 0.9
    assert figures.by_era["legacy"] and figures.by_era["modern"]
    assert figures.server_errors == figures.unanswered == figures.tracebacks == 0
