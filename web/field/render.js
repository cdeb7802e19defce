// The field page's model and renderer: a spectator view folded forward by pushed
// events, painted cell by cell into an offscreen G x G canvas (only the 64 x 64 map
// tiles that events dirtied, at most every PAINT_MS), blitted with the zoom and pan; at
// high zoom the tiles' outlines are drawn over it.

import { isolated } from "/js/page.js";

const STATUS = { h: 0, r: 1, s: 2 };
const CELL = { ".": -1, 0: 0, 1: 1, 2: 2, 3: 3 }; // -1 unknown, 0/1 given, 2/3 committed 0/1
const BG = [238, 240, 236];
// Hidden tiles no agent's territory has reached yet, and hidden tiles one has reached (a
// revealed or solved tile overlaps them, or an agent is seated on them): what fog shows.
export const HIDDEN = [224, 227, 222];
export const REACHED = [186, 194, 188];
export const GIVEN = [[34, 38, 36], [252, 252, 250]];
const GOLDEN = 137.508;
const OUTLINE_ZOOM = 12; // canvas pixels per cell from which tile outlines are drawn

// A gesture moves the drawn bitmap by CSS; it is redrawn once input pauses this long,
// and at least this often during a long drag (a redraw of the whole canvas is the
// expensive frame on a software-rendered page).
const SETTLE_MS = 120;
const REDRAW_MS = 500;
// Pushes arrive up to 20 times a second; the page repaints at most every PAINT_MS, each
// time with everything that arrived since.
const PAINT_MS = 100;
const PUT_EACH = 8; // more dirty map tiles than this are copied as their bounding box

const NEAR = 160; // cells between seed tile centres within which agents are neighbours
const CANDIDATES = Array.from({ length: 24 }, (_, k) => (k * GOLDEN) % 360);

/** Agent index i's fallback hue: the golden angle keeps successive agents apart. */
export function hueOf(i) {
  return (i * GOLDEN) % 360;
}

/**
 * A hue per agent, in join order: each takes the candidate hue farthest from the hues
 * of the earlier agents seated near it. An agent's hue depends only on agents that
 * joined before it, so it never changes as others join (stable), and neighbours differ.
 */
export function assignHues(agents, tiles) {
  const centre = (a) => {
    const t = tiles[a.seed_tile];
    return t ? [t.x0 + t.w / 2, t.y0 + t.h / 2] : [0, 0];
  };
  const hues = [];
  const centres = [];
  agents.forEach((a, i) => {
    const [x, y] = centre(a);
    const near = [];
    centres.forEach(([cx, cy], j) => {
      if (Math.hypot(cx - x, cy - y) <= NEAR) near.push(hues[j]);
    });
    const gapOf = (h) => Math.min(360, ...near.map((o) => Math.min(Math.abs(h - o), 360 - Math.abs(h - o))));
    let best = hueOf(i), bestGap = gapOf(best); // alone, an agent keeps its golden-angle hue
    for (const h of CANDIDATES) {
      const gap = gapOf(h);
      if (gap > bestGap + 1e-9) { best = h; bestGap = gap; }
    }
    hues.push(best);
    centres.push([x, y]);
  });
  return hues;
}

/** [r, g, b] of an HSL colour (h in degrees, s and l in 0..1). */
export function hsl(h, s, l) {
  const k = (n) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255)];
}

