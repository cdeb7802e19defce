// The field page's model and renderer: a spectator view folded forward by pushed
// events, drawn cell by cell into an offscreen G x G canvas, one 64 x 64 map tile at
// a time (only the map tiles an event dirtied are redrawn), then blitted with the
// page's zoom and pan.

const STATUS = { h: 0, r: 1, s: 2 };
const CELL = { ".": -1, 0: 0, 1: 1, 2: 2, 3: 3 }; // -1 unknown, 0/1 given, 2/3 committed 0/1
const BG = [238, 240, 236];
const HIDDEN = [212, 216, 210];
const GOLDEN = 137.508;

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
    this.hues = assignHues(this.agents, this.tiles);
    this.totals = view.totals;
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
  }

  /** Index of agent id "aN". */
  static agentIndex(id) {
    return Number(id.slice(1)) - 1;
  }

  /** Fold one event; false when it needs a fresh view (manifest, grow). */
  apply(ev) {
    if (ev.kind === "manifest" || ev.kind === "grow") return false;
    if (ev.kind === "join") {
      this.agents.push({ id: ev.agent, name: ev.name, model: ev.model, user: ev.user,
                         group: ev.agent, seed_tile: ev.seed_tile, reward: 0, solved: 0,
                         health: { state: "healthy", rate: 0 } });
      this.hues = assignHues(this.agents, this.tiles);
    } else if (ev.kind === "reveal") {
      for (const [c, v] of ev.givens) this.cells[c] = v;
      this.status[ev.tile] = 1;
      this.revealer[ev.tile] = FieldModel.agentIndex(ev.agent);
    } else if (ev.kind === "commit") {
      for (const a of ev.accepted) this.cells[a.id] = 2 + a.v;
    } else if (ev.kind === "retract") {
      for (const c of ev.retracted) this.cells[c] = -1;
    }
    for (const s of ev.solved ?? []) {
      this.status[s.tile] = 2;
      const i = FieldModel.agentIndex(s.agent);
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

/** Draws a FieldModel onto a canvas with zoom and pan. */
export class Renderer {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.base = document.createElement("canvas");
    this.bctx = this.base.getContext("2d", { willReadFrequently: true });
    this.model = null;
    this.zoom = 1;
    this.ox = 0;
    this.oy = 0;
  }

  /** Show `model`; `fit` frames the tiles' bounding box. */
  setModel(model, fit) {
    const resized = !this.model || this.model.G !== model.G;
    this.model = model;
    if (resized) {
      this.base.width = model.G;
      this.base.height = model.G;
    }
    if (fit || resized) this.fit();
    this.drawAll();
  }

  fit() {
    const m = this.model;
    let x0 = m.G, y0 = m.G, x1 = 0, y1 = 0;
    for (const t of m.tiles) {
      x0 = Math.min(x0, t.x0); y0 = Math.min(y0, t.y0);
      x1 = Math.max(x1, t.x0 + t.w); y1 = Math.max(y1, t.y0 + t.h);
    }
    if (x1 <= x0) { x0 = 0; y0 = 0; x1 = m.G; y1 = m.G; }
    const side = Math.max(x1 - x0, y1 - y0) + 4;
    this.zoom = this.canvas.width / side;
    this.ox = x0 - 2;
    this.oy = y0 - 2;
  }

  drawAll() {
    const cols = Math.ceil(this.model.G / this.model.mapTile);
    const all = [];
    for (let i = 0; i < cols * cols; i++) all.push(i);
    this.drawMapTiles(all);
  }

  /** Redraw the map tiles `ids` (row * cols + col) of the offscreen canvas, then present. */
  drawMapTiles(ids) {
    const m = this.model;
    const T = m.mapTile, G = m.G, cols = Math.ceil(G / T);
    for (const id of ids) {
      const x0 = (id % cols) * T, y0 = Math.floor(id / cols) * T;
      const w = Math.min(T, G - x0), h = Math.min(T, G - y0);
      if (w <= 0 || h <= 0) continue;
      const img = this.bctx.createImageData(w, h);
      const px = img.data;
      for (let dy = 0; dy < h; dy++) {
        for (let dx = 0; dx < w; dx++) {
          const rgb = this.colour((y0 + dy) * G + x0 + dx);
          const o = (dy * w + dx) * 4;
          px[o] = rgb[0]; px[o + 1] = rgb[1]; px[o + 2] = rgb[2]; px[o + 3] = 255;
        }
      }
      this.bctx.putImageData(img, x0, y0);
    }
    this.present();
  }

  /** The colour of cell i: tile status and owner hue, then the cell's value on top. */
  colour(i) {
    const m = this.model;
    let t = m.cover[i];
    if (t < 0) return BG;
    const t2 = m.cover2[i];
    if (t2 >= 0 && m.status[t2] > m.status[t]) t = t2;
    const st = m.status[t];
    const v = m.cells[i];
    if (v === 0) return [34, 38, 36];
    if (v === 1) return [252, 252, 250];
    let base;
    if (st === 0) base = HIDDEN;
    else if (st === 1) base = hsl(m.hues[m.revealer[t]] ?? 0, 0.35, 0.84);
    else base = hsl(m.hues[m.solver[t]] ?? 0, 0.55, 0.68);
    if (v === 2) return base.map((c) => Math.round(c * 0.55));
    if (v === 3) return base.map((c) => Math.round(c + (255 - c) * 0.6));
    return base;
  }

  present() {
    const ctx = this.ctx;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = `rgb(${BG.join(",")})`;
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.imageSmoothingEnabled = false;
    ctx.setTransform(this.zoom, 0, 0, this.zoom, -this.ox * this.zoom, -this.oy * this.zoom);
    ctx.drawImage(this.base, 0, 0);
  }

  /** Zoom by `factor` about the canvas point (px, py). */
  zoomAt(factor, px, py) {
    const cx = this.ox + px / this.zoom, cy = this.oy + py / this.zoom;
    this.zoom = Math.min(64, Math.max(0.2, this.zoom * factor));
    this.ox = cx - px / this.zoom;
    this.oy = cy - py / this.zoom;
    this.present();
  }

  /** Pan by (dx, dy) canvas pixels. */
  panBy(dx, dy) {
    this.ox -= dx / this.zoom;
    this.oy -= dy / this.zoom;
    this.present();
  }

  /** [r, g, b, a] of cell (x, y) in the offscreen canvas (for tests). */
  pixelAt(x, y) {
    return Array.from(this.bctx.getImageData(x, y, 1, 1).data);
  }
}
