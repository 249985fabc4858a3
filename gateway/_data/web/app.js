// linegate UI: key, chat (streamed), alerts (SSE), logs (live tail + search), status charts, source formats.
// Every piece of log or model text goes into the page through textContent, never as HTML.
"use strict";
const $ = (id) => document.getElementById(id);
const MAX_AUTO_RETRIES = 3, MAX_AUTO_RETRY_S = 30;
const POLL_STATS_MS = 2000, POLL_SOURCES_MS = 5000, POLL_LOGS_MS = 1000, TAIL_ROWS = 300, TAIL_BATCH = 500, ALERTS_REPLAY = 100;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = String(text);
  return e;
}
function fmtTime(ts) {
  const d = new Date(ts * 1000);
  return d.toLocaleTimeString(I18N.lang, { hour12: false }) ;
}
function fmtNum(v, digits) { return v == null || !Number.isFinite(v) ? "–" : v.toFixed(digits == null ? 1 : digits); }

// ---- theme -----------------------------------------------------------------------------
const Theme = {
  init() { const t = localStorage.getItem("linegate.theme"); if (t) document.documentElement.dataset.theme = t; },
  current() {
    return document.documentElement.dataset.theme ||
      (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light");
  },
  toggle() {
    const next = this.current() === "dark" ? "light" : "dark";
    document.documentElement.dataset.theme = next; localStorage.setItem("linegate.theme", next);
    document.dispatchEvent(new CustomEvent("themechange"));
  },
};

// ---- key -------------------------------------------------------------------------------
const Key = {
  show(wrong) {
    $("key-dialog").hidden = false; $("key-error").hidden = !wrong;
    if (wrong) $("key-error").textContent = I18N.t("key.wrong");
    $("key-input").value = ""; $("key-input").focus();
  },
  async submit(ev) {
    ev.preventDefault();
    API.setKey($("key-input").value.trim());
    try {
      await API.json("/api/stats");
      $("key-dialog").hidden = true; App.start();
    } catch (e) { this.show(true); }
  },
};

// ---- chat ------------------------------------------------------------------------------
const Chat = {
  history: [],
  busy: false,
  async ask(ev) {
    ev.preventDefault();
    const q = $("chat-input").value.trim();
    if (!q || this.busy) return;
    this.busy = true; $("chat-send").disabled = true; $("chat-input").value = "";
    $("chat-log").append(el("div", "msg user", q));
    const msg = el("div", "msg assistant streaming");
    const body = el("span", "answer"); msg.append(body); $("chat-log").append(msg);
    this.scroll();
    this.history.push({ role: "user", content: q });
    let answer = "";
    try {
      let res;
      for (let attempt = 0; ; attempt++) {
        res = await API.fetch("/v1/chat/completions", {
          method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ model: "linegate", stream: true, messages: this.history.slice(-6) }),
        });
        const ra = Number(res.headers.get("Retry-After"));
        // The engine is busy (queue full / admission refused): wait as told, a few times, then give up.
        if (!((res.status === 429 || res.status === 503) && ra > 0 && ra <= MAX_AUTO_RETRY_S && attempt < MAX_AUTO_RETRIES)) break;
        for (let left = ra; left > 0; left--) {
          body.textContent = I18N.t("chat.busy", { s: left });
          await new Promise((r) => setTimeout(r, 1000));
        }
        body.textContent = "";
      }
      if (!res.ok) {
        let detail = ""; try { detail = (await res.json()).detail; } catch (_) { /* not JSON */ }
        const ra = res.headers.get("Retry-After");
        throw new Error(ra && (res.status === 429 || res.status === 503) ? I18N.t("chat.gave_up", { s: ra }) : res.status + " " + (detail || res.statusText));
      }
      await API.sse(res, (_event, data) => {
        if (data === "[DONE]") return;
        const chunk = JSON.parse(data);
        const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
        if (delta && delta.content) { answer += delta.content; body.textContent = answer; this.scroll(); }
        if (chunk.sources && chunk.sources.length) this.renderSources(msg, chunk.sources);
      });
      this.history.push({ role: "assistant", content: answer });
    } catch (e) {
      msg.className = "msg error"; body.textContent = I18N.t("chat.error", { e: e.message });
      this.history.pop();
    } finally {
      msg.classList.remove("streaming"); this.busy = false; $("chat-send").disabled = false; this.scroll();
    }
  },
  renderSources(msg, sources) {
    const box = el("div", "sources");
    box.append(el("div", "sources-title", I18N.t("chat.sources")));
    for (const s of sources) {
      if (s.call) {   // the store query the answer's figures came from: expandable call and result
        const d = el("details", "query-source");
        d.append(el("summary", "", I18N.t("chat.query") + " " + JSON.stringify(s.call)));
        d.append(el("pre", "", JSON.stringify(s.result, null, 1)));
        box.append(d);
        continue;
      }
      const b = el("button", "source", `#${s.id} ${fmtTime(s.ts)} ${s.host} ${s.text}`);
      b.type = "button"; b.title = s.text; b.dataset.lineId = s.id;
      b.addEventListener("click", () => Logs.around(s.id));
      box.append(b);
    }
    msg.append(box);
  },
  scroll() { const c = $("chat-log"); c.scrollTop = c.scrollHeight; },
};

