// The ecosystem page: the setup form, then one run `ecosystem:<id>` live.
//
// `?id=ecosystem:NAME` (the lobby's links) watches a run; without it the form creates one
// (`ecosystem.create`; the server's refusals are shown next to the field they name). The
// page subscribes to the run: each `generation` event grows the charts and the timeline,
// the `snapshot` pushes (at most four a second) carry the view with the density fields,
// `patch`/`schedule`/`control`/`end`/`phrased` events update their panels, and a frame
// whose graph version moved redraws the food web from `ecosystem.history`. The replay
// scrubber shows any generation the run reached (its frame, graph and coarse fields); Live
// returns. The run's owner gets play/pause/step/speed and the patch and schedule forms.
// A token (agent role) may be given as `#token=...`; on a server run with --open every
// anonymous page is an agent.

import { backoff, Client, RequestError, socketUrl } from "/js/client.js";
import { isolated, statusLine } from "/js/page.js";
import { LineChart } from "/ecosystem/charts.js";
import { drawPlane } from "/ecosystem/fields.js";
import { drawFoodWeb } from "/ecosystem/foodweb.js";
import { drawOrigin, FIELDS } from "/ecosystem/origin.js";
import { patchForm, patchTargets, patchValue, patchValues } from "/ecosystem/patchform.js";
import { drawTimeline } from "/ecosystem/timeline.js";

const COLOURS = { A: "#2f7d5b", B: "#3b6fb6", C: "#b0602c", D: "#8a4bb0", resource: "#a08a2c" };
const MAX_ANSWER = 140;
const $ = (sel) => document.querySelector(sel);

const params = new URLSearchParams(location.search);
const token = new URLSearchParams(location.hash.slice(1)).get("token");
const line = statusLine(); // the run's word, or the connection's
const setStatus = line.say;
const page = {
  client: null,
  topic: null,
  view: null, // the latest view of a created run
  vocabulary: null,
  frames: [], // frames[g]
  decisions: [],
  graph: null, // the graph drawn live
  mode: "live", // or "history"
  shown: null, // the generation a replay shows
  pending: false, // a redraw is scheduled
  subscription: null,
  retry: null, // the timer of the next subscribe to a run not created yet
  away: false, // the connection or the run is away: the status line says so, not the run
};
const charts = {
  biomass: new LineChart($("#chart-biomass")),
  population: new LineChart($("#chart-population")),
  resource: new LineChart($("#chart-resource")),
};

function show(id, visible = true) {
  $(id).hidden = !visible;
}

/** The server's own sentence of a refusal (RequestError prefixes it with the code). */
function said(err) {
  return err instanceof RequestError ? err.message.replace(`${err.code}: `, "") : String(err.message ?? err);
}

function setError(name, message) {
  const el = document.querySelector(`[data-error="${name}"]`);
  if (el) el.textContent = message ?? "";
}

function ids() {
  return page.view ? page.view.graph.species.map((s) => s.id) : [];
}

function isOwner() {
  const c = page.client;
  return Boolean(c && page.view && c.role !== "spectator" && c.hello?.name === page.view.owner);
}

// ---- the setup form -----------------------------------------------------------------

function counters() {
  for (const name of FIELDS) {
    const n = $(`#${name}`).value.trim().length;
    const out = document.querySelector(`.count[data-for="${name}"]`);
    out.textContent = `${n}/${MAX_ANSWER}`;
    out.classList.toggle("over", n > MAX_ANSWER);
  }
}

/** The form field a refusal names ("world", "args.answers.world", ...), or "form". */
function fieldOf(detail) {
  const path = String(detail?.path ?? "");
  const last = path.split(".").pop();
  if (FIELDS.includes(last)) return last;
  return "form";
}

