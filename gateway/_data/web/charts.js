// Small canvas time-series charts (no library): one or more series, optionally stacked, colours from CSS.
"use strict";
class Chart {
  // series: [{name, color: "--c1"}]; opts: {stacked, max, points}
  constructor(canvas, series, opts) {
    this.canvas = canvas; this.series = series; this.opts = Object.assign({ points: 90, stacked: false, max: null }, opts || {});
    this.data = series.map(() => []);
  }
  push(values) {
    values.forEach((v, i) => {
      const d = this.data[i]; d.push(Number.isFinite(v) ? v : null);
      if (d.length > this.opts.points) d.shift();
    });
    this.draw();
  }
  draw() {
    const c = this.canvas, dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 150, h = c.clientHeight || 70;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    const g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    const css = getComputedStyle(document.documentElement);
    const n = this.opts.points, top = 4, bottom = h - 2;
    // stacked: each series drawn on top of the sum of the earlier ones
    const sums = this.data[0].map((_, j) => this.data.reduce((a, d) => a + (d[j] || 0), 0));
    let max = this.opts.max;
    if (max == null) {
      const all = this.opts.stacked ? sums : this.data.flat().filter((v) => v != null);
      max = Math.max(1e-9, ...all) * 1.15;
    }
    g.strokeStyle = css.getPropertyValue("--grid").trim(); g.lineWidth = 1;
    for (const f of [0.5, 1]) { const y = bottom - (bottom - top) * f; g.beginPath(); g.moveTo(0, y); g.lineTo(w, y); g.stroke(); }
    const x = (j, len) => w - (len - 1 - j) * (w / (n - 1));
    const y = (v) => bottom - (bottom - top) * Math.min(1, v / max);
    const base = this.data[0].map(() => 0);
    this.data.forEach((d, i) => {
      const color = css.getPropertyValue(this.series[i].color).trim();
      g.beginPath();
      let started = false;
      d.forEach((v, j) => {
        if (v == null) { started = false; return; }
        const yy = y(this.opts.stacked ? base[j] + v : v);
        if (!started) { g.moveTo(x(j, d.length), yy); started = true; } else g.lineTo(x(j, d.length), yy);
      });
      g.strokeStyle = color; g.lineWidth = 1.6; g.stroke();
      if (this.opts.stacked) {   // fill the band between this series and the one below
        g.beginPath();
        d.forEach((v, j) => { const yy = y(base[j] + (v || 0)); if (j === 0) g.moveTo(x(j, d.length), yy); else g.lineTo(x(j, d.length), yy); });
        for (let j = d.length - 1; j >= 0; j--) g.lineTo(x(j, d.length), y(base[j]));
        g.closePath(); g.globalAlpha = 0.25; g.fillStyle = color; g.fill(); g.globalAlpha = 1;
        d.forEach((v, j) => { base[j] += v || 0; });
      }
    });
  }
}