// ---- alerts ----------------------------------------------------------------------------
const Alerts = {
  byId: new Map(),
  abort: null,
  async start() {
    if (this.abort) this.abort.abort();
    this.abort = new AbortController();
    const signal = this.abort.signal;
    for (;;) {   // reconnect loop
      try {
        const res = await API.fetch(`/api/alerts/stream?recent=${ALERTS_REPLAY}`, { signal });
        if (res.status === 401) return;
        if (res.ok) await API.sse(res, (event, data) => this.onEvent(event, JSON.parse(data)), signal);
      } catch (e) { if (signal.aborted) return; }
      await new Promise((r) => setTimeout(r, 2000));
    }
  },
  data: new Map(),
  rerender() { for (const a of [...this.data.values()]) this.render(a, false); },
  onEvent(_event, a) { this.render(a, true); },
  render(a, live) {
    this.data.set(a.id, a);
    let li = this.byId.get(a.id);
    const fresh = !li;
    if (!li) {
      li = el("li"); li.dataset.alertId = a.id;
      this.byId.set(a.id, li); $("alert-list").prepend(li);
    }
    li.className = "sev-" + a.severity + (fresh && live ? " fresh" : "");
    li.replaceChildren();
    const head = el("div", "alert-head");
    head.append(el("span", "sev sev-" + a.severity, a.severity), el("span", "alert-kind", a.rule || I18N.t("kind." + a.kind)),
      el("span", "muted", `${fmtTime(a.ts)} · ${a.host}${a.count > 1 ? " · ×" + a.count : ""}`));
    li.append(head, el("div", "alert-text", (a.lines && a.lines[0]) || a.template));
    if (a.kind === "new_template" && a.count > 1) {   // several new kinds folded into one: their templates
      const d = el("details", "alert-kinds");
      d.append(el("summary", null, I18N.t("alerts.kinds", { n: a.count })), el("pre", null, a.template));
      d.onclick = (ev) => ev.stopPropagation();
      li.append(d);
    }
    if (a.explanation) li.append(el("div", "alert-expl", a.explanation));
    else if (a.explanation_status === "pending") li.append(el("div", "alert-expl pending", I18N.t("alerts.explaining")));
    else if (a.explanation_status === "refused" || a.explanation_status === "missed") li.append(el("div", "alert-expl pending", I18N.t("alerts.no_expl")));
    if (a.line_ids && a.line_ids.length) { li.tabIndex = 0; li.onclick = () => Logs.around(a.line_ids[0]); }
    $("alerts-count").textContent = String(this.byId.size);
    $("alerts-empty").hidden = this.byId.size > 0;
  },
};

