// Line charts on a plain canvas: a few series over generations 0..180 (see
// docs/ecosystem.md for why no charting library). The x axis is fixed to the run's 181
// generations, so a live chart grows to the right as generations arrive; the y axis fits
// the largest value drawn. A cursor marks the generation a replay shows.

const GRID = "#e3e7e1";
const AXIS = "#66716b";
const CURSOR = "#1d2521";

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `value`. */
export function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

export class LineChart {
  /** `canvas`: drawn at its CSS size times the device pixel ratio. */
  constructor(canvas, { generations = 180 } = {}) {
    this.canvas = canvas;
    this.generations = generations;
    this.series = []; // [{name, color, values: number[]}]
    this.cursor = null;
  }

  /** Replace the series (values indexed by generation) and redraw. */
  set(series, cursor = null) {
    this.series = series;
    this.cursor = cursor;
    this.draw();
  }

  draw() {
    const c = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(c.clientWidth * ratio));
    const height = Math.max(1, Math.round(c.clientHeight * ratio));
    if (c.width !== width || c.height !== height) {
      c.width = width;
      c.height = height;
    }
    const g = c.getContext("2d");
    g.clearRect(0, 0, width, height);
    const pad = { left: 40 * ratio, right: 8 * ratio, top: 6 * ratio, bottom: 16 * ratio };
    const w = width - pad.left - pad.right;
    const h = height - pad.top - pad.bottom;
    let top = 0;
    for (const s of this.series) for (const v of s.values) if (v > top) top = v;
    top = niceMax(top);
    const x = (gen) => pad.left + (gen / this.generations) * w;
    const y = (v) => pad.top + h - (v / top) * h;
    g.font = `${10 * ratio}px system-ui, sans-serif`;
    g.fillStyle = AXIS;
    g.strokeStyle = GRID;
    g.lineWidth = ratio;
    g.textBaseline = "middle";
    g.textAlign = "right";
    for (const frac of [0, 0.5, 1]) {
      const yy = Math.round(y(top * frac)) + 0.5;
      g.beginPath();
      g.moveTo(pad.left, yy);
      g.lineTo(pad.left + w, yy);
      g.stroke();
      g.fillText(formatTick(top * frac), pad.left - 4 * ratio, yy);
    }
    g.textAlign = "center";
    g.textBaseline = "top";
    for (const gen of [0, 60, 120, 180]) g.fillText(String(gen), x(gen), pad.top + h + 3 * ratio);
    g.lineWidth = 2 * ratio;
    g.lineJoin = "round";
    for (const s of this.series) {
      if (!s.values.length) continue;
      g.strokeStyle = s.color;
      g.beginPath();
      s.values.forEach((v, gen) => (gen ? g.lineTo(x(gen), y(v)) : g.moveTo(x(gen), y(v))));
      if (s.values.length === 1) g.lineTo(x(0) + ratio, y(s.values[0]));
      g.stroke();
    }
    if (this.cursor !== null) {
      g.strokeStyle = CURSOR;
      g.lineWidth = ratio;
      const xx = Math.round(x(this.cursor)) + 0.5;
      g.beginPath();
      g.moveTo(xx, pad.top);
      g.lineTo(xx, pad.top + h);
      g.stroke();
    }
  }
}

function formatTick(v) {
  if (v === 0) return "0";
  if (v >= 1000) return `${(v / 1000).toFixed(v >= 10000 ? 0 : 1)}k`;
  return v >= 10 ? v.toFixed(0) : v.toFixed(v >= 1 ? 1 : 2);
}
