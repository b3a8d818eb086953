// tornado-mcp admin dashboard: polls the JSON API under this page's prefix and draws it.
//
// Everything here is served by the admin_ui package itself; nothing is fetched from
// elsewhere (the Content-Security-Policy forbids it). Plots are plain inline SVG.
// State-changing requests send this login's XSRF token (the page's data-xsrf, which the
// server derives from the login cookie) in the X-XSRFToken header.
"use strict";

(function () {
  const body = document.body;
  const PREFIX = body.dataset.prefix;
  const XSRF = body.dataset.xsrf;
  const READ_ONLY = body.dataset.readOnly === "true";
  const POLL_MS = 2000;
  const HISTORY_KEEP = 600;
  const SVG_NS = "http://www.w3.org/2000/svg";

  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

  // ---- formatting ----------------------------------------------------------------------

  const nf = new Intl.NumberFormat("en-US");
  const fmtInt = (n) => (n === null || n === undefined ? "–" : nf.format(n));
  const fmtLimit = (n) => (n === null || n === undefined ? "∞" : nf.format(n));

  function fmtBytes(n) {
    if (n === null || n === undefined) return "∞";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    let v = n;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
    return (i === 0 ? String(v) : v.toFixed(v < 10 ? 1 : 0)) + " " + units[i];
  }

  function fmtDuration(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " min " + (s % 60) + " s";
    const h = Math.floor(m / 60);
    if (h < 48) return h + " h " + (m % 60) + " min";
    return Math.floor(h / 24) + " d " + (h % 24) + " h";
  }

  const ago = (t) => fmtDuration(Date.now() / 1000 - t) + " ago";
  const clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false });
  const shortId = (id) => (id.length > 12 ? id.slice(0, 8) + "…" : id);

  function fmtRate(r) {
    if (r === null || r === undefined) return "–";
    return r >= 100 ? nf.format(Math.round(r)) : r.toFixed(1);
  }

  function level(value, limit) {
    if (limit === null || limit === undefined || limit <= 0) return { pct: 0, cls: "" };
    const ratio = value / limit;
    return { pct: Math.min(100, ratio * 100), cls: ratio >= 0.95 ? "bad" : ratio >= 0.75 ? "warn" : "" };
  }

  // ---- DOM helpers ---------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function meter(value, limit) {
    const { pct, cls } = level(value, limit);
    const bar = el("span");
    bar.style.width = pct + "%";
    return el("div", { class: "meter " + cls }, bar);
  }

  // A number shown against its bound: "12.3 KiB / 64 KiB" over a small meter.
  function bounded(value, limit, fmt) {
    return el("div", { class: "bounded" },
      el("span", {}, fmt(value), el("small", {}, " / " + fmt(limit))),
      meter(value, limit));
  }

  let toastTimer = null;
  function toast(message, bad) {
    let node = $(".toast");
    if (!node) { node = el("div", { class: "toast", role: "status" }); body.append(node); }
    node.textContent = message;
    node.className = "toast show" + (bad ? " bad" : "");
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { node.className = "toast"; }, 3500);
  }

  // ---- API -----------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, payload) {
      super((payload && payload.error) || "HTTP " + status);
      this.status = status;
      this.errors = (payload && payload.errors) || {};
    }
  }

  async function api(method, path, payload) {
    const init = { method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "GET") init.headers["X-XSRFToken"] = XSRF;
    if (payload !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(payload);
    }
    const res = await fetch(PREFIX + "/api/" + path, init);
    if (res.status === 401) {
      window.location.assign(PREFIX + "/login?next=" + encodeURIComponent(PREFIX + "/"));
      throw new ApiError(401, { error: "Logged out" });
    }
    const data = await res.json().catch(() => null);
    if (!res.ok) throw new ApiError(res.status, data);
    return data;
  }

  // ---- overview ------------------------------------------------------------------------

  const formatters = {
    "sessions.count": fmtInt, "sessions.limit": fmtLimit,
    "streams.count": fmtInt, "streams.limit": fmtLimit,
    "retained.bytes": fmtBytes, "retained.values": fmtInt, "retained.subscription_uris": fmtInt,
    "requests.per_second": fmtRate, "requests.total": fmtInt, "in_flight": fmtInt,
    "process.rss_bytes": fmtBytes, "process.cpu_percent": (v) => v.toFixed(1) + " %",
    "process.open_fds": fmtInt, "process.threads": fmtInt, "process.uptime_seconds": fmtDuration,
    "tasks.count": fmtInt, "tasks.limit": fmtLimit, "tasks.running": fmtInt,
    "tasks.result_bytes": fmtBytes,
  };

  const lookup = (obj, path) => path.split(".").reduce((o, k) => (o == null ? o : o[k]), obj);

  // The cluster this process belongs to (null: a single process, the card stays hidden).
  function renderCluster(c) {
    const card = $("#cluster");
    card.hidden = !c;
    if (!c) return;
    const t = c.totals;
    $("#cluster-state").textContent = c.connected
      ? `${fmtInt(t.processes)} processes` : "Redis unreachable: serving local clients only";
    card.classList.toggle("hit", !c.connected);
    $("#cluster-totals").textContent =
      `${fmtInt(t.sessions)} sessions · ${fmtInt(t.listen_streams)} listen streams · ` +
      `${fmtBytes(t.retained_bytes)} retained · ${fmtInt(t.refusals)} refusals · ` +
      `${fmtInt(c.relay.buffered)} queued for Redis`;
  }

  function renderOverview(o) {
    for (const node of $$("[data-bind]")) {
      const path = node.dataset.bind;
      node.textContent = (formatters[path] || String)(lookup(o, path));
    }
    for (const name of ["sessions", "streams"]) {
      const m = $(`[data-meter="${name}"]`);
      const { pct, cls } = level(o[name].count, o[name].limit);
      m.style.width = pct + "%";
      m.parentElement.className = "meter " + cls;
    }
    for (const row of $$("#refusals [data-refusal]")) {
      const n = o.refusals[row.dataset.refusal] || 0;
      row.lastElementChild.textContent = fmtInt(n);
      row.classList.toggle("hit", n > 0);
    }
    renderCluster(o.cluster);
    renderChanges(o.changes);
    syncLimits(o.limits);
  }

  function describeChange(e) {
    if (e.action === "limits") {
      const shown = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v)
        : typeof v === "boolean" ? (v ? "on" : "off") : fmtLimit(v));
      return Object.entries(e.detail)
        .map(([k, v]) => `${k} ${shown(v.old)} → ${shown(v.new)}`).join(", ");
    }
    if (e.action === "end_session") return "ended session " + shortId(e.detail.id);
    if (e.action === "close_stream") return "closed listen stream " + shortId(e.detail.id);
    if (e.action === "revoke_consent") return "revoked what " + e.detail.subject + " gave client " + shortId(e.detail.client_id);
    if (e.action === "remove_client") return "removed client " + shortId(e.detail.client_id);
    return e.action;
  }

  function renderChanges(changes) {
    const list = $("#changes");
    if (!changes.length) return;
    list.replaceChildren(...changes.map((e) => el("li", {},
      el("time", { datetime: new Date(e.t * 1000).toISOString(), text: clock(e.t) }),
      el("strong", { text: e.actor }), " ", describeChange(e))));
  }

  // ---- plots ---------------------------------------------------------------------------

  const samples = [];
  let lastSampleT = null;

  function addSamples(list) {
    for (const s of list) samples.push(s);
    if (samples.length > HISTORY_KEEP) samples.splice(0, samples.length - HISTORY_KEEP);
    if (samples.length) lastSampleT = samples[samples.length - 1].t;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    return node;
  }

  function drawPlot(fig) {
    const key = fig.dataset.plot;
    const unit = fig.dataset.unit;
    const fmt = unit === "bytes" ? fmtBytes : unit === "rate" ? fmtRate : fmtInt;
    if (!fig.firstChild) {
      fig.append(el("figcaption", {}, el("span", { text: fig.dataset.title }), el("strong", { text: "–" })));
      fig.append(svg("svg", { viewBox: "0 0 300 80", preserveAspectRatio: "none", role: "img",
        "aria-label": fig.dataset.title + " over the last minutes" }));
      fig.append(el("div", { class: "scale" }, el("span", { class: "span" }), el("span", { class: "max" })));
    }
    const chart = fig.querySelector("svg");
    const points = samples.map((s) => [s.t, s[key]]);
    fig.querySelector("strong").textContent = points.length ? fmt(points[points.length - 1][1]) : "–";
    chart.replaceChildren();
    if (points.length < 2) return;
    const t1 = points[points.length - 1][0];
    const t0 = Math.min(points[0][0], t1 - 60);
    const peak = Math.max(...points.map((p) => p[1]));
    const top = Math.max(1, peak) * 1.1;
    const x = (t) => ((t - t0) / (t1 - t0)) * 300;
    const y = (v) => 79 - (v / top) * 76;
    const line = points.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
    const first = x(points[0][0]).toFixed(1);
    chart.append(svg("path", { class: "area", d: line + `L300,80L${first},80Z` }));
    chart.append(svg("path", { class: "line", d: line }));
    fig.querySelector(".scale .span").textContent = "last " + fmtDuration(t1 - t0);
    fig.querySelector(".scale .max").textContent = "peak " + fmt(peak);
  }

  // ---- sessions ------------------------------------------------------------------------

  const sessionsQuery = { sort: "last_active_at", order: "desc", q: "", offset: 0, limit: 25 };
  let lastSessions = null;
  const armed = new Map(); // id -> time a destructive button was first clicked

  function armedButton(id, label, confirmLabel, action) {
    const isArmed = armed.has(id) && Date.now() - armed.get(id) < 4000;
    return el("button", {
      type: "button", class: "danger small", "data-id": id, text: isArmed ? confirmLabel : label,
      title: isArmed ? "Click again to confirm" : null,
      onclick: async (ev) => {
        const btn = ev.currentTarget;
        if (!(armed.has(id) && Date.now() - armed.get(id) < 4000)) {
          armed.set(id, Date.now());
          btn.textContent = confirmLabel;
          setTimeout(() => { if (armed.get(id) && btn.isConnected) { armed.delete(id); btn.textContent = label; } }, 4000);
          return;
        }
        armed.delete(id);
        btn.disabled = true;
        try { await action(); } catch (err) { toast(err.message, true); }
        refresh();
      },
    });
  }

  function sessionRow(s, bounds) {
    const client = s.client_name ? s.client_name + (s.client_version ? " " + s.client_version : "") : "–";
    return el("tr", { "data-session": s.id },
      el("td", {}, el("code", { title: s.id, text: shortId(s.id) })),
      el("td", { text: client }),
      el("td", {}, caller(s.principal)),
      el("td", { text: s.protocol_version }),
      el("td", { title: new Date(s.created_at * 1000).toString(), text: ago(s.created_at) }),
      el("td", { title: new Date(s.last_active_at * 1000).toString(), text: ago(s.last_active_at) }),
      el("td", { class: "num", text: fmtInt(s.in_flight) }),
      el("td", { class: "retained-bytes" }, bounded(s.retained_bytes, bounds.session_retained_bytes, fmtBytes)),
      el("td", { class: "retained-values" }, bounded(s.retained_values, bounds.session_retained_values, fmtLimit)),
      READ_ONLY ? null : el("td", { class: "actions" }, armedButton(s.id, "End", "End session?", async () => {
        await api("DELETE", "sessions/" + encodeURIComponent(s.id));
        toast("Session " + shortId(s.id) + " ended");
      })));
  }

  function renderSessions(page) {
    lastSessions = page;
    const tbody = $("#sessions-table tbody");
    tbody.replaceChildren(...page.items.map((s) => sessionRow(s, page.bounds)));
    $("#sessions-empty").hidden = page.items.length > 0;
    $("#sessions-empty").textContent = page.total ? "No session matches the filter." : "No sessions.";
    $("#sessions-count").textContent = page.q ? `${fmtInt(page.matched)} of ${fmtInt(page.total)}` : fmtInt(page.total);
    const end = Math.min(page.offset + page.items.length, page.matched);
    $("#sessions-range").textContent = page.matched ? `${fmtInt(page.offset + 1)}–${fmtInt(end)} of ${fmtInt(page.matched)}` : "0";
    $("#sessions-prev").disabled = page.offset <= 0;
    $("#sessions-next").disabled = end >= page.matched;
    for (const b of $$("#sessions-table th button")) {
      const on = b.dataset.sort === sessionsQuery.sort;
      b.className = on ? "sorted " + sessionsQuery.order : "";
      b.closest("th").setAttribute("aria-sort", on ? (sessionsQuery.order === "asc" ? "ascending" : "descending") : "none");
    }
  }

  function loadSessions() {
    const qs = new URLSearchParams(Object.entries(sessionsQuery).map(([k, v]) => [k, String(v)]));
    return api("GET", "sessions?" + qs).then((page) => {
      // A page past the end (sessions ended meanwhile): step back to the last page.
      if (page.items.length === 0 && page.offset > 0 && page.matched > 0) {
        sessionsQuery.offset = Math.max(0, Math.floor((page.matched - 1) / sessionsQuery.limit) * sessionsQuery.limit);
        return loadSessions();
      }
      renderSessions(page);
      return page;
    });
  }

  for (const b of $$("#sessions-table th button")) {
    b.addEventListener("click", () => {
      const key = b.dataset.sort;
      if (sessionsQuery.sort === key) sessionsQuery.order = sessionsQuery.order === "asc" ? "desc" : "asc";
      else { sessionsQuery.sort = key; sessionsQuery.order = ["id", "client_name", "protocol_version"].includes(key) ? "asc" : "desc"; }
      sessionsQuery.offset = 0;
      loadSessions().catch(showStale);
    });
  }
  let filterTimer = null;
  $("#sessions-filter").addEventListener("input", (ev) => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      sessionsQuery.q = ev.target.value.trim();
      sessionsQuery.offset = 0;
      loadSessions().catch(showStale);
    }, 250);
  });
  $("#sessions-limit").addEventListener("change", (ev) => {
    sessionsQuery.limit = Number(ev.target.value);
    sessionsQuery.offset = 0;
    loadSessions().catch(showStale);
  });
  $("#sessions-prev").addEventListener("click", () => {
    sessionsQuery.offset = Math.max(0, sessionsQuery.offset - sessionsQuery.limit);
    loadSessions().catch(showStale);
  });
  $("#sessions-next").addEventListener("click", () => {
    if (lastSessions && sessionsQuery.offset + sessionsQuery.limit < lastSessions.matched) {
      sessionsQuery.offset += sessionsQuery.limit;
      loadSessions().catch(showStale);
    }
  });

  // ---- listen streams ------------------------------------------------------------------

  let openStream = null; // id of the stream whose detail is shown

  // Who opened a session or stream: subject, how, and scopes on hover (never claims).
  function caller(p) {
    if (!p) return el("span", { class: "muted", text: "anonymous" });
    return el("span", { title: (p.method || "") + (p.scopes && p.scopes.length ? " · " + p.scopes.join(" ") : ""),
                        text: p.subject });
  }

  // The acknowledged filter: its flags (honored) and the resource URIs it watches, which
  // the listing counts (uri_count) and the "URIs" detail lists.
  function honoredChips(s) {
    const on = Object.entries(s.honored || {}).filter(([, v]) => v !== false && v !== null);
    const chips = on.map(([k, v]) => el("span", { class: "chip", title: JSON.stringify(v), text: k }));
    if (s.uri_count) {
      const n = fmtInt(s.uri_count) + (s.uri_count === 1 ? " URI" : " URIs");
      chips.push(el("span", { class: "chip", title: "resourceSubscriptions: " + n, text: "resources: " + n }));
    }
    if (!chips.length) return el("span", { class: "muted", text: "nothing" });
    return el("span", {}, ...chips);
  }

  function streamRow(s, bounds) {
    return el("tr", { "data-stream": s.id },
      el("td", {}, el("code", { title: s.id, text: shortId(s.id) })),
      el("td", {}, el("code", { text: JSON.stringify(s.subscription_id) })),
      el("td", {}, caller(s.principal)),
      el("td", {}, honoredChips(s)),
      el("td", { class: "uri-count" }, bounded(s.uri_count, bounds.stream_uri_count, fmtLimit)),
      el("td", { class: "uri-bytes" }, bounded(s.uri_bytes, bounds.stream_uri_bytes, fmtBytes)),
      el("td", { class: "num", title: "max_stream_queue " + fmtLimit(bounds.stream_queue), text: fmtInt(s.queue_depth) }),
      el("td", { title: new Date(s.opened_at * 1000).toString(), text: ago(s.opened_at) }),
      el("td", { class: "actions" },
        el("button", { type: "button", class: "small", text: "URIs", onclick: () => showStream(s.id) }),
        READ_ONLY ? null : " ",
        READ_ONLY ? null : armedButton("stream:" + s.id, "Close", "Close stream?", async () => {
          await api("DELETE", "streams/" + encodeURIComponent(s.id));
          toast("Listen stream " + shortId(s.id) + " closed");
        })));
  }

  async function loadStreams() {
    const page = await api("GET", "streams?limit=500&sort=opened_at&order=desc");
    $("#streams-table tbody").replaceChildren(...page.items.map((s) => streamRow(s, page.bounds)));
    $("#streams-empty").hidden = page.items.length > 0;
    $("#streams-count").textContent = fmtInt(page.total);
    if (openStream) await loadStreamDetail();
  }

  async function loadStreamDetail() {
    const panel = $("#stream-detail");
    try {
      const s = await api("GET", "streams/" + encodeURIComponent(openStream));
      $("#stream-detail-id").textContent = s.id;
      $("#stream-detail-summary").textContent =
        `${fmtInt(s.uri_count)} of ${fmtLimit(s.bounds.stream_uri_count)} URIs, ` +
        `${fmtBytes(s.uri_bytes)} of ${fmtBytes(s.bounds.stream_uri_bytes)}; opened ${ago(s.opened_at)}.`;
      const uris = s.uris.length ? s.uris.map((u) => el("li", { text: u }))
        : [el("li", { class: "muted", text: "No resource URIs on this stream." })];
      $("#stream-detail-uris").replaceChildren(...uris);
    } catch (err) {
      if (err.status !== 404) throw err;
      $("#stream-detail-summary").textContent = "This stream has closed.";
      $("#stream-detail-uris").replaceChildren();
    }
    panel.hidden = false;
  }

  function showStream(id) {
    openStream = id;
    loadStreamDetail().catch(showStale);
  }
  $("#stream-detail-close").addEventListener("click", () => { openStream = null; $("#stream-detail").hidden = true; });

  // ---- limits --------------------------------------------------------------------------

  const form = $("#limits-form");
  let serverLimits = null;

  const fields = () => $$(".limit", form).map((row) => ({
    row, name: row.dataset.limit, kind: row.dataset.kind, nullable: row.dataset.nullable === "true",
    input: $("input[type=number], select", row), none: $("input[type=checkbox]", row),
    size: $(".unit-size", row),
  }));

  function formValue(f) {
    if (f.kind === "bool") return f.input.value === "true";
    if (f.none && f.none.checked) return null;
    const raw = f.input.value.trim();
    if (raw === "") return undefined;
    const n = Number(raw);
    return Number.isFinite(n) ? n : raw;
  }

  function markChanged() {
    for (const f of fields()) {
      const v = formValue(f);
      f.row.classList.toggle("changed", serverLimits !== null && v !== undefined && v !== serverLimits[f.name]);
      f.input.disabled = READ_ONLY || (f.none ? f.none.checked : false);
      if (f.size) {  // a size in bytes, shown in units too
        const n = Number(f.input.value);
        f.size.textContent = f.input.value !== "" && Number.isFinite(n) && n >= 1024 ? "= " + fmtBytes(n) : "";
      }
    }
  }

  function syncLimits(limits) {
    if (!limits) return;
    const previous = serverLimits;
    serverLimits = limits;
    for (const f of fields()) {
      const editing = previous !== null && f.row.classList.contains("changed");
      if (editing && !READ_ONLY) continue; // never overwrite what the operator is typing
      const v = limits[f.name];
      if (f.kind === "bool") { f.input.value = v ? "true" : "false"; continue; }
      if (f.none) f.none.checked = v === null;
      f.input.value = v === null ? "" : String(v);
      f.input.placeholder = v === null ? "no limit" : "";
    }
    markChanged();
  }

  form.addEventListener("input", markChanged);
  form.addEventListener("change", markChanged);

  if (!READ_ONLY) {
    $("#limits-reset").addEventListener("click", () => {
      for (const f of fields()) { f.row.classList.remove("changed", "invalid"); $("#error-" + f.name).textContent = ""; }
      const limits = serverLimits;
      serverLimits = null;
      syncLimits(limits);
      $("#limits-status").textContent = "";
    });

    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const changes = {};
      for (const f of fields()) {
        f.row.classList.remove("invalid");
        $("#error-" + f.name).textContent = "";
        const v = formValue(f);
        if (v !== undefined && v !== serverLimits[f.name]) changes[f.name] = v;
      }
      if (!Object.keys(changes).length) { $("#limits-status").textContent = "Nothing to change."; return; }
      $("#limits-apply").disabled = true;
      try {
        const res = await api("PATCH", "limits", changes);
        for (const f of fields()) f.row.classList.remove("changed");
        serverLimits = null;
        syncLimits(res.limits);
        const names = Object.keys(res.changed || {});
        $("#limits-status").textContent = names.length ? "Applied: " + names.join(", ") : "Nothing changed.";
        toast(names.length ? "Limits updated" : "Nothing changed");
        refresh();
      } catch (err) {
        for (const [name, message] of Object.entries(err.errors || {})) {
          const slot = $("#error-" + name);
          if (slot) { slot.textContent = message; slot.closest(".limit").classList.add("invalid"); }
        }
        $("#limits-status").textContent = err.message;
        toast(err.message, true);
      } finally {
        $("#limits-apply").disabled = false;
      }
    });
  }

  // ---- the poll loop -------------------------------------------------------------------

  const live = $("#live");
  function showStale(err) {
    live.className = "live stale";
    live.textContent = "not updating: " + (err && err.message ? err.message : "error");
  }

  let timer = null;
  let running = false;
  async function refresh() {
    if (running) return;
    running = true;
    clearTimeout(timer);
    try {
      const since = lastSampleT === null ? "" : "?since=" + lastSampleT;
      const [overview, history] = await Promise.all([
        api("GET", "overview"), api("GET", "history" + since), loadSessions(), loadStreams(),
      ]);
      renderOverview(overview);
      addSamples(history.samples);
      $$("[data-plot]").forEach(drawPlot);
      live.className = "live ok";
      live.textContent = "live · " + clock(overview.taken_at);
    } catch (err) {
      showStale(err);
    } finally {
      running = false;
      timer = setTimeout(refresh, POLL_MS);
    }
  }

  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  refresh();
  // What the page's other scripts (governance.js) build on.
  // What the page's other scripts (governance.js, signin.js) share with this one.
  window.tornadoMcpAdmin = { el, api, ApiError, armedButton, $, nf, fmtInt, READ_ONLY, POLL_MS };
})();