/** A field as the page knows it: built from a spectator view, advanced by events. */
export class FieldModel {
  constructor(view) {
    this.revision = view.revision;
    this.G = view.G;
    this.mapTile = view.map_tile;
    this.tiles = view.manifest.tiles;
    this.status = Uint8Array.from(view.tile_status, (c) => STATUS[c]);
    this.solver = Int32Array.from(view.solver);
    this.revealer = Int32Array.from(view.revealer);
    this.agents = view.agents.map((a) => ({ ...a }));
    this.index = new Map(this.agents.map((a, i) => [a.id, i])); // agent id -> index
    this.hues = assignHues(this.agents, this.tiles);
    this.totals = view.totals;
    this.ended = Boolean(view.ended);
    this.grown = view.grown ?? [];
    const G = this.G;
    this.cells = new Int8Array(G * G).fill(-1);
    const c = view.cells;
    c.rows.forEach((row, dy) => {
      for (let dx = 0; dx < row.length; dx++) this.cells[(c.y + dy) * G + c.x + dx] = CELL[row[dx]];
    });
    // the tiles covering each cell (two are kept: overlaps are rarely deeper)
    this.cover = new Int32Array(G * G).fill(-1);
    this.cover2 = new Int32Array(G * G).fill(-1);
    for (const t of this.tiles) {
      for (const [lx, ly, w, h] of t.rects) {
        for (let y = t.y0 + ly; y < t.y0 + ly + h; y++) {
          for (let x = t.x0 + lx; x < t.x0 + lx + w; x++) {
            const i = y * G + x;
            if (this.cover[i] < 0) this.cover[i] = t.id;
            else this.cover2[i] = t.id;
          }
        }
      }
    }
    // neighbours: tiles sharing a cell; reached: hidden tiles an agent's territory reaches
    this.neighbours = this.tiles.map(() => new Set());
    for (let i = 0; i < G * G; i++) {
      const a = this.cover[i], b = this.cover2[i];
      if (a >= 0 && b >= 0) {
        this.neighbours[a].add(b);
        this.neighbours[b].add(a);
      }
    }
    this.reached = new Uint8Array(this.tiles.length);
    this.status.forEach((st, t) => { if (st > 0) this.reach(t); });
    for (const a of this.agents) this.reached[a.seed_tile] = 1;
  }

  /** Tile t is revealed or solved: it and the tiles overlapping it are reached. */
  reach(t) {
    this.reached[t] = 1;
    for (const n of this.neighbours[t]) this.reached[n] = 1;
  }

  /** The index of agent `id` (-1 for an agent this model does not know). */
  agentIndex(id) {
    return this.index.get(id) ?? -1;
  }

  /** The agent `id` as a short label: its name and id. */
  agentLabel(id) {
    const a = this.agents[this.agentIndex(id)];
    return a ? `${isolated(a.name)} (${a.id})` : id;
  }

  /** Fold one event; false when it needs a fresh view (manifest, grow). */
  apply(ev) {
    if (ev.kind === "manifest" || ev.kind === "grow") return false;
    if (ev.kind === "join") {
      this.index.set(ev.agent, this.agents.length);
      this.agents.push({ id: ev.agent, name: ev.name, model: ev.model, user: ev.user,
                         group: ev.agent, seed_tile: ev.seed_tile, reward: 0, solved: 0,
                         health: { state: "healthy", rate: 0 } });
      this.hues = assignHues(this.agents, this.tiles);
      this.reached[ev.seed_tile] = 1;
    } else if (ev.kind === "reveal") {
      for (const [c, v] of ev.givens) this.cells[c] = v;
      this.status[ev.tile] = 1;
      this.revealer[ev.tile] = this.agentIndex(ev.agent);
      this.reach(ev.tile);
    } else if (ev.kind === "commit") {
      for (const a of ev.accepted) this.cells[a.id] = 2 + a.v;
    } else if (ev.kind === "retract") {
      for (const c of ev.retracted) this.cells[c] = -1;
    }
    for (const s of ev.solved ?? []) {
      this.status[s.tile] = 2;
      this.reach(s.tile);
      const i = this.agentIndex(s.agent);
      this.solver[s.tile] = i;
      const a = this.agents[i];
      if (a) {
        a.reward += s.reward;
        a.solved += 1;
      }
    }
    this.revision = ev.rev;
    return true;
  }
}

/** An [r, g, b] as one RGBA pixel of a Uint32Array view of ImageData (little-endian). */
function packed([r, g, b]) {
  return (r | (g << 8) | (b << 16) | (255 << 24)) >>> 0;
}

const BG_PX = packed(BG);
const BG_CSS = `rgb(${BG.join(",")})`;
const GIVEN_PX = GIVEN.map(packed);

/** [x0, y0, x1, y1]: the bounding box of a model's tiles (empty when it has none). */
function bounds(m) {
  let x0 = m.G, y0 = m.G, x1 = 0, y1 = 0;
  for (const t of m.tiles) {
    x0 = Math.min(x0, t.x0); y0 = Math.min(y0, t.y0);
    x1 = Math.max(x1, t.x0 + t.w); y1 = Math.max(y1, t.y0 + t.h);
  }
  return x1 > x0 ? [x0, y0, x1, y1] : [0, 0, 0, 0];
}

