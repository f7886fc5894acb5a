// llmwiki view: the page's own script (the Content-Security-Policy allows nothing else).
// 1. A link to #L<line> inside a block marks the block holding that line.
// 2. /graph: a force layout drawn on a canvas. Hand-written (docs/view.md says why: the
//    vendored libraries measured need inline styles, which the strict CSP refuses).
"use strict";

function markLine() {
  const m = /^#L(\d+)$/.exec(location.hash);
  if (!m) return;
  const line = Number(m[1]);
  let best = null;
  for (const el of document.querySelectorAll("[data-line]")) {
    const a = Number(el.dataset.line), b = Number(el.dataset.end || a);
    if (a <= line && line <= Math.max(a, b)) best = el;
  }
  if (best) {
    best.classList.add("target-line");
    best.scrollIntoView();
  }
}

function drawGraph(canvas, data) {
  const ctx = canvas.getContext("2d");
  const n = data.nodes.length;
  const xs = new Float64Array(n), ys = new Float64Array(n);
  const vx = new Float64Array(n), vy = new Float64Array(n);
  const deg = new Uint32Array(n);
  for (const [a, b] of data.edges) { deg[a]++; deg[b]++; }
  const spread = 20 * Math.sqrt(n + 1);
  for (let i = 0; i < n; i++) {  // a golden-angle spiral: a deterministic start
    const r = spread * Math.sqrt((i + 0.5) / n), t = i * 2.399963;
    xs[i] = r * Math.cos(t); ys[i] = r * Math.sin(t);
  }
  let scale = Math.min(canvas.width, canvas.height) / (2.4 * spread + 1);
  let ox = canvas.width / 2, oy = canvas.height / 2;
  let alpha = 1, frames = 0, draws = 0, busy = 0, running = true, fitted = true;
  function fit() {  // the whole drawing in view, until the reader pans or zooms
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      x0 = Math.min(x0, xs[i]); x1 = Math.max(x1, xs[i]);
      y0 = Math.min(y0, ys[i]); y1 = Math.max(y1, ys[i]);
    }
    if (!(x1 >= x0)) return;
    const pad = n <= 300 ? 160 : 20;  // room for the labels
    scale = Math.min((canvas.width - 2 * pad) / (x1 - x0 || 1), (canvas.height - 40) / (y1 - y0 || 1), 3);
    ox = canvas.width / 2 - scale * (x0 + x1) / 2;
    oy = canvas.height / 2 - scale * (y0 + y1) / 2;
  }
  // One layout step: springs along edges (strength 1/min degree, as d3-force does),
  // repulsion from near nodes through a grid (cells found by a counting sort into typed
  // arrays: no allocation per step) and from far ones through the centroids of a coarse
  // 16 x 16 grid, and a weak pull to the centre. Linear in nodes and edges.
  const G = 16, cmass = new Float64Array(G * G), cx = new Float64Array(G * G), cy = new Float64Array(G * G);
  const order = new Int32Array(n), cellOf = new Int32Array(n);
  let starts = new Int32Array(1);
  function tick() {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < n; i++) {
      if (xs[i] < x0) x0 = xs[i]; if (xs[i] > x1) x1 = xs[i];
      if (ys[i] < y0) y0 = ys[i]; if (ys[i] > y1) y1 = ys[i];
    }
    const w = Math.max(x1 - x0, 1), hgt = Math.max(y1 - y0, 1);
    const cell = Math.max(30, Math.sqrt((w * hgt) / 4096));
    const gw = Math.floor(w / cell) + 1, gh = Math.floor(hgt / cell) + 1;
    if (starts.length < gw * gh + 1) starts = new Int32Array(gw * gh + 1);
    starts.fill(0, 0, gw * gh + 1);
    for (let i = 0; i < n; i++) {
      const c = Math.floor((xs[i] - x0) / cell) * gh + Math.floor((ys[i] - y0) / cell);
      cellOf[i] = c; starts[c + 1]++;
    }
    for (let c = 0; c < gw * gh; c++) starts[c + 1] += starts[c];
    const fill = starts.slice(0, gw * gh);
    for (let i = 0; i < n; i++) order[fill[cellOf[i]]++] = i;
    cmass.fill(0); cx.fill(0); cy.fill(0);
    const kx = G / (w + 1e-9), ky = G / (hgt + 1e-9);
    for (let i = 0; i < n; i++) {
      const c = Math.min(G - 1, Math.floor((xs[i] - x0) * kx)) * G + Math.min(G - 1, Math.floor((ys[i] - y0) * ky));
      cmass[c]++; cx[c] += xs[i]; cy[c] += ys[i];
    }
    const strength = 900 * alpha;
    for (let i = 0; i < n; i++) {
      const gx = Math.floor((xs[i] - x0) / cell), gy = Math.floor((ys[i] - y0) / cell);
      for (let ax = Math.max(0, gx - 1); ax <= Math.min(gw - 1, gx + 1); ax++) {
        for (let ay = Math.max(0, gy - 1); ay <= Math.min(gh - 1, gy + 1); ay++) {
          const c = ax * gh + ay;
          for (let k = starts[c]; k < starts[c + 1]; k++) {
            const j = order[k];
            if (j <= i) continue;
            let ddx = xs[i] - xs[j], ddy = ys[i] - ys[j], d2 = ddx * ddx + ddy * ddy;
            if (d2 < 0.01) { ddx = 0.1 * ((i % 7) - 3) + 0.05; ddy = 0.1; d2 = 0.02; }
            const f = strength / (d2 + 25);
            vx[i] += ddx * f; vy[i] += ddy * f; vx[j] -= ddx * f; vy[j] -= ddy * f;
          }
        }
      }
      const own = Math.min(G - 1, Math.floor((xs[i] - x0) * kx)) * G + Math.min(G - 1, Math.floor((ys[i] - y0) * ky));
      for (let c = 0; c < G * G; c++) {
        const m = cmass[c];
        if (!m || c === own) continue;
        const ddx = xs[i] - cx[c] / m, ddy = ys[i] - cy[c] / m, d2 = ddx * ddx + ddy * ddy + 400;
        const f = (strength * m) / (d2 * 4);
        vx[i] += ddx * f; vy[i] += ddy * f;
      }
    }
    for (const [a, b] of data.edges) {
      const ddx = xs[b] - xs[a], ddy = ys[b] - ys[a];
      const d = Math.sqrt(ddx * ddx + ddy * ddy) || 1;
      const f = ((d - 30) / d) * alpha * 0.5 / Math.max(1, Math.min(deg[a], deg[b]));
      vx[a] += ddx * f; vy[a] += ddy * f; vx[b] -= ddx * f; vy[b] -= ddy * f;
    }
    for (let i = 0; i < n; i++) {
      vx[i] -= xs[i] * 0.01 * alpha; vy[i] -= ys[i] * 0.01 * alpha;
      const v = Math.hypot(vx[i], vy[i]), cap = 50;
      if (v > cap) { vx[i] *= cap / v; vy[i] *= cap / v; }
      xs[i] += vx[i]; ys[i] += vy[i]; vx[i] *= 0.6; vy[i] *= 0.6;
    }
    alpha *= 0.985;
    if (alpha < 0.02) running = false;
  }
  function draw() {
    draws++;
    if (fitted) fit();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(scale, 0, 0, scale, ox, oy);
    ctx.strokeStyle = "rgba(90,90,110,0.35)";
    ctx.lineWidth = 1 / scale;
    ctx.beginPath();
    for (const [a, b] of data.edges) { ctx.moveTo(xs[a], ys[a]); ctx.lineTo(xs[b], ys[b]); }
    ctx.stroke();
    ctx.fillStyle = "#2457a6";
    ctx.beginPath();
    for (let i = 0; i < n; i++) {
      const r = (3 + Math.min(6, Math.sqrt(deg[i]))) / scale;  // pixels on screen
      ctx.moveTo(xs[i] + r, ys[i]); ctx.arc(xs[i], ys[i], r, 0, 6.2832);
    }
    ctx.fill();
    ctx.fillStyle = "#b3261e";
    for (let i = 0; i < n; i++) {
      if (!data.nodes[i].centre) continue;
      ctx.beginPath(); ctx.arc(xs[i], ys[i], 9 / scale, 0, 6.2832); ctx.fill();
    }
    if (n <= 300 || scale > 1.5) {  // labels only where they can be read
      ctx.fillStyle = "#1b1b1b";
      ctx.font = `${12 / scale}px sans-serif`;
      for (let i = 0; i < n; i++) ctx.fillText(data.nodes[i].label, xs[i] + 11 / scale, ys[i] + 4 / scale);
    }
  }
  function frame() {
    frames++;
    const t0 = performance.now();
    if (running) tick();  // one layout step and one draw per frame
    draw();
    busy += performance.now() - t0;
    if (running) requestAnimationFrame(frame);
  }
  // read by benchmarks/view.py (frames of layout, draws in all)
  window.llmwikiGraph = {
    get frames() { return frames; }, get draws() { return draws; }, get running() { return running; },
    get busy() { return busy; },  // ms of script in frames (layout and draw)
  };
  requestAnimationFrame(frame);
  let drag = null, moved = false;
  canvas.addEventListener("mousedown", (e) => { drag = [e.offsetX, e.offsetY]; moved = false; });
  canvas.addEventListener("mousemove", (e) => {
    if (!drag) return;
    ox += e.offsetX - drag[0]; oy += e.offsetY - drag[1]; fitted = false;
    drag = [e.offsetX, e.offsetY]; moved = true;
    if (!running) requestAnimationFrame(draw);
  });
  canvas.addEventListener("mouseup", (e) => {
    drag = null;
    if (moved) return;
    const x = (e.offsetX - ox) / scale, y = (e.offsetY - oy) / scale;
    for (let i = 0; i < n; i++) {
      if ((xs[i] - x) ** 2 + (ys[i] - y) ** 2 < 100 / (scale * scale) + 64) {
        location.href = data.nodes[i].href;
        return;
      }
    }
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const k = e.deltaY < 0 ? 1.2 : 1 / 1.2;
    ox = e.offsetX - (e.offsetX - ox) * k; oy = e.offsetY - (e.offsetY - oy) * k;
    scale *= k; fitted = false;
    if (!running) requestAnimationFrame(draw);
  }, { passive: false });
}

document.addEventListener("DOMContentLoaded", () => {
  markLine();
  const canvas = document.getElementById("graph");
  const data = document.getElementById("graph-data");
  if (canvas && data) drawGraph(canvas, JSON.parse(data.textContent));
});
window.addEventListener("hashchange", markLine);
