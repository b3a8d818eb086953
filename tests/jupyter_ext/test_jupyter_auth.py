"""Jupyter's login guards MCP and the dashboard; the limits are configured the Jupyter way.

Raw HTTP against real Jupyter servers: without the server's token MCP answers 401 with a
JSON-RPC error (and the dashboard 401 or a redirect to Jupyter's login page), the token is
accepted in both of Jupyter's schemes, Jupyter's own REST API is untouched, and every
transport limit is a trait set from ``jupyter_server_config.py`` or the command line,
validated as the flags are, and live-tunable from the dashboard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import CONFIG_FILE
from .jupyter_proc import MODERN, STEP, JupyterProc, modern_call, post, result

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow,
              pytest.mark.xdist_group("jupyter_auth")]  # one worker: its Jupyter servers

@pytest.mark.parametrize("auth", [{}, {"Authorization": "Bearer not-the-token"},
                                  {"Authorization": "token not-the-token"},
                                  {"Authorization": "Basic dXNlcjpwYXNz"}])
def test_mcp_without_the_token_is_401(jupyter: JupyterProc, auth: dict[str, str]) -> None:
    r = post(jupyter, auth)
    assert r.status_code == 401
    assert r.headers["WWW-Authenticate"] == 'Bearer realm="jupyter"'
    assert r.json() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600,
        "message": "Unauthorized: send Jupyter's token as 'Authorization: Bearer <token>'"}}


@pytest.mark.parametrize("scheme", ["Bearer", "token", "bearer"])
def test_mcp_with_the_token_in_either_scheme(jupyter: JupyterProc, scheme: str) -> None:
    discovered = result(post(jupyter, jupyter.auth(scheme)))
    assert discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "jupyter-server"
    assert discovered["supportedVersions"] == [MODERN]
    assert discovered["capabilities"]["resources"]["subscribe"] is True


def whoami(jp: JupyterProc) -> dict[str, Any]:
    called = result(post(jp, jp.auth(), "tools/call", {"name": "whoami", "arguments": {}},
                         "whoami"))
    return called["structuredContent"]  # type: ignore[no-any-return]


def test_the_principal_is_jupyters_user_with_the_authorizers_scopes(
        jupyter: JupyterProc, jupyter_no_execute_auth: JupyterProc) -> None:
    me = whoami(jupyter)
    # A shared token names no one (Jupyter makes up an anonymous user for each request):
    # the caller is the token's holder, one caller across requests.
    assert me["name"].startswith("Anonymous ")
    assert me["subject"] == "jupyter-token-holder"
    assert me["method"] == "jupyter-token"
    assert me["authenticated"] is True
    assert me["scopes"] == ["contents:read", "contents:write", "kernels:execute",
                            "kernels:read"]
    assert whoami(jupyter_no_execute_auth)["scopes"] == [
        "contents:read", "contents:write", "kernels:read"]


def test_an_authorizer_that_denies_execute_refuses_run_code_but_not_reading(
        jupyter_no_execute_auth: JupyterProc) -> None:
    jp = jupyter_no_execute_auth
    denied = result(post(jp, jp.auth(), "tools/call",
                         {"name": "run_code", "arguments": {"code": "print(1)"}}, "run_code"))
    assert denied["isError"] is True
    message = denied["content"][0]["text"]
    assert message.startswith("Jupyter does not authorize ")
    assert message.endswith(" to execute kernels on this server.")
    read = result(post(jp, jp.auth(), "tools/call",
                       {"name": "read_notebook", "arguments": {"path": "demo.ipynb"}},
                       "read_notebook"))
    assert "isError" not in read
    assert read["structuredContent"]["cells"][0]["source"] == "print('hi')"


def test_jupyters_own_api_still_needs_and_takes_its_token(jupyter: JupyterProc) -> None:
    assert httpx.get(f"{jupyter.base}/api/contents", timeout=STEP).status_code == 403
    r = httpx.get(f"{jupyter.base}/api/contents", headers=jupyter.auth("token"), timeout=STEP)
    assert r.status_code == 200
    assert {c["name"] for c in r.json()["content"]} == {"demo.ipynb", "sub"}


def test_dashboard_uses_jupyters_login(jupyter: JupyterProc) -> None:
    admin = f"{jupyter.mcp_url}/admin"
    page = httpx.get(f"{admin}/", timeout=STEP)
    assert page.status_code == 302
    assert page.headers["Location"] == "/login?next=%2Fmcp%2Fadmin%2F"
    api = httpx.get(f"{admin}/api/overview", timeout=STEP)
    assert api.status_code == 401
    wrong = httpx.get(f"{admin}/api/overview", headers={"Authorization": "Bearer nope"},
                      timeout=STEP)
    assert wrong.status_code == 401
    ok = httpx.get(f"{admin}/api/overview", headers=jupyter.auth("token"), timeout=STEP)
    assert ok.status_code == 200
    assert ok.json()["sessions"]["limit"] == 5
    # The dashboard's own token login is not there: Jupyter's login page is.
    login = httpx.get(f"{admin}/login", timeout=STEP)
    assert login.status_code == 303
    assert login.headers["Location"] == "/login?next=%2Fmcp%2Fadmin%2F"


def test_a_browser_logged_in_to_jupyter_sees_the_dashboard(jupyter: JupyterProc) -> None:
    with httpx.Client(base_url=jupyter.base, timeout=STEP) as browser:
        form = browser.get("/login")
        assert form.status_code == 200
        xsrf = browser.cookies["_xsrf"]
        logged_in = browser.post("/login", data={"password": jupyter.token, "_xsrf": xsrf})
        assert logged_in.status_code == 302
        page = browser.get("/mcp/admin/")
        assert page.status_code == 200
        assert "tornado-mcp" in page.text
        assert "Log out" not in page.text  # logging out is Jupyter's
        # A change made with the login cookie needs Jupyter's XSRF token, like Jupyter's own.
        no_xsrf = browser.patch("/mcp/admin/api/limits", json={"max_sessions": 6})
        assert no_xsrf.status_code == 403
        changed = browser.patch("/mcp/admin/api/limits", json={"max_sessions": 6},
                                headers={"X-XSRFToken": xsrf})
        assert changed.status_code == 200, changed.text
        assert changed.json()["limits"]["max_sessions"] == 6
        back = browser.patch("/mcp/admin/api/limits", json={"max_sessions": 5},
                             headers={"X-XSRFToken": xsrf})
        assert back.json()["limits"]["max_sessions"] == 5


def limits(jp: JupyterProc) -> dict[str, Any]:
    r = httpx.get(f"{jp.mcp_url}/admin/api/limits", headers=jp.auth(), timeout=STEP)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_limits_come_from_the_command_line_and_the_config_file(jupyter: JupyterProc,
                                                               jupyter_no_exec: JupyterProc
                                                               ) -> None:
    assert CONFIG_FILE == "c.MCPExtension.max_stream_queue = 77\n"
    configured = limits(jupyter)["limits"]
    assert configured["max_sessions"] == 5  # --MCPExtension.max_sessions=5
    assert configured["max_stream_queue"] == 77  # jupyter_server_config.py
    defaults = limits(jupyter_no_exec)["limits"]
    assert defaults["max_sessions"] == 10_000
    assert defaults["max_stream_queue"] == 1000


def test_a_token_changes_limits_live_and_bad_values_get_the_flags_messages(
        jupyter: JupyterProc) -> None:
    url = f"{jupyter.mcp_url}/admin/api/limits"
    bad = httpx.patch(url, headers=jupyter.auth(), json={"max_sessions": 0}, timeout=STEP)
    assert bad.status_code == 400
    assert bad.json()["errors"] == {"max_sessions": "must be a positive integer or none"}
    ok = httpx.patch(url, headers=jupyter.auth("token"),
                     json={"session_idle_timeout": 60}, timeout=STEP)
    assert ok.status_code == 200, ok.text
    assert ok.json()["limits"]["session_idle_timeout"] == 60.0
    httpx.patch(url, headers=jupyter.auth(), json={"session_idle_timeout": 1800},
                timeout=STEP).raise_for_status()


def test_everything_moves_under_jupyters_base_url(tmp_path: Path) -> None:
    jp = JupyterProc(tmp_path, ["--ServerApp.base_url=/lab/"])
    try:
        jp.wait()
        at_root = httpx.post(jp.mcp_url, headers=jp.auth(), timeout=STEP)
        assert at_root.status_code == 404
        headers, body = modern_call("server/discover", {})
        r = httpx.post(f"{jp.base}/lab/mcp", headers={**headers, **jp.auth()}, content=body,
                       timeout=STEP)
        assert r.status_code == 200, r.text
        anonymous = httpx.post(f"{jp.base}/lab/mcp", headers=headers, content=body,
                               timeout=STEP)
        assert anonymous.status_code == 401
        page = httpx.get(f"{jp.base}/lab/mcp/admin/", timeout=STEP)
        assert page.status_code == 302
        assert page.headers["Location"] == "/lab/login?next=%2Flab%2Fmcp%2Fadmin%2F"
        api = httpx.get(f"{jp.base}/lab/mcp/admin/api/overview", headers=jp.auth(),
                        timeout=STEP)
        assert api.status_code == 200
    finally:
        jp.stop()


def test_a_cors_preflight_is_answered_without_asking_for_a_login(jupyter: JupyterProc) -> None:
    # Browsers send preflights without credentials: the CORS rules answer them, never 401.
    r = httpx.options(jupyter.mcp_url, timeout=STEP, headers={
        "Origin": "http://127.0.0.1:9", "Access-Control-Request-Method": "POST"})
    assert r.status_code == 403
    assert "WWW-Authenticate" not in r.headers
