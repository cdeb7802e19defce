// The food web as a directed graph, drawn in SVG from the rule graph: one node per species
// (name, role, self-interaction) around a circle and the basal resource below them; an
// arrow from eater to eaten for each consuming pair (decoded from the pair's own
// endpoints, as the engine does), from each basal feeder to the resource, and a dashed
// line for competition, mutualism or avoidance. Neutral pairs draw nothing.

import { isolated } from "/js/page.js";

const NS = "http://www.w3.org/2000/svg";
const BASAL = new Set(["producer", "grazer", "omnivore"]);
const RADIUS = 22;

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
  const n = graph.species.length;
  const pos = {};
  graph.species.forEach((s, k) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * k) / n;
    pos[s.id] = { x: 200 + 130 * Math.cos(angle), y: 120 + 82 * Math.sin(angle) };
  });
  pos.R = { x: 200, y: 272 };
  const edges = edgesOf(graph);
  for (const s of graph.species) {
    if (BASAL.has(s.role)) edges.push({ pair: `${s.id}-R`, kind: "eats", from: s.id, to: "R" });
  }
  for (const e of edges) {
    const end = e.to === "R" ? 14 : RADIUS + 3;
    const [x1, y1, x2, y2] = shortened(pos[e.from], pos[e.to], RADIUS + 2, end);
    const line = el("path", { class: "edge", d: `M${x1},${y1} L${x2},${y2}`, "data-pair": e.pair,
                              "data-kind": e.kind, "data-from": e.from, "data-to": e.to });
    if (e.kind === "eats") line.setAttribute("marker-end", "url(#arrow)");
    svg.append(line);
    if (e.kind !== "eats") {
      svg.append(el("text", { class: "edge-label", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4 }, e.kind));
    }
  }
  const resource = el("g", { class: "node", "data-species": "R" });
  resource.append(el("rect", { x: pos.R.x - 46, y: pos.R.y - 12, width: 92, height: 24, rx: 6,
                               fill: "#efe6c4" }));
  resource.append(el("text", { x: pos.R.x, y: pos.R.y + 4 }, "basal resource"));
  svg.append(resource);
  for (const s of graph.species) {
    const g = el("g", { class: "node", "data-species": s.id, "data-role": s.role, "data-self": s.self });
    g.append(el("circle", { cx: pos[s.id].x, cy: pos[s.id].y, r: RADIUS, fill: colours[s.id] }));
    g.append(el("text", { class: "sid", x: pos[s.id].x, y: pos[s.id].y + 4 }, s.id));
    g.append(el("text", { x: pos[s.id].x, y: pos[s.id].y + RADIUS + 13 }, `${isolated(s.name)} · ${s.role}`));
    g.append(el("text", { class: "self", x: pos[s.id].x, y: pos[s.id].y + RADIUS + 25 }, s.self));
    svg.append(g);
  }
}