async function create(event) {
  event.preventDefault();
  for (const name of [...FIELDS, "form"]) setError(name, "");
  const answers = Object.fromEntries(FIELDS.map((name) => [name, $(`#${name}`).value]));
  const name = $("#run-name").value.trim() || `run-${Math.random().toString(36).slice(2, 10)}`;
  const args = { answers, size: Number($("#size").value) };
  const seed = $("#seed").value.trim();
  if (/^\d+$/.test(seed)) {
    args.seed = Number(seed);
    if (!Number.isSafeInteger(args.seed)) { // it would be sent rounded: the op's bound, 2^53-1
      setError("form", `seed must be between 0 and ${Number.MAX_SAFE_INTEGER}`);
      return;
    }
  } else if (seed) {
    args.seed = seed; // the server says what is wrong
  }
  const to = `ecosystem:${name}`;
  $("#create").disabled = true;
  try {
    await page.client.request("ecosystem.create", to, args);
  } catch (err) {
    $("#create").disabled = false;
    if (err instanceof RequestError) {
      setError(fieldOf(err.detail), said(err));
      return;
    }
    throw err;
  }
  $("#create").disabled = false;
  history.replaceState(null, "", `?id=${encodeURIComponent(to)}${location.hash}`);
  watch(to);
}

// ---- following a run ----------------------------------------------------------------

function watch(to, attempt = 0) {
  if (page.subscription) page.subscription.close();
  clearTimeout(page.retry);
  Object.assign(page, { topic: to, view: null, frames: [], decisions: [], graph: null,
                        mode: "live", shown: null });
  $("#run").textContent = to.replace(/^ecosystem:/, "");
  document.title = `Petri Dish Games — ${to}`;
  page.subscription = page.client.subscribe(to, (push) => {
    queue.push(push);
    if (!pumping) pump();
  });
  page.subscription.ready.catch((err) => {
    if (err.code !== "unknown_actor") {
      setStatus("error", err.message);
      return;
    }
    // Not created yet: the form may create it, else it is followed once someone does.
    showSetup(true);
    if (!$("#run-name").value) $("#run-name").value = to.replace(/^ecosystem:/, "");
    setStatus("open", "no such run yet");
    page.retry = setTimeout(() => watch(to, attempt + 1), backoff(attempt, 500, 10000));
  });
}

// Pushes are folded one at a time, in order (folding one may wait for a request).
const queue = [];
let pumping = false;

async function pump() {
  pumping = true;
  try {
    while (queue.length) await fold(queue.shift());
  } catch (err) {
    setStatus("error", String(err.message ?? err));
  } finally {
    pumping = false;
  }
}

async function fold(push) {
  line.note(null); // data flows again: a refused scrub is old news
  if (push.kind === "snapshot") {
    await onView(push.data);
  } else if (push.kind === "events") {
    for (const event of push.data) await onEvent(event);
  }
  redraw();
}

async function onView(view) {
  if (!view.created) {
    page.view = null;
    showSetup(true);
    show("#origin", Boolean(view.setting_up || view.blocked));
    if (view.setting_up) {
      drawOrigin({ source: "setting_up", answers: view.answers });
      setStatus("connecting", "the model is setting the run up…");
    } else if (view.blocked) {
      drawOrigin({ source: "blocked", answers: null, blocked: view.blocked });
      setStatus("open", "setup blocked by the fidelity review");
    } else {
      setStatus("open", "no such run yet");
    }
    return;
  }
  const first = page.view === null;
  page.view = view;
  if (first) {
    const full = await page.client.request("ecosystem.view", page.topic, {});
    page.vocabulary = full.vocabulary;
    const history = await page.client.request("ecosystem.history", page.topic,
                                              { generation: 0, count: 181 });
    for (const frame of history.frames) page.frames[frame.generation] = frame;
    showSetup(false);
    for (const id of ["#origin", "#live", "#charts", "#fields", "#web", "#timeline-panel"]) show(id);
    legend();
    patchForm(page);
  }
  page.frames[view.frame.generation] = view.frame;
  page.decisions = view.decisions;
  drawOrigin(view.setup);
}

/** The first generation a pushed decision may fire at: `schedule.first_generation`, by the
 * table the view's vocabulary carries (a stored event says none; the view's decisions do);
 * undefined without the table (the view not read, or served by an older version). */
function firstGeneration(d) {
  const table = page.vocabulary?.armed_from;
  if (!table) return undefined;
  const { delays, compared } = table;
  const a = d.change.activation;
  return Math.max(d.generation + 1,
                  d.change.generation + (delays[a] ?? 0), compared.includes(a) ? 2 : 1);
}

