// tornado-mcp admin dashboard: the tools table (with live bounds), the callers table and
// the audit trail.  Polls api/tools, api/principals and api/audit under this page's prefix;
// a bound change is a PATCH api/tools/<name> carrying this login's XSRF token.
"use strict";

(function () {
  // The page's own helpers (admin.js): elements, the API with the login's XSRF token,
  // number formats, and whether this login may change anything.
  const { el, api, $, nf, fmtInt, READ_ONLY, POLL_MS } = window.tornadoMcpAdmin;
  const fmtMs = (n) => (n === null || n === undefined ? "–" : (n >= 100 ? nf.format(Math.round(n)) : n.toFixed(1)) + " ms");
  const fmtKB = (n) => (n === null || n === undefined ? "–" : nf.format(Math.round(n / 1024)) + " kB");
  const fmtSeconds = (s) => (s === null || s === undefined ? "none" : s + " s");
  const clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false });

  // In flight against the tool's cap, over a small meter (red at the cap).
  function inFlight(t) {
    const cap = t.max_concurrency;
    const bar = el("span");
    const ratio = cap ? t.in_flight / cap : 0;
    bar.style.width = Math.min(100, ratio * 100) + "%";
    return el("div", { class: "bounded" },
      el("span", {}, fmtInt(t.in_flight), el("small", {}, " / " + (cap === null ? "∞" : fmtInt(cap)))),
      el("div", { class: "meter " + (ratio >= 1 ? "bad" : ratio >= 0.75 ? "warn" : "") }, bar));
  }

  // ---- tools ---------------------------------------------------------------------------

  let editing = null; // the tool whose bounds form is open

  function toolRow(t) {
    return el("tr", { "data-tool": t.name },
      el("td", {}, el("code", { text: t.name })),
      el("td", { class: "num calls", text: fmtInt(t.calls) }),
      el("td", { class: "num errors", text: fmtInt(t.errors) }),
      el("td", { class: "num refusals", text: fmtInt(t.refusals) }),
      el("td", { class: "in-flight" }, inFlight(t)),
      el("td", { class: "num p50", text: fmtMs(t.p50_ms) }),
      el("td", { class: "num p99", text: fmtMs(t.p99_ms) }),
      el("td", { class: "num timeout", text: fmtSeconds(t.timeout) }),
      READ_ONLY ? null : el("td", { class: "actions" },
        el("button", { type: "button", class: "small", text: "Bounds", onclick: () => openEditor(t) })));
  }

  function setField(input, none, value) {
    none.checked = value === null;
    input.value = value === null ? "" : String(value);
    input.disabled = none.checked;
  }

  function openEditor(t) {
    editing = t.name;
    $("#tool-edit-name").textContent = t.name;
    setField($("#tool-timeout"), $("#tool-timeout-none"), t.timeout);
    setField($("#tool-max-concurrency"), $("#tool-max-concurrency-none"), t.max_concurrency);
    for (const f of ["timeout", "max_concurrency"]) $("#tool-error-" + f).textContent = "";
    $("#tool-status").textContent = "";
    $("#tool-edit").hidden = false;
  }

  function value(input, none) {
    if (none.checked) return null;
    const raw = input.value.trim();
    const n = Number(raw);
    return raw !== "" && Number.isFinite(n) ? n : raw;
  }

  if (!READ_ONLY) {
    for (const [input, none] of [["#tool-timeout", "#tool-timeout-none"], ["#tool-max-concurrency", "#tool-max-concurrency-none"]]) {
      $(none).addEventListener("change", () => { $(input).disabled = $(none).checked; });
    }
    $("#tool-edit-close").addEventListener("click", () => { editing = null; $("#tool-edit").hidden = true; });
    $("#tool-edit").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      for (const f of ["timeout", "max_concurrency"]) $("#tool-error-" + f).textContent = "";
      const changes = {
        timeout: value($("#tool-timeout"), $("#tool-timeout-none")),
        max_concurrency: value($("#tool-max-concurrency"), $("#tool-max-concurrency-none")),
      };
      try {
        const row = await api("PATCH", "tools/" + encodeURIComponent(editing), changes);
        $("#tool-status").textContent = row.changed ? "Applied to " + row.name : "Nothing changed.";
        refresh();
      } catch (err) {
        for (const [name, message] of Object.entries(err.errors || {})) {
          const slot = $("#tool-error-" + name);
          if (slot) slot.textContent = message;
        }
        $("#tool-status").textContent = err.message;
      }
    });
  }

  async function loadTools() {
    const page = await api("GET", "tools");
    $("#tools-table tbody").replaceChildren(...page.items.map(toolRow));
    $("#tools-empty").hidden = page.items.length > 0;
    $("#tools-count").textContent = fmtInt(page.items.length);
  }

  // ---- callers -------------------------------------------------------------------------

  async function loadPrincipals() {
    const page = await api("GET", "principals");
    $("#principals-table tbody").replaceChildren(...page.items.map((p) => el("tr", { "data-principal": p.principal },
      el("td", {}, el("code", { text: p.principal })),
      el("td", { class: "num", text: fmtInt(p.calls) }),
      el("td", { class: "num", text: fmtInt(p.errors) }),
      el("td", { class: "num", text: fmtInt(p.refusals) }),
      el("td", { class: "num", text: fmtInt(p.in_flight) }),
      el("td", { title: new Date(p.last_seen * 1000).toString(), text: clock(p.last_seen) }))));
    $("#principals-empty").hidden = page.items.length > 0;
    $("#principals-count").textContent = fmtInt(page.items.length);
  }

  // ---- audit trail ---------------------------------------------------------------------

  async function loadAudit() {
    const qs = new URLSearchParams({ limit: $("#audit-limit").value });
    for (const [key, sel] of [["principal", "#audit-principal"], ["tool", "#audit-tool"], ["outcome", "#audit-outcome"]]) {
      const v = $(sel).value.trim();
      if (v) qs.set(key, v);
    }
    const page = await api("GET", "audit?" + qs);
    $("#audit-table tbody").replaceChildren(...page.items.map((a) => el("tr", { "data-outcome": a.outcome },
      el("td", { title: new Date(a.time * 1000).toString(), text: clock(a.time) }),
      el("td", {}, el("code", { text: a.principal })),
      el("td", { text: a.method }),
      el("td", {}, el("code", { text: a.name })),
      el("td", {}, el("span", { class: "chip outcome-" + a.outcome, text: a.outcome })),
      el("td", { class: "num", text: a.code === null ? "" : String(a.code) }),
      el("td", { class: "num", text: fmtMs(a.duration_ms) }),
      el("td", {}, el("code", { text: JSON.stringify(a.request_id) })),
      el("td", {}, el("code", { title: a.arguments_sha256, text: a.arguments_sha256.slice(0, 12) + "…" })))));
    $("#audit-empty").hidden = page.items.length > 0;
    if (page.trail) {
      $("#audit-size").textContent = `${fmtInt(page.trail.records)} records · ${fmtKB(page.trail.bytes)}`;
    }
  }

  for (const sel of ["#audit-principal", "#audit-tool"]) $(sel).addEventListener("input", () => loadAudit().catch(() => {}));
  for (const sel of ["#audit-outcome", "#audit-limit"]) $(sel).addEventListener("change", () => loadAudit().catch(() => {}));

  let timer = null;
  async function refresh() {
    clearTimeout(timer);
    try {
      await Promise.all([loadTools(), loadPrincipals(), loadAudit()]);
    } catch (err) {
      // The main script shows the page as stale; a logged-out page is sent to the login.
    } finally {
      timer = setTimeout(refresh, POLL_MS);
    }
  }
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  refresh();
})();