// ---- logs ------------------------------------------------------------------------------
const Logs = {
  mode: "live", lastId: null, timer: null,
  row(r, hit) {
    const li = el("li", hit ? "hit" : null); li.dataset.lineId = r.id;
    li.append(el("span", "ts", fmtTime(r.ts)), el("span", "sev sev-" + r.severity, r.severity),
      el("span", "host", r.host), el("span", "text", r.text));
    return li;
  },
  setMode(mode, vars) {
    this.mode = mode; $("logs-mode").textContent = I18N.t("logs.mode_" + mode, vars);
    $("search-live").disabled = mode === "live";
  },
  async live() {
    this.setMode("live"); $("log-list").replaceChildren(); this.lastId = null;
    await this.poll();
  },
  async poll() {
    clearTimeout(this.timer);
    if (this.mode !== "live") return;
    try {
      let rows;
      const first = this.lastId == null;
      if (first) {
        rows = (await API.json(`/api/logs/search?limit=100`)).results.reverse();
      } else {
        rows = (await API.json(`/api/logs/search?after_id=${this.lastId}&limit=${TAIL_BATCH}`)).results;
      }
      if (this.mode !== "live") return;
      const list = $("log-list");
      const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
      for (const r of rows) { list.append(this.row(r)); this.lastId = r.id; }
      if (this.lastId == null) this.lastId = 0;
      while (list.children.length > TAIL_ROWS) list.firstChild.remove();
      if (first || (atBottom && rows.length)) list.scrollTop = list.scrollHeight;   // follow, unless the operator scrolled up
    } catch (e) { /* shown by the health pill */ }
    this.timer = setTimeout(() => this.poll(), POLL_LOGS_MS);
  },
  async search(ev) {
    if (ev) ev.preventDefault();
    clearTimeout(this.timer);
    const p = new URLSearchParams({ limit: "200" });
    const q = $("search-q").value.trim(); if (q) p.set("q", q);
    const sev = $("search-sev").value; if (sev) p.set("severity", sev);
    const host = $("search-host").value.trim(); if (host) p.set("host", host);
    const list = $("log-list");
    try {
      const data = await API.json("/api/logs/search?" + p.toString());
      this.setMode("search", { n: data.count });
      list.replaceChildren(...data.results.map((r) => this.row(r)));
      list.scrollTop = 0;
    } catch (e) {
      this.setMode("search", { n: 0 }); list.replaceChildren(el("li", "error", e.detail || e.message));
    }
  },
  async around(id) {
    clearTimeout(this.timer);
    const data = await API.json(`/api/logs/${encodeURIComponent(id)}/around?n=12`);
    this.setMode("around", { id });
    const list = $("log-list");
    list.replaceChildren(...data.results.map((r) => this.row(r, r.id === Number(id))));
    const hit = list.querySelector("li.hit"); if (hit) hit.scrollIntoView({ block: "center" });
  },
};