async function onEvent(event) {
  const v = page.view;
  if (!v) return; // a snapshot follows the setup
  switch (event.type) {
    case "generation": {
      const frame = event.frame;
      page.frames[frame.generation] = frame;
      v.frame = frame;
      v.generation = frame.generation;
      if (frame.graphVersion !== v.graph.version) {
        const h = await page.client.request("ecosystem.history", page.topic,
                                            { generation: frame.generation });
        if (h.graph.version >= v.graph.version) v.graph = h.graph;
      }
      break;
    }
    case "patch":
    case "schedule":
      page.decisions = [...page.decisions, { decision: page.decisions.length, via: event.type,
                                             ...event.decision,
                                             from_generation: firstGeneration(event.decision) }];
      v.decisions = page.decisions;
      break;
    case "control":
      v.playing = event.playing;
      v.speed = event.speed;
      break;
    case "end":
      v.end = { breakdown: event.breakdown, reflection: event.reflection };
      v.playing = false;
      break;
    case "phrased":
      v.phrasing = event;
      break;
    default:
      break;
  }
}

// ---- drawing --------------------------------------------------------------------------

/** Redraw in the next animation frame, once however many pushes arrive before it. */
function redraw() {
  if (page.pending) return;
  page.pending = true;
  requestAnimationFrame(() => {
    page.pending = false;
    paint();
  });
}

function paint() {
  const v = page.view;
  if (!v) return;
  const g = v.generation;
  if (!page.away) setStatus("open", v.end ? "ended" : v.playing ? `playing at ${v.speed}/s` : "paused");
  $("#generation").textContent = String(g);
  $("#run-state").textContent = v.end ? "ended" : v.playing ? `playing · ${v.speed}/s` : "paused";
  const scrubber = $("#scrubber");
  scrubber.max = String(g);
  if (page.mode === "live") scrubber.value = String(g);
  controls();
  const cursor = page.mode === "history" ? page.shown : null;
  const series = (key) => ids().map((id) => ({
    name: id, color: COLOURS[id], values: page.frames.slice(0, g + 1).map((f) => f?.[key][id] ?? 0) }));
  charts.biomass.set(series("biomass"), cursor);
  charts.population.set(series("population"), cursor);
  const upTo = page.frames.slice(0, g + 1);
  charts.resource.set([
    { name: "resource", color: COLOURS.resource, values: upTo.map((f) => f?.resource ?? 0) },
    { name: "occupied", color: "#66716b", values: upTo.map((f) => f?.occupied ?? 0) },
  ], cursor);
  for (const c of Object.values(charts)) c.canvas.dataset.generation = String(g);
  if (page.mode === "live") {
    figures(v.frame);
    heatmaps(v.density);
    foodweb(v.graph);
  }
  drawTimeline($("#timeline"), $("#happenings"), page.frames.slice(0, g + 1), page.decisions,
               page.mode === "history" ? page.shown : g);
  end(v);
}

function figures(frame) {
  const parts = Object.entries(frame.biomass).map(([id, b]) =>
    `${id} ${b.toFixed(1)} (${frame.population[id]} cells)${frame.alive[id] ? "" : " extinct"}`);
  $("#frame-figures").textContent = `generation ${frame.generation} · ${parts.join(" · ")} · ` +
    `resource ${frame.resource.toFixed(3)} · score ${frame.score.total.toFixed(3)} · ` +
    `graph v${frame.graphVersion}`;
  $("#frame-figures").dataset.generation = String(frame.generation);
}

function heatmaps(density) {
  const box = $("#heatmaps");
  const planes = [...Object.entries(density.species), ["resource", density.resource]];
  if (box.children.length !== planes.length) {
    box.replaceChildren(...planes.map(([id]) => {
      const fig = document.createElement("figure");
      const canvas = document.createElement("canvas");
      canvas.dataset.plane = id;
      const cap = document.createElement("figcaption");
      const species = page.view.graph.species.find((s) => s.id === id);
      cap.textContent = species ? `${id} · ${isolated(species.name)}` : "basal resource";
      fig.append(canvas, cap);
      return fig;
    }));
  }
  for (const [id, plane] of planes) {
    const canvas = box.querySelector(`canvas[data-plane="${id}"]`);
    drawPlane(canvas, plane, density.side, COLOURS[id] ?? COLOURS.resource);
  }
  box.dataset.generation = String(density.generation);
  $("#field-generation").textContent = `generation ${density.generation}, ${density.side} × ${density.side}`;
}

