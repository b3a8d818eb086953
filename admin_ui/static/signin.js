// tornado-mcp admin dashboard: the app's own authorization server. Polls api/oauth/consents
// and api/oauth/clients under this page's prefix; revoking a consent is a DELETE
// api/oauth/consents with {subject, client_id}, removing a client a DELETE
// api/oauth/clients/<id>, each carrying this login's XSRF token.
"use strict";

(function () {
  const { el, api, armedButton, $, fmtInt, READ_ONLY, POLL_MS } = window.tornadoMcpAdmin;
  const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "never");

  function consentRow(c) {
    return el("tr", { "data-consent": c.subject + " " + c.client_id },
      el("td", {}, el("code", { text: c.subject })),
      el("td", { title: c.client_id, text: c.client_name }),
      el("td", {}, el("code", { text: c.scopes.join(" ") || "(none)" })),
      el("td", { class: "num", text: fmtInt(c.grants) }),
      el("td", { text: when(c.created) }),
      el("td", { text: when(c.last_used) }),
      READ_ONLY ? null : el("td", { class: "actions" },
        armedButton("consent " + c.subject + " " + c.client_id, "Revoke", "Revoke?", () => revoke(c))));
  }

  function clientRow(c) {
    return el("tr", { "data-client": c.client_id },
      el("td", { text: c.client_name }),
      el("td", {}, el("code", { title: c.client_id, text: c.client_id.length > 16 ? c.client_id.slice(0, 12) + "…" : c.client_id })),
      el("td", {}, el("code", { text: c.redirect_uris.join(" ") })),
      el("td", { text: c.auth_method }),
      el("td", { class: "num", text: fmtInt(c.grants) }),
      el("td", { text: when(c.issued_at) }),
      el("td", { text: when(c.used_at) }),
      READ_ONLY ? null : el("td", { class: "actions" },
        armedButton("client " + c.client_id, "Remove", "Remove?", () => remove(c))));
  }

  // Each takes effect at once; the buttons ask twice (click, then "Revoke?") like the
  // dashboard's others.
  async function revoke(c) {
    await api("DELETE", "oauth/consents", { subject: c.subject, client_id: c.client_id });
    refresh();
  }

  async function remove(c) {
    await api("DELETE", "oauth/clients/" + encodeURIComponent(c.client_id));
    refresh();
  }

  async function load() {
    const subject = $("#oauth-subject").value.trim();
    const consents = await api("GET", "oauth/consents" + (subject ? "?subject=" + encodeURIComponent(subject) : ""));
    $("#oauth-consents-table tbody").replaceChildren(...consents.items.map(consentRow));
    $("#oauth-consents-empty").hidden = consents.items.length > 0;
    $("#oauth-consents-count").textContent = fmtInt(consents.items.length);
    const clients = await api("GET", "oauth/clients");
    $("#oauth-clients-table tbody").replaceChildren(...clients.items.map(clientRow));
    $("#oauth-clients-empty").hidden = clients.items.length > 0;
    $("#oauth-clients-count").textContent = fmtInt(clients.items.length);
  }

  $("#oauth-subject").addEventListener("input", () => load().catch(() => {}));
  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      await load();
    } catch (err) {
      // The main script shows the page as stale; a logged-out page is sent to the login.
    } finally {
      timer = setTimeout(refresh, POLL_MS);
    }
  }
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  refresh();
})();
