// chart.js draws line charts of time series on a <canvas>, with an HTML
// legend beside it. No dependency: the 2D canvas API only.

const palette = ['#2f6fdf', '#d9480f', '#2b8a3e', '#9c36b5', '#c92a2a', '#0b7285', '#e67700', '#5f3dc4', '#495057', '#a61e4d'];

// A Chart owns one canvas and its legend. Series are [{name, points:
// [[t ms, value], ...], dashed, color}]; markers are [{t, label}] (drawn
// as vertical lines: the configuration changes).
export class Chart {
  constructor(canvas, legend, {windowMs = 60000, integer = false} = {}) {
    this.canvas = canvas;
    this.legend = legend;
    this.windowMs = windowMs;
    this.integer = integer;
    this.colors = new Map();
  }

  color(name) {
    if (!this.colors.has(name)) this.colors.set(name, palette[this.colors.size % palette.length]);
    return this.colors.get(name);
  }

  // draw renders series and markers over the window ending at now (ms).
  draw(series, markers, now) {
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const cssW = c.clientWidth || c.width, cssH = c.clientHeight || c.height;
    if (c.width !== Math.round(cssW * dpr) || c.height !== Math.round(cssH * dpr)) {
      c.width = Math.round(cssW * dpr);
      c.height = Math.round(cssH * dpr);
    }
    const g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, cssW, cssH);

    const left = 48, right = 8, top = 8, bottom = 20;
    const w = cssW - left - right, h = cssH - top - bottom;
    const t0 = now - this.windowMs;
    let max = 0;
    for (const s of series) for (const [t, v] of s.points) if (t >= t0 && v > max) max = v;
    max = niceCeil(max);
    if (this.integer) max = Math.max(4, Math.ceil(max / 4) * 4); // whole grid steps
    const x = t => left + ((t - t0) / this.windowMs) * w;
    const y = v => top + h - (v / max) * h;

    // Grid and axis labels.
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#6b7585';
    g.strokeStyle = '#e3e7ee';
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (let i = 0; i <= 4; i++) {
      const v = (max * i) / 4, py = Math.round(y(v)) + 0.5;
      g.beginPath(); g.moveTo(left, py); g.lineTo(left + w, py); g.stroke();
      g.fillText(formatValue(v, this.integer), left - 4, py);
    }
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (let s = 0; s <= this.windowMs / 1000; s += 15) {
      const px = x(now - s * 1000);
      g.textAlign = s === 0 ? 'right' : 'center'; // "now" ends at the right edge
      g.fillText(s === 0 ? 'now' : `-${s}s`, px, top + h + 4);
    }

    // Configuration changes.
    g.strokeStyle = '#9aa3b1';
    g.setLineDash([2, 3]);
    for (const m of markers) {
      if (m.t < t0) continue;
      const px = Math.round(x(m.t)) + 0.5;
      g.beginPath(); g.moveTo(px, top); g.lineTo(px, top + h); g.stroke();
      g.fillStyle = '#6b7585';
      const right = px + 3 + g.measureText(m.label).width > left + w; // keep the label inside
      g.textAlign = right ? 'right' : 'left';
      g.fillText(m.label, right ? px - 3 : px + 3, top);
    }

    // The series.
    g.lineWidth = 1.75;
    for (const s of series) {
      g.strokeStyle = s.color || this.color(s.name);
      g.setLineDash(s.dashed ? [5, 4] : []);
      g.beginPath();
      let started = false;
      for (const [t, v] of s.points) {
        if (t < t0) continue;
        if (started) g.lineTo(x(t), y(v)); else { g.moveTo(x(t), y(v)); started = true; }
      }
      g.stroke();
    }
    g.setLineDash([]);
    this.drawLegend(series);
  }

  drawLegend(series) {
    const items = [];
    for (const s of series) {
      if (s.dashed) continue;
      const li = document.createElement('li');
      li.dataset.series = s.name;
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = s.color || this.color(s.name);
      const last = s.points.length ? s.points[s.points.length - 1][1] : 0;
      const b = document.createElement('b');
      b.textContent = formatValue(last, this.integer);
      li.append(sw, `${s.name} `, b);
      items.push(li);
    }
    if (items.length === 0) {
      const li = document.createElement('li');
      li.className = 'muted';
      li.textContent = 'none yet';
      items.push(li);
    }
    this.legend.replaceChildren(...items);
  }
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function formatValue(v, integer) {
  if (integer || Number.isInteger(v)) return String(Math.round(v));
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