function foodweb(graph) {
  const svg = $("#foodweb");
  if (page.graph?.version === graph.version && svg.dataset.version === String(graph.version)) return;
  page.graph = graph;
  drawFoodWeb(svg, graph, COLOURS);
  $("#web-version").textContent = `graph version ${graph.version}`;
  patchTargets(page);
}

function legend() {
  const box = $("#legend");
  box.replaceChildren(...page.view.graph.species.map((s) => {
    const span = document.createElement("span");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = COLOURS[s.id];
    span.append(sw, `${s.id} · ${isolated(s.name)} (${s.role})`);
    return span;
  }));
}

function showSetup(visible) {
  show("#setup", visible);
  if (!visible) return;
  for (const id of ["#live", "#charts", "#fields", "#web", "#timeline-panel", "#end"]) show(id, false);
}

function end(v) {
  show("#end", Boolean(v.end));
  if (!v.end) return;
  const { breakdown, reflection } = v.end;
  $("#total").textContent = `total ${breakdown.total.toFixed(3)}`;
  $("#breakdown tbody").replaceChildren(...Object.entries(breakdown.components).map(([name, c]) => {
    const row = document.createElement("tr");
    for (const [text, cls] of [[name, ""], [c.weight.toFixed(3), "num"], [c.value.toFixed(3), "num"],
                               [c.points.toFixed(3), "num"]]) {
      const td = row.insertCell();
      td.textContent = text;
      if (cls) td.className = cls;
    }
    return row;
  }));
  const phrasing = v.phrasing;
  const label = $("#reflection-label");
  const phrased = $("#phrased");
  if (phrasing?.source === "model") {
    label.dataset.source = "model";
    label.textContent = `phrased by the model ${phrasing.model} from the engine's facts`;
    phrased.hidden = false;
    phrased.textContent = phrasing.text;
  } else {
    label.dataset.source = "engine";
    label.textContent = phrasing?.failure
      ? `the engine's facts (the model could not phrase them: ${phrasing.failure.code})`
      : "the engine's facts";
    phrased.hidden = true;
  }
  const facts = [];
  for (const p of reflection.peaks) facts.push(`${p.species} peaked at ${p.biomass.toFixed(1)} in generation ${p.generation}`);
  for (const c of reflection.crashes) facts.push(`crash at generation ${c.generation}: ${c.from.toFixed(1)} → ${c.to.toFixed(1)}`);
  for (const e of reflection.extinctions) facts.push(`${e.species} went extinct at generation ${e.generation}`);
  for (const d of reflection.decisions) {
    const swing = d.swing === undefined ? "" : `, biomass swing ${(100 * d.swing).toFixed(1)}% over 6 generations`;
    facts.push(`decision ${d.decision} (${d.via}, accepted at ${d.accepted}): ` +
      `${d.outcomes.map((o) => `${o.outcome} at ${o.generation}`).join(", ") || "never fired"}${swing}` +
      `${d.mattered ? " — it mattered" : ""}`);
  }
  facts.push(`alive at the end: ${reflection.alive.join(", ") || "none"}`);
  $("#facts").replaceChildren(...facts.map((text) => {
    const li = document.createElement("li");
    li.textContent = text;
    return li;
  }));
}

// ---- the owner's controls -------------------------------------------------------------

function controls() {
  const owner = isOwner() && !page.view.end;
  show("#controls", owner);
  $("#patch-form").hidden = !owner;
  if (!owner) return;
  $("#play").disabled = page.view.playing;
  $("#pause").disabled = !page.view.playing;
  const from = $("#change-generation"); // a change may not precede the run's generation
  from.min = String(page.view.generation);
  if (document.activeElement !== from && !(Number(from.value) >= page.view.generation)) {
    from.value = String(page.view.generation); // what was typed above it stays
  }
}

async function control(action) {
  setError("patch", "");
  const speed = Number($("#speed").value);
  try {
    await page.client.request("ecosystem.control", page.topic,
                              action === "step" ? { action } : { action, speed });
  } catch (err) {
    setError("patch", said(err));
  }
}

async function sendPatch(event) {
  event.preventDefault();
  setError("patch", "");
  try {
    const r = await page.client.request("ecosystem.patch", page.topic, {
      patch: patchValue(), expected_graph_version: page.view.graph.version });
    setError("patch", `decision ${r.decision} accepted: it lands at generation ${r.from_generation}`);
  } catch (err) {
    setError("patch", said(err));
  }
}

