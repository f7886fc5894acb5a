// llmwiki view: the page's own script (the Content-Security-Policy allows nothing else).
// 1. A link to #L<line> inside a block marks the block holding that line.
// 2. /graph: a force layout drawn on a canvas. Hand-written (docs/view.md says why): a grid
//    of cells makes repulsion linear in the number of nodes, so 5,000 nodes still move.
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
  let alpha = 1, frames = 0, draws = 0, running = true, fitted = true;
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
  const cell = 40;
  function tick() {
    const grid = new Map();
    for (let i = 0; i < n; i++) {
      const key = Math.floor(xs[i] / cell) * 100003 + Math.floor(ys[i] / cell);
      let bucket = grid.get(key);
      if (!bucket) grid.set(key, bucket = []);
      bucket.push(i);
    }
    for (let i = 0; i < n; i++) {
      const cx = Math.floor(xs[i] / cell), cy = Math.floor(ys[i] / cell);
      for (let dx = -1; dx <= 1; dx++) for (let dy = -1; dy <= 1; dy++) {
        const bucket = grid.get((cx + dx) * 100003 + cy + dy);
        if (!bucket) continue;
        for (const j of bucket) {
          if (j <= i) continue;
          let ddx = xs[i] - xs[j], ddy = ys[i] - ys[j];
          let d2 = ddx * ddx + ddy * ddy;
          if (d2 > cell * cell) continue;
          if (d2 < 0.01) { ddx = 0.1 * (i - j); ddy = 0.1; d2 = 0.02; }
          const f = (60 * alpha) / d2;
          vx[i] += ddx * f; vy[i] += ddy * f; vx[j] -= ddx * f; vy[j] -= ddy * f;
        }
      }
    }
    for (const [a, b] of data.edges) {
      const ddx = xs[b] - xs[a], ddy = ys[b] - ys[a];
      const d = Math.sqrt(ddx * ddx + ddy * ddy) || 1, f = (0.02 * alpha * (d - 30)) / d;
      vx[a] += ddx * f; vy[a] += ddy * f; vx[b] -= ddx * f; vy[b] -= ddy * f;
    }
    for (let i = 0; i < n; i++) {
      vx[i] -= xs[i] * 0.002 * alpha; vy[i] -= ys[i] * 0.002 * alpha;
      xs[i] += vx[i]; ys[i] += vy[i]; vx[i] *= 0.6; vy[i] *= 0.6;
    }
    alpha *= 0.99;
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
    if (running) tick();
    draw();
    if (running) requestAnimationFrame(frame);
  }
  // read by benchmarks/view.py (frames of layout, draws in all)
  window.llmwikiGraph = {
    get frames() { return frames; }, get draws() { return draws; }, get running() { return running; },
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