// ---- status ----------------------------------------------------------------------------
const Status = {
  charts: {}, prev: null, timer: null,
  init() {
    this.charts = {
      tok: new Chart($("c-tok"), [{ color: "--c1" }]),
      acc: new Chart($("c-acc"), [{ color: "--c2" }], { max: 1 }),
      kv: new Chart($("c-kv"), [{ color: "--c3" }, { color: "--c1" }, { color: "--c2" }], { stacked: true, max: 1 }),
      drop: new Chart($("c-drop"), [{ color: "--c3" }]),
      miss: new Chart($("c-miss"), [{ color: "--c3" }]),
      ing: new Chart($("c-ing"), [{ color: "--c1" }]),
    };
    document.addEventListener("themechange", () => Object.values(this.charts).forEach((c) => c.draw()));
    addEventListener("resize", () => Object.values(this.charts).forEach((c) => c.draw()));
  },
  async poll() {
    clearTimeout(this.timer);
    try { this.show(await API.json("/api/stats")); } catch (e) { /* health pill shows it */ }
    this.timer = setTimeout(() => this.poll(), POLL_STATS_MS);
  },
  show(s) {
    const u = s.ui || {};
    const now = s.server_time, p = this.prev;
    const rate = (k) => (p && u[k] != null && p.ui[k] != null && now > p.server_time) ? Math.max(0, (u[k] - p.ui[k]) / (now - p.server_time)) : null;
    const kv = u.kv || {};
    const cap = kv.capacity || 1;
    const drops = rate("token_queue_drops_total"), ingest = rate("ingest_lines_total");
    this.charts.tok.push([u.decode_tok_s]); $("v-tok").textContent = fmtNum(u.decode_tok_s);
    this.charts.acc.push([u.acceptance_rate]);
    $("v-acc").textContent = u.acceptance_rate == null ? "–" : Math.round(u.acceptance_rate * 100) + "%";
    this.charts.kv.push([(kv.sink || 0) / cap, (kv.ring || 0) / cap, (kv.scratch || 0) / cap]);
    $("v-kv").textContent = kv.capacity ? Math.round(100 * ((kv.sink || 0) + (kv.ring || 0) + (kv.scratch || 0)) / cap) + "%" : "–";
    this.charts.drop.push([drops]); $("v-drop").textContent = u.token_queue_drops_total == null ? "–" : String(u.token_queue_drops_total);
    this.charts.miss.push([u.deadline_misses_total]); $("v-miss").textContent = u.deadline_misses_total == null ? "–" : String(u.deadline_misses_total);
    this.charts.ing.push([ingest]); $("v-ing").textContent = fmtNum(ingest, 0);
    const facts = $("status-facts"); facts.replaceChildren();
    for (const [k, v] of Object.entries(u.facts || {})) facts.append(el("dt", null, I18N.t("fact." + k)), el("dd", null, v));
    this.learning(u.learning || []);
    this.fleet(u.fleet);
    this.prev = s;
  },
  // what the box has shipped to the plant's ClickHouse ([fleet]); hidden when it ships nothing
  fleet(f) {
    $("status-fleet").hidden = !f;
    if (!f) return;
    const age = f.oldest_unshipped_s == null ? "–" : I18N.t("fleet.age", { s: Math.round(f.oldest_unshipped_s) });
    const rows = [["fleet.box", f.box_id], ["fleet.shipped", String(f.shipped)], ["fleet.pending", String(f.pending)],
      ["fleet.oldest", age], ["fleet.last_error", f.last_error || I18N.t("fleet.no_error")]];
    if (f.dropped_unshipped) rows.push(["fleet.dropped", String(f.dropped_unshipped)]);
    const dl = $("fleet-facts");
    dl.replaceChildren(...rows.flatMap(([k, v]) => {
      const dd = el("dd", null, v); dd.dataset.fleet = k.slice(6);
      return [el("dt", null, I18N.t(k)), dd];
    }));
  },
  // "learning" beside the alerts' title while a source learns its baseline (no new-kind alerts from it yet)
  learning(list) {
    const b = $("alerts-learning");
    b.hidden = !list.length;
    b.textContent = I18N.t("alerts.learning", { n: list.length });
    b.title = [I18N.t("alerts.learning_help"), ...list.map((x) => I18N.t("alerts.learning_source",
      { source: x.source, lines: x.lines_left, s: Math.ceil(x.s_left) }))].join("\n");
  },
};