/** A tile colour and its committed-0 (dark) and committed-1 (light) shades, packed. */
function shades(base) {
  return [packed(base), packed(base.map((c) => Math.round(c * 0.55))),
          packed(base.map((c) => Math.round(c + (255 - c) * 0.6)))];
}

/**
 * Draws a FieldModel onto a canvas with zoom and pan. Nothing is drawn on the spot:
 * `invalidate`, `setModel`, `zoomAt` and `panBy` only note what changed and ask for a
 * paint, which runs in an animation frame at most every PAINT_MS: it paints the dirtied
 * map tiles into a G x G pixel buffer (one typed-array write per cell, colours from a
 * palette), copies them to the offscreen canvas and presents once. So a burst of pushed
 * events costs one paint, never one per event, and a pan or zoom moves the drawn bitmap
 * by CSS until it settles (see `paint`).
 */
export class Renderer {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.base = document.createElement("canvas");
    // GPU-backed when the browser has one: putImageData then uploads only the dirty map
    // tiles, where a CPU-backed canvas would upload all G x G pixels at every present.
    this.bctx = this.base.getContext("2d");
    this.model = null;
    this.image = null; // ImageData of the whole field, the pixels behind `base`
    this.pixels = null; // its Uint32Array view
    this.palette = null; // see paletteFor
    this.paletteKey = null;
    this.dirty = new Set(); // map tiles to repaint on the next frame
    this.frame = 0; // the pending requestAnimationFrame, 0 when none
    this.waiting = 0; // the timer before it, 0 when none
    this.painted = -Infinity; // when the last paint ran
    this.chores = new Set(); // page updates to run in the next paint's frame
    this.zoom = 1; // the view: canvas pixels per cell, and the cell at the canvas origin
    this.ox = 0;
    this.oy = 0;
    this.drawn = { zoom: 1, ox: 0, oy: 0 }; // the view the canvas bitmap was drawn at
    this.settling = 0; // timer of a gesture's settle, 0 when no gesture is going on
    this.since = 0; // when the bitmap last matched the view during a gesture
    this.catchUp = false; // redraw at the current view in the next frame, gesture or not
    this.stale = false; // the offscreen canvas changed since it was last presented
  }

  /** Show `model`; `fit` frames the tiles' bounding box. */
  setModel(model, fit) {
    const G = model.G, T = model.mapTile, cols = Math.ceil(G / T);
    const resized = !this.model || this.model.G !== G;
    this.model = model;
    if (resized) {
      this.base.width = G;
      this.base.height = G;
      this.image = this.bctx.createImageData(G, G);
      this.pixels = new Uint32Array(this.image.data.buffer);
    }
    if (fit || resized) this.fit();
    // Outside the tiles' bounding box every cell is background: fill it all at once and
    // repaint only the map tiles that meet the box.
    this.pixels.fill(BG_PX);
    this.bctx.fillStyle = BG_CSS;
    this.bctx.fillRect(0, 0, G, G);
    const [x0, y0, x1, y1] = bounds(model);
    for (let r = Math.floor(y0 / T); r * T < y1; r++) {
      for (let c = Math.floor(x0 / T); c * T < x1; c++) this.dirty.add(r * cols + c);
    }
    this.stale = true;
    this.request();
  }

  /** Frame the tiles' bounding box (the whole field when it has no tiles). */
  fit() {
    let [x0, y0, x1, y1] = bounds(this.model);
    if (x1 <= x0) [x0, y0, x1, y1] = [0, 0, this.model.G, this.model.G];
    const side = Math.max(x1 - x0, y1 - y0) + 4;
    this.zoom = this.canvas.width / side;
    this.ox = x0 - 2;
    this.oy = y0 - 2;
  }

  /** Repaint the map tiles `ids` (row * cols + col) on the next frame. */
  invalidate(ids) {
    for (const id of ids) this.dirty.add(id);
    this.request();
  }

  /** Run `fn` in the next paint's frame (after the canvas is drawn). */
  schedule(fn) {
    this.chores.add(fn);
    this.request();
  }

  /** Ask for a paint: in the next animation frame, but not sooner than PAINT_MS after
   * the last one, so a stream of pushes repaints the page at most 1000 / PAINT_MS times
   * a second. */
  request() {
    // During a gesture the settle (or a catch-up) paints: a push's repaint would cost a
    // full frame while the compositor could be moving the bitmap for free.
    if (this.frame || this.waiting || (this.settling && !this.catchUp)) return;
    const wait = this.painted + PAINT_MS - performance.now();
    if (wait > 0) {
      this.waiting = setTimeout(() => {
        this.waiting = 0;
        this.request();
      }, wait);
    } else {
      this.frame = requestAnimationFrame(() => this.paint());
    }
  }

  /**
   * The frame: repaint the dirty map tiles, then present. During a pan or zoom gesture
   * the bitmap keeps the view it was drawn at and a CSS transform shows it at the
   * current view (the compositor moves it; nothing is repainted); once the gesture
   * settles the bitmap is drawn at the current view and the transform is dropped in the
   * same frame.
   */
  paint() {
    this.frame = 0;
    this.painted = performance.now();
    const chores = [...this.chores];
    this.chores.clear();
    if (this.model) this.draw();
    for (const fn of chores) fn();
  }

  /** Paint the dirty tiles; present at the current view unless a gesture holds it. */
  draw() {
    this.paintTiles();
    const v = this.drawn;
    if ((!this.settling || this.catchUp) &&
        (v.zoom !== this.zoom || v.ox !== this.ox || v.oy !== this.oy)) {
      this.drawn = { zoom: this.zoom, ox: this.ox, oy: this.oy };
      this.stale = true;
    }
    if (this.catchUp) this.since = performance.now();
    this.catchUp = false;
    if (this.stale) this.present();
    this.place();
  }

  /** Bring the offscreen canvas up to date with the model (the dirty map tiles). */
  paintTiles() {
    if (!this.dirty.size) return;
    const m = this.model;
    const T = m.mapTile, G = m.G, cols = Math.ceil(G / T);
    const pal = this.paletteFor(m);
    const px = this.pixels, cover = m.cover, cover2 = m.cover2, status = m.status, cells = m.cells;
    const reached = m.reached;
    const n = m.agents.length;
    const slot = (who) => (who >= 0 && who < n ? who + 1 : 0); // 0: an agent we do not know
    // Each putImageData is one upload: a few map tiles go one by one, many as one box.
    const one = this.dirty.size <= PUT_EACH;
    let bx0 = G, by0 = G, bx1 = 0, by1 = 0;
    for (const id of this.dirty) {
      const x0 = (id % cols) * T, y0 = Math.floor(id / cols) * T;
      const w = Math.min(T, G - x0), h = Math.min(T, G - y0);
      if (w <= 0 || h <= 0) continue;
      bx0 = Math.min(bx0, x0); by0 = Math.min(by0, y0);
      bx1 = Math.max(bx1, x0 + w); by1 = Math.max(by1, y0 + h);
      for (let y = y0; y < y0 + h; y++) {
        for (let i = y * G + x0, end = i + w; i < end; i++) {
          let t = cover[i];
          if (t < 0) { px[i] = BG_PX; continue; }
          const v = cells[i];
          if (v === 0 || v === 1) { px[i] = GIVEN_PX[v]; continue; }
          const t2 = cover2[i];
          if (t2 >= 0 && status[t2] > status[t]) t = t2;
          const st = status[t];
          if (st === 0 && t2 >= 0 && reached[t2] > reached[t]) t = t2;
          const row = st === 0 ? reached[t] : st === 1 ? 2 + slot(m.revealer[t])
            : n + 3 + slot(m.solver[t]);
          px[i] = pal[3 * row + (v === 2 ? 1 : v === 3 ? 2 : 0)];
        }
      }
      if (one) this.bctx.putImageData(this.image, 0, 0, x0, y0, w, h);
    }
    if (!one && bx1 > bx0) this.bctx.putImageData(this.image, 0, 0, bx0, by0, bx1 - bx0, by1 - by0);
    this.dirty.clear();
    this.stale = true;
  }

  /**
   * The palette of `m`: rows of three packed shades (base, dark, light). Row 0: hidden,
   * not reached; row 1: hidden, reached; rows 2..n+2: revealed by an unknown agent, then
   * by each agent; rows n+3..2n+3: the same for solved tiles. Rebuilt only when the model
   * or its agent count changes.
   */
  paletteFor(m) {
    const n = m.agents.length;
    if (this.paletteKey !== m || this.palette.length !== 3 * (2 * n + 4)) {
      const rows = [shades(HIDDEN), shades(REACHED)];
      for (const [s, l] of [[0.35, 0.84], [0.55, 0.68]]) {
        rows.push(shades(hsl(0, s, l)));
        for (let a = 0; a < n; a++) rows.push(shades(hsl(m.hues[a] ?? 0, s, l)));
      }
      this.palette = Uint32Array.from(rows.flat());
      this.paletteKey = m;
    }
    return this.palette;
  }

  /** Draw the offscreen canvas onto the visible one at the drawn view. */
  present() {
    this.stale = false;
    const ctx = this.ctx, v = this.drawn;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = BG_CSS;
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.imageSmoothingEnabled = false;
    ctx.setTransform(v.zoom, 0, 0, v.zoom, -v.ox * v.zoom, -v.oy * v.zoom);
    ctx.drawImage(this.base, 0, 0);
    this.outlined = v.zoom >= OUTLINE_ZOOM;
    if (this.outlined) this.outline(v);
  }

  /** At high zoom: the outlines of the tiles in view (edges between cells whose sets of
   * covering tiles differ), as one path. */
  outline(v) {
    const m = this.model, G = m.G, ctx = this.ctx;
    const x0 = Math.max(0, Math.floor(v.ox)), y0 = Math.max(0, Math.floor(v.oy));
    const x1 = Math.min(G, Math.ceil(v.ox + this.canvas.width / v.zoom));
    const y1 = Math.min(G, Math.ceil(v.oy + this.canvas.height / v.zoom));
    const HOLE = -1048577; // the key of a hole, and of everything off the canvas
    const key = (x, y) => (x < 0 || y < 0 || x >= G || y >= G ? HOLE
      : m.cover[y * G + x] * 1048576 + m.cover2[y * G + x]);
    ctx.beginPath();
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const k = key(x, y);
        if (key(x + 1, y) !== k) { ctx.moveTo(x + 1, y); ctx.lineTo(x + 1, y + 1); }
        if (key(x, y + 1) !== k) { ctx.moveTo(x, y + 1); ctx.lineTo(x + 1, y + 1); }
        if (x === x0 && key(x - 1, y) !== k) { ctx.moveTo(x, y); ctx.lineTo(x, y + 1); }
        if (y === y0 && key(x, y - 1) !== k) { ctx.moveTo(x, y); ctx.lineTo(x + 1, y); }
      }
    }
    ctx.lineWidth = 1.5 / v.zoom;
    ctx.strokeStyle = "rgba(20, 30, 25, 0.55)";
    ctx.stroke();
  }

  /** The CSS transform that shows the bitmap (drawn view) at the current view. */
  place() {
    const v = this.drawn;
    if (v.zoom === this.zoom && v.ox === this.ox && v.oy === this.oy) {
      this.canvas.style.transform = "";
      return;
    }
    const css = this.canvas.clientWidth / this.canvas.width; // CSS pixels per canvas pixel
    const tx = (v.ox - this.ox) * this.zoom * css, ty = (v.oy - this.oy) * this.zoom * css;
    this.canvas.style.transform = `translate(${tx}px, ${ty}px) scale(${this.zoom / v.zoom})`;
  }

  /**
   * A pan or zoom step: move the bitmap by CSS now; redraw it at the new view when input
   * pauses for SETTLE_MS, and every REDRAW_MS during a long gesture.
   */
  moved() {
    const now = performance.now();
    if (!this.settling) this.since = now;
    clearTimeout(this.settling);
    this.settling = setTimeout(() => {
      this.settling = 0;
      this.request();
    }, SETTLE_MS);
    if (now - this.since >= REDRAW_MS) {
      this.catchUp = true;
      this.request();
    }
    this.place();
  }

  /** Zoom by `factor` about the canvas point (px, py). */
  zoomAt(factor, px, py) {
    const cx = this.ox + px / this.zoom, cy = this.oy + py / this.zoom;
    this.zoom = Math.min(64, Math.max(0.2, this.zoom * factor));
    this.ox = cx - px / this.zoom;
    this.oy = cy - py / this.zoom;
    this.moved();
  }

  /** Pan by (dx, dy) canvas pixels. */
  panBy(dx, dy) {
    this.ox -= dx / this.zoom;
    this.oy -= dy / this.zoom;
    this.moved();
  }

  /** [r, g, b, a] of cell (x, y) as drawn (for tests): pending map tiles are painted first. */
  pixelAt(x, y) {
    this.paintTiles();
    return Array.from(this.bctx.getImageData(x, y, 1, 1).data);
  }
}