async function sendSchedule() {
  setError("patch", "");
  const change = { generation: Number($("#change-generation").value),
                   activation: $("#change-activation").value,
                   duration: $("#change-duration").value,
                   transition: $("#change-transition").value, patch: patchValue() };
  try {
    const r = await page.client.request("ecosystem.schedule", page.topic, { change });
    setError("patch", `decision ${r.decision} scheduled from generation ${r.from_generation}`);
  } catch (err) {
    setError("patch", said(err));
  }
}

// ---- the replay scrubber and the export -----------------------------------------------

async function scrub(generation) {
  const g = Math.max(0, Math.min(Number(generation), page.view.generation));
  page.mode = "history";
  page.shown = g;
  $("#to-live").disabled = false;
  $("#scrubber").value = String(g);
  $("#scrub-value").textContent = String(g);
  let h;
  try {
    h = await page.client.request("ecosystem.history", page.topic, { generation: g });
  } catch (err) {
    if (page.shown !== g) return;
    line.note(`generation ${g} not shown: ${said(err)}`);
    live();
    return;
  }
  if (page.mode !== "history" || page.shown !== g) return; // moved on meanwhile
  line.note(null);
  figures(h.frames[0]);
  heatmaps(h.density);
  page.graph = null;
  foodweb(h.graph);
  $("#frame-figures").dataset.mode = "history";
  redraw();
}

function live() {
  page.mode = "live";
  page.shown = null;
  $("#to-live").disabled = true;
  $("#scrub-value").textContent = "—";
  $("#frame-figures").dataset.mode = "live";
  page.graph = null;
  redraw();
}

async function exportRun() {
  const r = await page.client.request("ecosystem.export", page.topic, {});
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([r.lines], { type: "application/x-ndjson" }));
  link.download = `${page.topic.replace(/^ecosystem:/, "")}.jsonl`;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}

// ---- start ------------------------------------------------------------------------------

function wire() {
  for (const name of FIELDS) $(`#${name}`).addEventListener("input", counters);
  $("#setup-form").addEventListener("submit", (e) => create(e).catch((err) => setError("form", String(err))));
  $("#play").addEventListener("click", () => control("play"));
  $("#pause").addEventListener("click", () => control("pause"));
  $("#step").addEventListener("click", () => control("step"));
  $("#speed").addEventListener("input", () => { $("#speed-value").textContent = $("#speed").value; });
  $("#speed").addEventListener("change", () => { if (page.view?.playing) control("play"); });
  $("#patch-kind").addEventListener("change", () => patchTargets(page));
  $("#patch-target").addEventListener("change", () => patchValues(page));
  $("#patch-form").addEventListener("submit", sendPatch);
  $("#schedule").addEventListener("click", sendSchedule);
  $("#scrubber").addEventListener("input", (e) => scrub(e.target.value));
  $("#to-live").addEventListener("click", live);
  $("#export").addEventListener("click", () => exportRun().catch((err) => setStatus("error", err.message)));
  window.addEventListener("resize", redraw);
}

/** The connection's state in the status line (the shared one: a refusal of the run says so
 * there), which no repaint replaces until the run is followed again. */
function onStatus(state, info) {
  page.away = state !== "open";
  if (!page.away) line.note(null); // a scrub refused while the run was away
  line.onStatus(state, info);
  if (!page.away) redraw(); // the run's word as it is now
}

async function main() {
  wire();
  counters();
  page.client = await Client.connect(socketUrl(), {
    token, client: "ecosystem-page/1.0",
    rememberKey: true, // a reload is the same anonymous caller: the owner of its runs
    onStatus,
  });
  setStatus("open", `connected as ${page.client.role}`);
  const id = params.get("id");
  if (id) watch(id.startsWith("ecosystem:") ? id : `ecosystem:${id}`);
  else showSetup(true);
}

// For tests and the curious: the page's model and its two actions.
window.ecosystemPage = {
  get generation() { return page.view?.generation ?? -1; },
  get mode() { return page.mode; },
  get shown() { return page.shown; },
  scrub: (g) => scrub(g),
  live,
};

main().catch((err) => setStatus("error", String(err.message ?? err)));