// ---- sources ---------------------------------------------------------------------------
// Each source's learned format (/api/sources): kind, origin, header fields found and in what share,
// a pattern (the operator's or the model's), an example line. Formats change rarely: a slower poll.
const SOURCE_FIELDS = ["time", "level", "host", "component", "pid"];
const Sources = {
  timer: null, data: null, shown: "",
  async poll() {
    clearTimeout(this.timer);
    try { this.show(await API.json("/api/sources")); } catch (e) { /* health pill shows it */ }
    this.timer = setTimeout(() => this.poll(), POLL_SOURCES_MS);
  },
  show(d, force) {
    const key = JSON.stringify(d);
    this.data = d;
    if (!force && key === this.shown) return;   // unchanged: keep the rows (and any open tooltip)
    this.shown = key;
    const list = d.sources || [];
    $("source-list").replaceChildren(...list.map((s) => this.row(s)));
    $("sources-count").textContent = String(list.length);
    $("sources-empty").hidden = list.length > 0;
    this.badge($("sources-learning"), d.learning, "sources.learning");
    this.badge($("sources-relearned"), d.relearned, "sources.relearned");
  },
  badge(b, n, key) {
    b.hidden = !n; b.textContent = I18N.t(key, { n }); b.title = I18N.t(key + "_help");
  },
  row(s) {
    const li = el("li", "src-row");
    li.dataset.source = s.source; li.dataset.kind = s.kind || ""; li.dataset.origin = s.origin;
    const head = el("div", "src-head");
    const name = el("span", "src-name", s.source || I18N.t("sources.unnamed"));
    if (s.lines) name.title = I18N.t("sources.lines", { n: s.lines });
    head.append(name);
    if (s.kind) head.append(el("span", "tag src-kind", I18N.t("srckind." + s.kind)));
    head.append(el("span", "tag src-origin origin-" + s.origin, I18N.t("origin." + s.origin)));
    if (s.unsure) {
      const u = el("span", "tag src-unsure", I18N.t("sources.unsure")); u.title = I18N.t("sources.unsure_help"); head.append(u);
    }
    const fields = s.fields || {};
    if (Object.keys(fields).length) {
      const box = el("span", "src-fields");
      for (const f of SOURCE_FIELDS) {
        const share = Number(fields[f]) || 0, pct = Math.round(share * 100) + "%";
        const b = el("span", "field" + (share > 0 ? "" : " missing"), I18N.t("field." + f) + (share > 0 ? " " + pct : ""));
        b.dataset.field = f; b.dataset.share = String(share);
        b.title = share > 0 ? I18N.t("sources.found", { share: pct }) : I18N.t("sources.missing");
        box.append(b);
      }
      head.append(box);
    }
    li.append(head);
    if (s.pattern) li.append(this.line("src-pattern", "sources.pattern", s.pattern));
    else if (s.proposed) li.append(this.line("src-proposed", "sources.proposed", s.proposed));
    if (s.columns && s.columns.length) li.append(this.line("src-columns", "sources.columns", s.columns.join("  ")));
    if (s.example) li.append(this.line("src-example", "sources.example", s.example));
    return li;
  },
  line(cls, label, text) {   // one labelled line of code, cut to the width; the full text on hover
    const div = el("div", "src-line " + cls), code = el("code", null, text);
    code.title = text;
    div.append(el("span", "src-label", I18N.t(label)), code);
    return div;
  },
};

// ---- health ----------------------------------------------------------------------------
async function pollHealth() {
  let state = "down";
  try { const r = await fetch("/health"); state = r.status === 200 ? "ok" : (r.status === 503 ? "loading" : "down"); } catch (e) { state = "down"; }
  $("health").dataset.state = state; $("health-text").dataset.i18n = "health." + state;
  $("health-text").textContent = I18N.t("health." + state);
  setTimeout(pollHealth, state === "ok" ? 5000 : 1500);
}

// ---- wiring ----------------------------------------------------------------------------
const App = {
  started: false,
  start() {
    if (this.started) return;
    this.started = true;
    Alerts.start(); Logs.live(); Status.poll(); Sources.poll();
  },
};

document.addEventListener("DOMContentLoaded", () => {
  Theme.init(); I18N.init(); API.init(); Status.init();
  API.onUnauthorized = () => { App.started = false; Key.show(Boolean(API.key)); };
  $("theme-toggle").addEventListener("click", () => Theme.toggle());
  $("lang-toggle").addEventListener("click", () => I18N.toggle());
  $("key-button").addEventListener("click", () => Key.show(false));
  $("key-form").addEventListener("submit", (ev) => Key.submit(ev));
  $("chat-form").addEventListener("submit", (ev) => Chat.ask(ev));
  $("chat-input").addEventListener("keydown", (ev) => { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("chat-form").requestSubmit(); } });
  $("search-form").addEventListener("submit", (ev) => Logs.search(ev));
  $("search-live").addEventListener("click", () => Logs.live());
  document.addEventListener("langchange", () => { if (Logs.mode === "live") Logs.setMode("live"); Alerts.rerender(); if (Status.prev) { Status.learning((Status.prev.ui || {}).learning || []); Status.fleet((Status.prev.ui || {}).fleet); }
    if (Sources.data) Sources.show(Sources.data, true); });
  pollHealth();
  if (API.key) App.start(); else Key.show(false);
});
