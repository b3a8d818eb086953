"""docs/auth.md, "Let your users' assistants in": its Python blocks run as written (a
fragment is only compiled), build what the page says they build, and the JSON the client
table shows each client is valid JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SECTION = "Let your users' assistants in"
FENCE = re.compile(r"^```python( fragment)?\n(.*?)^```", re.M | re.S)
CHECK = """
assert signin.issuer.metadata()["issuer"] == "https://notes.example.com"
assert signin.issuer.metadata()["authorization_endpoint"] == \\
    "https://notes.example.com/oauth/authorize"
assert transport.oauth.resource == "https://notes.example.com/mcp"
paths = [rule.matcher.regex.pattern for rule in app.wildcard_router.rules]
for path in ("/.well-known/oauth-authorization-server", "/oauth/authorize", "/oauth/token",
             "/oauth/register", "/oauth/revoke", "/oauth/jwks",
             "/.well-known/oauth-protected-resource/mcp"):
    assert any(p.startswith(path) for p in paths), (path, paths)
"""


def section() -> str:
    text = (ROOT / "docs" / "auth.md").read_text(encoding="utf-8")
    return text.split(f"\n## {SECTION}\n", 1)[1].split("\n## ", 1)[0]


def test_the_sections_blocks_run_and_build_the_sign_in(tmp_path: Path) -> None:
    found = FENCE.findall(section())
    assert found
    program = []
    for i, (fragment, code) in enumerate(found):
        compile(code, f"auth.md[{i}]", "exec")
        if not fragment:
            program.append(code)
    script = tmp_path / "signin_docs.py"
    script.write_text("\n".join(program) + CHECK, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr


def test_the_client_tables_json_is_json() -> None:
    snippets = re.findall(r"`(\{.*?\})`", section())
    assert len(snippets) == 2
    for snippet in snippets:
        json.loads(snippet)
