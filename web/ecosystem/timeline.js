// The timeline of a run's decisions and what became of them: along generations 0..180,
// each accepted decision (a triangle where it was accepted, a bar from the generation it
// may first fire at, `from_generation`: the view's, or worked out from its vocabulary), every outcome a frame reports (applied, reverted, stale, ...: a dot coloured
// by outcome, named by its trigger in the list) and extinctions; a line marks the
// generation shown.

const NS = "http://www.w3.org/2000/svg";
const WIDTH = 720;
const COLOURS = { applied: "#3aa76d", unchanged: "#9aa59f", reverted: "#3b6fb6",
                  superseded: "#9aa59f", rejected: "#c8483d", stale_graph_version: "#c8483d",
                  revert_refused: "#e0a526", extinct: "#1d2521" };

function el(name, attrs = {}, title = null) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (title !== null) {
    const t = document.createElementNS(NS, "title");
    t.textContent = title;
    node.append(t);
  }
  return node;
}

const x = (g) => (g / 180) * WIDTH;

/** One line of text for a frame event. */
export function describe(event, decisions) {
  if (event.outcome === "extinct") return `generation ${event.generation}: ${event.species} went extinct`;
  const d = decisions[event.decision];
  const how = d ? `${d.via}, ${d.change.activation}` : "decision";
  const trigger = event.trigger ? ` (trigger ${event.trigger})` : "";
  const version = event.version ? ` → graph version ${event.version}` : "";
  const reason = event.reason ? `: ${event.reason}` : "";
  return `generation ${event.generation}: decision ${event.decision} (${how})${trigger} ` +
    `${event.outcome}${version}${reason}`;
}

/** Draw the timeline into `svg` and list its happenings in `list` (newest last). */
export function drawTimeline(svg, list, frames, decisions, shown) {
  svg.replaceChildren(el("line", { x1: 0, x2: WIDTH, y1: 30, y2: 30, stroke: "#dfe3dd", "stroke-width": 2 }));
  for (const d of decisions) {
    const from = d.from_generation;
    if (from !== undefined) {
      svg.append(el("rect", { x: x(from), y: 10, width: 3, height: 12, fill: "#8a4bb0",
                              "data-decision": d.decision }, `decision ${d.decision} may fire from ${from}`));
    }
    svg.append(el("path", { d: `M${x(d.generation) - 5},8 L${x(d.generation) + 5},8 L${x(d.generation)},16 z`,
                            fill: "#8a4bb0" }, `decision ${d.decision} accepted at ${d.generation}`));
  }
  const lines = [];
  for (const frame of frames) {
    if (!frame) continue;
    for (const event of frame.events) {
      svg.append(el("circle", { cx: x(event.generation), cy: 42, r: 4,
                                fill: COLOURS[event.outcome] ?? "#66716b",
                                "data-outcome": event.outcome }, describe(event, decisions)));
      lines.push(describe(event, decisions));
    }
  }
  if (shown !== null) {
    svg.append(el("line", { x1: x(shown), x2: x(shown), y1: 0, y2: 60, stroke: "#1d2521",
                            "stroke-width": 1, "data-shown": shown }));
  }
  for (const d of decisions) {
    lines.push(`decision ${d.decision} (${d.via}) accepted at generation ${d.generation} against ` +
      `graph version ${d.graphVersion}: ${JSON.stringify(d.change.patch)}, ${d.change.activation}, ` +
      `${d.change.duration}, ${d.change.transition}, from generation ${d.change.generation}` +
      (d.from_generation === undefined ? "" : ` (may fire from ${d.from_generation})`));
  }
  list.replaceChildren(...lines.map((text) => {
    const li = document.createElement("li");
    li.textContent = text;
    return li;
  }));
}
