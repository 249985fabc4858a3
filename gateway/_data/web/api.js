// HTTP helpers: the API key (from #key=… once, then localStorage), authorized fetch, SSE over fetch.
// EventSource cannot send an Authorization header, so event streams are read from a fetch body.
"use strict";
const API = {
  key: null,
  onUnauthorized: null,
  init() {
    const m = /(?:^|[#&])key=([^&]+)/.exec(location.hash);
    if (m) {
      this.setKey(decodeURIComponent(m[1]));
      history.replaceState(null, "", location.pathname + location.search);   // the key leaves the address bar
    } else {
      this.key = localStorage.getItem("linegate.key");
    }
  },
  setKey(key) { this.key = key; localStorage.setItem("linegate.key", key); },
  headers(extra) {
    const h = Object.assign({}, extra || {});
    if (this.key) h["Authorization"] = "Bearer " + this.key;
    return h;
  },
  async fetch(path, opts) {
    opts = Object.assign({}, opts || {});
    opts.headers = this.headers(opts.headers);
    const res = await fetch(path, opts);
    if (res.status === 401 && this.onUnauthorized) this.onUnauthorized();
    return res;
  },
  async json(path, opts) {
    const res = await this.fetch(path, opts);
    if (!res.ok) {
      const err = new Error(res.status + " " + res.statusText);
      err.status = res.status; err.retryAfter = res.headers.get("Retry-After");
      try { err.detail = (await res.json()).detail; } catch (_) { /* not JSON */ }
      throw err;
    }
    return res.json();
  },
  // Read a text/event-stream body; calls onEvent(eventName, dataString) per event. Resolves at the end.
  async sse(res, onEvent, signal) {
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      if (signal && signal.aborted) { reader.cancel(); return; }
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
        let event = "message"; const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(":")) continue;   // comment / keep-alive
          const i = line.indexOf(":");
          const field = i < 0 ? line : line.slice(0, i);
          const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
          if (field === "event") event = val;
          else if (field === "data") data.push(val);
        }
        if (data.length) onEvent(event, data.join("\n"));
      }
    }
  },
};
