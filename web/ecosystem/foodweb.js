// The food web as a directed graph, drawn in SVG from the rule graph: one node per species
// (name, role, self-interaction) around an ellipse and the basal resource below them; an
// arrow from eater to eaten for each consuming pair (decoded from the pair's own
// endpoints, as the engine does), from each basal feeder to the resource, and a dashed
// line for competition, mutualism or avoidance. Neutral pairs draw nothing.
//
// The species sit at equal angles with the bottom of the ellipse midway between two of
// them, so no straight edge (to the resource, or across) passes through a third node; a
// node's labels sit on its outer side, away from its edges.

import { isolated } from "/js/page.js";

const NS = "http://www.w3.org/2000/svg";
const BASAL = new Set(["producer", "grazer", "omnivore"]);
const RADIUS = 22;
const CENTRE = { x: 200, y: 132, rx: 128, ry: 78 };
const RESOURCE = { x: 200, y: 272, w: 92, h: 24 };

function el(name, attrs = {}, text = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = text;
  return node;
}

/** The directed (eater, eaten) edges and the other pair kinds of `graph`. */
export function edgesOf(graph) {
  const out = [];
  for (const { pair, mode } of graph.interactions) {
    const [a, b] = pair.split("-");
    if (mode === "a_consumes_b") out.push({ pair, kind: "eats", from: a, to: b });
    else if (mode === "b_consumes_a") out.push({ pair, kind: "eats", from: b, to: a });
    else if (mode !== "neutral") out.push({ pair, kind: mode, from: a, to: b });
  }
  return out;
}

function shortened(p, q, start, end) {
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  const d = Math.hypot(dx, dy) || 1;
  return [p.x + (dx * start) / d, p.y + (dy * start) / d, q.x - (dx * end) / d, q.y - (dy * end) / d];
}

/** Where `n` species sit: equal angles, the bottom (the resource's side) between two. */
export function layout(n) {
  return Array.from({ length: n }, (_, k) => {
    const angle = Math.PI / 2 + (2 * Math.PI * (k + 0.5)) / n;
    return { x: CENTRE.x + CENTRE.rx * Math.cos(angle), y: CENTRE.y + CENTRE.ry * Math.sin(angle),
             cos: Math.cos(angle), sin: Math.sin(angle) };
  });
}

/** Where a node's two labels go, on its outer side: above an upper node; below a lower one
 * (never at the very bottom), leaning outward, clear of its edge to the resource. */
function labels(p) {
  if (p.sin < 1e-9) return { anchor: "middle", x: p.x, y: p.y - RADIUS - 19 };
  return { anchor: p.cos < 0 ? "end" : "start", x: p.x - Math.sign(p.cos) * (RADIUS - 10),
           y: p.y + RADIUS + 13 };
}

/** How far before the resource's centre an arrow along (dx, dy) stops: at its box. */
function toBox(dx, dy) {
  const d = Math.hypot(dx, dy);
  return Math.min((RESOURCE.w / 2) * d / Math.abs(dx), (RESOURCE.h / 2) * d / Math.abs(dy)) + 2;
}

/** Draw `graph` into `svg` (viewBox 400 x 300) with `colours` per species id. */
export function drawFoodWeb(svg, graph, colours) {
  svg.replaceChildren();
  svg.dataset.version = String(graph.version);
  const defs = el("defs");
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
                                markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(el("path", { d: "M0,0 L10,5 L0,10 z", fill: "#5d6b63" }));
  defs.append(marker);
  svg.append(defs);
  const pos = { R: RESOURCE };
  const spots = layout(graph.species.length);
  graph.species.forEach((s, k) => { pos[s.id] = spots[k]; });
  const edges = edgesOf(graph);
  for (const s of graph.species) {
    if (BASAL.has(s.role)) edges.push({ pair: `${s.id}-R`, kind: "eats", from: s.id, to: "R" });
  }
  for (const e of edges) {
    const [p, q] = [pos[e.from], pos[e.to]];
    const end = e.to === "R" ? toBox(q.x - p.x, q.y - p.y) : RADIUS + 3;
    const [x1, y1, x2, y2] = shortened(p, q, RADIUS + 2, end);
    const line = el("path", { class: "edge", d: `M${x1},${y1} L${x2},${y2}`, "data-pair": e.pair,
                              "data-kind": e.kind, "data-from": e.from, "data-to": e.to });
    if (e.kind === "eats") line.setAttribute("marker-end", "url(#arrow)");
    svg.append(line);
    if (e.kind !== "eats") { // 30% along: the diagonals of four species cross mid-way
      svg.append(el("text", { class: "edge-label", x: x1 + 0.3 * (x2 - x1), y: y1 + 0.3 * (y2 - y1) - 4 },
                    e.kind));
    }
  }
  const resource = el("g", { class: "node", "data-species": "R" });
  resource.append(el("rect", { x: RESOURCE.x - RESOURCE.w / 2, y: RESOURCE.y - RESOURCE.h / 2,
                               width: RESOURCE.w, height: RESOURCE.h, rx: 6, fill: "#efe6c4" }));
  resource.append(el("text", { x: RESOURCE.x, y: RESOURCE.y + 4 }, "basal resource"));
  svg.append(resource);
  for (const s of graph.species) {
    const p = pos[s.id];
    const at = labels(p);
    const g = el("g", { class: "node", "data-species": s.id, "data-role": s.role, "data-self": s.self });
    g.append(el("circle", { cx: p.x, cy: p.y, r: RADIUS, fill: colours[s.id] }));
    g.append(el("text", { class: "sid", x: p.x, y: p.y + 4 }, s.id));
    g.append(el("text", { class: `label ${at.anchor}`, x: at.x, y: at.y }, `${isolated(s.name)} · ${s.role}`));
    g.append(el("text", { class: `label self ${at.anchor}`, x: at.x, y: at.y + 12 }, s.self));
    svg.append(g);
  }
}
