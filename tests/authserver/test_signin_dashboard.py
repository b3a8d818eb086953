"""The dashboard's sign-in sections: the registered clients and who let which one in,
read through its JSON API and revoked live (the token stops working at once), under the
app's own login; and the same in Chromium, an admin clicking Revoke."""

from __future__ import annotations

import re

import httpx
import pytest
from browser_support import chromium
from signin_support import PASSWORDS, App, serving

pytestmark = pytest.mark.timeout(90)


async def admin_api(app: App, user: str = "root") -> tuple[httpx.AsyncClient,
                                                          dict[str, str]]:
    """A browser logged in to the app as ``user``, and the XSRF header its changes need."""
    http = await app.signed_in(user)
    return http, {"X-XSRFToken": http.cookies["_xsrf"]}


async def test_clients_and_consents_are_listed_and_revoked_live() -> None:
    async with serving() as app:
        flow, ada = await app.tokens("ada", client_name="Claude")
        _flow, root = await app.tokens("root", "notes notes:admin", client_name="Cursor")
        http, xsrf = await admin_api(app)
        clients = (await http.get(app.base + "/admin/api/oauth/clients")).json()["items"]
        assert {(c["client_name"], c["grants"], c["auth_method"]) for c in clients} == {
            ("Claude", 1, "none"), ("Cursor", 1, "none")}
        assert all("secret" not in str(c) for c in clients)
        consents = (await http.get(app.base + "/admin/api/oauth/consents")).json()["items"]
        assert [(c["subject"], c["client_name"], c["scopes"]) for c in consents] == [
            ("ada", "Claude", ["notes"]), ("root", "Cursor", ["notes", "notes:admin"])]
        only_ada = await http.get(app.base + "/admin/api/oauth/consents?subject=ada")
        assert [c["subject"] for c in only_ada.json()["items"]] == ["ada"]
        # ada's consent taken back: her token is refused at once, root's still works
        r = await http.request("DELETE", app.base + "/admin/api/oauth/consents", headers=xsrf,
                               json={"subject": "ada", "client_id": flow.client_id})
        assert r.status_code == 200 and r.json()["revoked"] == 1
        assert (await app.call(ada["access_token"])).status_code == 401
        assert (await app.refresh(flow, ada["refresh_token"])).status_code == 400
        assert (await app.call(root["access_token"])).status_code == 200
        again = await http.request("DELETE", app.base + "/admin/api/oauth/consents",
                                   headers=xsrf, json={"subject": "ada",
                                                       "client_id": flow.client_id})
        assert again.status_code == 404
        # removing a client ends everything it holds
        cursor = next(c["client_id"] for c in clients if c["client_name"] == "Cursor")
        r = await http.delete(app.base + "/admin/api/oauth/clients/" + cursor, headers=xsrf)
        assert r.status_code == 200
        assert (await app.call(root["access_token"])).status_code == 401
        assert [c["client_name"] for c in (await http.get(
            app.base + "/admin/api/oauth/clients")).json()["items"]] == ["Claude"]
        changes = (await http.get(app.base + "/admin/api/overview")).json()["changes"]
        assert [(c["action"], c["actor"].split("@")[0]) for c in changes[:2]] == [
            ("remove_client", "admin:root"), ("revoke_consent", "admin:root")]


async def test_the_sign_in_api_needs_the_admins_login_and_xsrf() -> None:
    async with serving() as app:
        anonymous = app.http()
        r = await anonymous.get(app.base + "/admin/api/oauth/clients")
        assert r.status_code == 401
        ada, _ = await admin_api(app, "ada")  # logged in, but no admin
        assert (await ada.get(app.base + "/admin/api/oauth/clients")).status_code == 401
        root, _ = await admin_api(app)
        r = await root.request("DELETE", app.base + "/admin/api/oauth/consents",
                               json={"subject": "ada", "client_id": "x"})
        assert r.status_code == 403  # no XSRF token: a page elsewhere cannot revoke
        for body in ({}, {"subject": "ada"}, {"subject": 5, "client_id": "x"},
                     {"subject": "a", "client_id": "x" * 3000}):
            r = await root.request("DELETE", app.base + "/admin/api/oauth/consents",
                                   headers={"X-XSRFToken": root.cookies["_xsrf"]}, json=body)
            assert r.status_code == 400 and "error" in r.json()


@pytest.mark.browser
async def test_an_admin_revokes_a_consent_on_the_dashboard_page() -> None:
    async with serving() as app, chromium(["--no-sandbox"]) as browser:
        _flow, ada = await app.tokens("ada", client_name="Claude")
        context = await browser.new_context()
        page = await context.new_page()
        await page.goto(app.base + "/admin/")
        await page.fill('input[name="name"]', "root")  # sent to the app's own login
        await page.fill('input[name="password"]', PASSWORDS["root"])
        async with page.expect_navigation():
            await page.click("button")
        row = page.locator("#oauth-consents-table tbody tr")
        await row.first.wait_for()
        assert re.sub(r"\s+", " ", await row.first.inner_text()).startswith("ada Claude notes")
        assert await page.locator("#oauth-clients-table tbody tr").count() == 1
        button = row.first.locator("button")
        await button.click()  # armed: it asks
        assert await button.inner_text() == "Revoke?"
        assert (await app.call(ada["access_token"])).status_code == 200  # nothing yet
        await button.click()
        await page.locator("#oauth-consents-empty").wait_for(state="visible")
        assert (await app.call(ada["access_token"])).status_code == 401
        changes = page.locator("#changes li", has_text="revoked what ada gave client")
        await changes.first.wait_for()
        await context.close()
