// The field page: a spectator on `field:<game>` (default: today's daily field, UTC).
// Live pushes are folded into the live model and only the map tiles they dirtied are
// redrawn; the history slider shows `field.history` views; "Live" returns.

import { Client, RequestError } from "/js/client.js";
import { FieldModel, Renderer } from "/field/render.js";

const params = new URLSearchParams(location.search);
// `?id=field:NAME` (the lobby's links) or `?game=NAME`; default: today's daily field.
const requested = params.get("id") ?? params.get("game");
const game = requested ? requested.replace(/^field:/, "") : `day-${new Date().toISOString().slice(0, 10)}`;
const topic = `field:${game}`;
const $ = (sel) => document.querySelector(sel);
const canvas = $("#board");
const slider = $("#history");
const liveButton = $("#live");
const renderer = new Renderer(canvas);
let client = null;
let live = null; // the live FieldModel
let mode = "live"; // or "history"
const queue = []; // pushes waiting to be folded, in order
let pumping = false;

$("#game").textContent = game;
document.title = `Petri Dish Games — ${game}`;

function setStatus(state, text) {
  const el = $("#status");
  el.dataset.state = state;
  el.textContent = text;
}

/** Set an element's text or HTML only when it changes (an unchanged one is not repainted). */
const written = new Map(); // element -> the value put last
function put(el, key, value) {
  if (written.get(el) === value) return;
  written.set(el, value);
  el[key] = value;
}

function shown(model) {
  canvas.dataset.revision = String(model.revision);
  canvas.dataset.mode = mode;
  $("#rev").textContent = String(model.revision);
}

async function viewAt(revision) {
  return (await client.request("field.history", topic, { revision })).view;
}

async function fold(push) {
  if (push.kind === "snapshot") {
    if (push.data.status !== "ready") {
      setStatus("connecting", push.data.status === "generating" ? "generating…" : "no such field");
      return;
    }
    live = new FieldModel(push.data);
  } else if (push.kind === "events") {
    for (const ev of push.data) {
      if (live && ev.rev <= live.revision) continue; // already in the snapshot
      if (!live || !live.apply(ev)) {
        live = new FieldModel(await viewAt(ev.rev)); // manifest or grow: a fresh view
        if (mode === "live") renderer.setModel(live, false);
      } else if (mode === "live") {
        renderer.invalidate(ev.dirty);
      }
    }
  }
  if (!live) return;
  if (mode === "live" && renderer.model !== live) renderer.setModel(live, true);
  renderer.schedule(report);
}

// The text beside the canvas follows the live model in the renderer's paint frames,
// however many pushes arrived since: every change of the page costs a repaint.
function report() {
  setStatus("open", `live · revision ${live.revision}`);
  figures();
  slider.max = String(live.revision);
  if (mode === "live") {
    slider.value = slider.max;
    shown(live);
  }
}

async function pump() {
  if (pumping) return;
  pumping = true;
  try {
    while (queue.length) await fold(queue.shift());
  } finally {
    pumping = false;
  }
}

function figures() {
  if (!live) return;
  const t = live.totals;
  put($("#totals"), "textContent",
    `${live.agents.length} agents · ${t.solved ?? 0} solved of ${live.tiles.length} tiles · reward ${t.reward ?? 0}`);
  const rows = live.agents.map((a, i) => {
    const state = a.health?.state ?? "healthy";
    const rate = ((a.health?.rate ?? 0) * 100).toFixed(1);
    return `<tr data-agent="${a.id}"><td><span class="swatch" style="background:hsl(${live.hues[i]},55%,60%)"></span></td>` +
      `<td>${escape(a.name)} <small>${a.id}</small></td><td class="num">${a.reward}</td>` +
      `<td class="health-${state}">${state} ${rate}%</td></tr>`;
  });
  put($("#agents tbody"), "innerHTML", rows.join(""));
}

function escape(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

async function refresh() {
  // Health and totals are figures of the fold, not of the events: read them now and then.
  if (!live) return;
  try {
    const obs = await client.request("field.observe", topic, { rect: [0, 0, 1, 1] });
    obs.agents.forEach((a, i) => {
      if (live.agents[i]) live.agents[i].health = a.health;
    });
    live.totals = obs.totals;
    figures();
    const board = await client.request("field.leaderboard", topic, {});
    $("#board-users tbody").innerHTML = board.users.map((r) =>
      `<tr><td>${escape(r.key)}</td><td class="num">${r.reward}</td>` +
      `<td class="num">${(r.wrong_rate * 100).toFixed(1)}%</td></tr>`).join("");
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
  }
}

let scrubbing = null;
slider.addEventListener("input", () => {
  const rev = Number(slider.value);
  mode = live && rev >= live.revision ? "live" : "history";
  liveButton.disabled = mode === "live";
  clearTimeout(scrubbing);
  scrubbing = setTimeout(async () => {
    if (mode === "live") {
      renderer.setModel(live, false);
      shown(live);
      return;
    }
    const model = new FieldModel(await viewAt(rev));
    if (mode !== "history") return;
    renderer.setModel(model, false);
    shown(model);
  }, 60);
});

liveButton.addEventListener("click", () => {
  mode = "live";
  liveButton.disabled = true;
  slider.value = slider.max;
  renderer.setModel(live, false);
  shown(live);
});

// Input goes to the frame: the canvas inside it moves (CSS) while a gesture is going on.
const frame = $("#board-frame");
const toCanvas = () => canvas.width / frame.getBoundingClientRect().width; // px per CSS px

frame.addEventListener("wheel", (e) => {
  e.preventDefault();
  const r = frame.getBoundingClientRect();
  const k = toCanvas();
  renderer.zoomAt(e.deltaY < 0 ? 1.2 : 1 / 1.2, (e.clientX - r.left) * k, (e.clientY - r.top) * k);
}, { passive: false });

let drag = null;
frame.addEventListener("pointerdown", (e) => {
  drag = { x: e.clientX, y: e.clientY };
  frame.classList.add("dragging");
  frame.setPointerCapture(e.pointerId);
});
frame.addEventListener("pointermove", (e) => {
  if (!drag) return;
  const k = toCanvas();
  renderer.panBy((e.clientX - drag.x) * k, (e.clientY - drag.y) * k);
  drag = { x: e.clientX, y: e.clientY };
});
frame.addEventListener("pointerup", () => {
  drag = null;
  frame.classList.remove("dragging");
});

async function main() {
  client = await Client.connect(undefined, {
    client: "field-page/1.0",
    onStatus: (s) => { if (s !== "open") setStatus("connecting", s); },
  });
  client.subscribe(topic, (push) => {
    queue.push(push);
    pump();
  });
  setInterval(refresh, 2000);
}

// For tests and curious people: the page's state from the console.
window.fieldPage = {
  get revision() { return renderer.model ? renderer.model.revision : 0; },
  get mode() { return mode; },
  pixelAt: (x, y) => renderer.pixelAt(x, y),
  // the view (canvas pixels per cell, the cell at the canvas origin); `settled` once a
  // pan or zoom has been redrawn at it
  get view() {
    const v = renderer.drawn;
    return { zoom: renderer.zoom, ox: renderer.ox, oy: renderer.oy,
             settled: v.zoom === renderer.zoom && v.ox === renderer.ox && v.oy === renderer.oy &&
                      !canvas.style.transform };
  },
  scrub(rev) {
    slider.value = String(rev);
    slider.dispatchEvent(new Event("input"));
  },
};

main().catch((err) => setStatus("closed", `error: ${err.message}`));
