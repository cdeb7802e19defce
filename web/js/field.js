// The field page: a spectator on `field:<game>` (default: today's daily field, UTC).
// Live pushes are folded into the live model and only the map tiles they dirtied are
// redrawn; the history slider shows `field.history` views; "Live" returns.

import { Client, RequestError } from "/js/client.js";
import { FieldModel, Renderer } from "/js/field-render.js";

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
        renderer.drawMapTiles(ev.dirty);
      }
    }
  }
  if (!live) return;
  setStatus("open", `live · revision ${live.revision}`);
  figures();
  slider.max = String(live.revision);
  if (mode === "live") {
    if (renderer.model !== live) renderer.setModel(live, true);
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
  $("#totals").textContent =
    `${live.agents.length} agents · ${t.solved ?? 0} solved of ${live.tiles.length} tiles · reward ${t.reward ?? 0}`;
  const rows = live.agents.map((a, i) => {
    const state = a.health?.state ?? "healthy";
    const rate = ((a.health?.rate ?? 0) * 100).toFixed(1);
    return `<tr data-agent="${a.id}"><td><span class="swatch" style="background:hsl(${live.hues[i]},55%,60%)"></span></td>` +
      `<td>${escape(a.name)} <small>${a.id}</small></td><td class="num">${a.reward}</td>` +
      `<td class="health-${state}">${state} ${rate}%</td></tr>`;
  });
  $("#agents tbody").innerHTML = rows.join("");
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

canvas.addEventListener("wheel", (e) => {
  e.preventDefault();
  const r = canvas.getBoundingClientRect();
  const k = canvas.width / r.width;
  renderer.zoomAt(e.deltaY < 0 ? 1.2 : 1 / 1.2, (e.clientX - r.left) * k, (e.clientY - r.top) * k);
}, { passive: false });

let drag = null;
canvas.addEventListener("pointerdown", (e) => {
  drag = { x: e.clientX, y: e.clientY };
  canvas.classList.add("dragging");
  canvas.setPointerCapture(e.pointerId);
});
canvas.addEventListener("pointermove", (e) => {
  if (!drag) return;
  const k = canvas.width / canvas.getBoundingClientRect().width;
  renderer.panBy((e.clientX - drag.x) * k, (e.clientY - drag.y) * k);
  drag = { x: e.clientX, y: e.clientY };
});
canvas.addEventListener("pointerup", () => {
  drag = null;
  canvas.classList.remove("dragging");
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
  scrub(rev) {
    slider.value = String(rev);
    slider.dispatchEvent(new Event("input"));
  },
};

main().catch((err) => setStatus("closed", `error: ${err.message}`));
