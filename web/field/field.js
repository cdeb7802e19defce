// The field page: a spectator on `field:<game>` (default: today's daily field, UTC).
// Live pushes are folded into the live model and only the map tiles they dirtied are
// redrawn; each event also becomes feed lines (intents verbatim). The history slider
// shows `field.history` views (growths marked on it), the play button replays from the
// slider's revision, "Live" returns. While the field is generated a progress bar shows
// how far it got; once a growth finds no room the page says the game is over.

import { Client, RequestError } from "/js/client.js";
import { bdi, oneAtATime, statusLine } from "/js/page.js";
import { FieldModel, Renderer } from "/field/render.js";
import { Feed, linesOf } from "/field/feed.js";
import { wireInput } from "/field/input.js";

const params = new URLSearchParams(location.search);
// `?id=field:NAME` (the lobby's links) or `?game=NAME`; default: today's daily field.
const requested = params.get("id") ?? params.get("game");
const today = new Date().toISOString().slice(0, 10);
const game = requested ? requested.replace(/^field:/, "") : `day-${today}`;
const topic = `field:${game}`;
const $ = (sel) => document.querySelector(sel);
const canvas = $("#board");
const slider = $("#history");
const liveButton = $("#live");
const playButton = $("#play");
const renderer = new Renderer(canvas);
const feed = new Feed($("#feed"));
const REPLAY_MS = 250; // between replay steps
const REPLAY_STEPS = 120; // a replay to the end takes at most this many steps
const FEED_BACK = 200; // revisions of recent events a newly opened page shows in its feed
let client = null;
let live = null; // the live FieldModel
let shownModel = null; // the model on the canvas (live, or a history view)
let mode = "live"; // or "history"
let replaying = 0; // the replay timer, 0 when not replaying
const queue = []; // pushes waiting to be folded, in order
let pumping = false;
let progressSeen = 0; // the largest generation share shown (for tests)
const { say: setStatus, onStatus, note } = statusLine(); // the field's word, or the connection's

$("#game").textContent = game;
document.title = `Petri Dish Games — ${game}`;

/** Set an element's text or HTML only when it changes (an unchanged one is not repainted). */
const written = new Map(); // element -> the value put last
function put(el, key, value) {
  if (written.get(el) === value) return;
  written.set(el, value);
  el[key] = value;
}

function shown(model) {
  shownModel = model;
  canvas.dataset.revision = String(model.revision);
  canvas.dataset.mode = mode;
  $("#rev").textContent = String(model.revision);
  if (mode === "history") setStatus("history", `history · revision ${model.revision}`);
}

async function viewAt(revision) {
  return (await client.request("field.history", topic, { revision })).view;
}

function generating(view) {
  $("#generating").hidden = false;
  const p = view.progress;
  if (p) {
    progressSeen = Math.max(progressSeen, p.share);
    $("#progress").value = p.share;
    $("#progress-text").textContent = `${p.stage} ${p.done} of ${p.planned}`;
  }
  setStatus("connecting", `generating${p ? ` ${Math.round(p.share * 100)}%` : "…"}`);
}

// The refusals of an id that names no field: none by that name, or no field's id at all.
const NO_FIELD = ["unknown_actor", "bad_request"];

/** Say that the field does not exist (`why`), with the lobby's link. */
function missing(why) {
  $("#missing-why").textContent = why;
  $("#missing").hidden = false;
  setStatus("error", "no such field");
}

/** "No such field" for a refusal in NO_FIELD (true), with the server's sentence. */
function noField(err) {
  if (!NO_FIELD.includes(err.code)) return false;
  missing(err.message.slice(err.code.length + 2)); // the sentence, without its code
  return true;
}

async function fold(push) {
  if (push.kind === "snapshot") {
    if (push.data.status !== "ready") {
      generating(push.data);
      return;
    }
    $("#generating").hidden = true;
    live = new FieldModel(push.data);
  } else if (push.kind === "events") {
    for (const ev of push.data) {
      if (live && ev.rev <= live.revision) continue; // already in the snapshot
      if (!live || !live.apply(ev)) {
        $("#generating").hidden = true;
        live = new FieldModel(await viewAt(ev.rev)); // manifest or grow: a fresh view
        if (mode === "live") renderer.setModel(live, false);
      } else if (mode === "live") {
        renderer.invalidate(ev.dirty);
      }
      feed.add(linesOf(ev, live));
    }
  }
  if (!live) return;
  if (mode === "live" && renderer.model !== live) renderer.setModel(live, true);
  renderer.schedule(report);
}

// The text beside the canvas follows the live model in the renderer's paint frames,
// however many pushes arrived since: every change of the page costs a repaint.
function report() {
  if (mode === "live") {
    if (live.ended) setStatus("ended", `game over · revision ${live.revision}`);
    else setStatus("open", `live · revision ${live.revision}`);
  }
  $("#over").hidden = !live.ended;
  figures();
  slider.max = String(live.revision);
  markers();
  if (mode === "live") {
    slider.value = slider.max;
    shown(live);
  }
}

/** A mark on the slider at each growth's revision. */
function markers() {
  const max = live.revision;
  const html = live.grown.map((rev) => {
    const at = max > 1 ? ((rev - 1) / (max - 1)) * 100 : 0;
    return `<span class="grow-marker" data-rev="${rev}" style="left:${at.toFixed(2)}%" ` +
      `title="growth at revision ${rev}">▲</span>`;
  }).join("");
  put($("#markers"), "innerHTML", html);
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
  const dead = live.agents.filter((a) => a.health?.state === "dead").length;
  put($("#totals"), "textContent",
    `${live.agents.length} agents · ${dead} dead · ${t.solved ?? 0} solved of ` +
    `${live.tiles.length} tiles · reward ${t.reward ?? 0}` +
    (live.grown.length ? ` · grown ${live.grown.length} times` : ""));
  const rows = live.agents.map((a, i) => {
    const state = a.health?.state ?? "healthy";
    const rate = ((a.health?.rate ?? 0) * 100).toFixed(1);
    return `<tr data-agent="${a.id}"><td><span class="swatch" style="background:hsl(${live.hues[i]},55%,60%)"></span></td>` +
      `<td>${bdi(a.name)} <small>${a.id}${a.model ? ` · ${bdi(a.model)}` : ""}</small></td>` +
      `<td class="num">${a.reward}</td><td class="health-${state}">${state} ${rate}%</td></tr>`;
  });
  put($("#agents tbody"), "innerHTML", rows.join(""));
}

function boardRows(rows, last) {
  return rows.map((r) =>
    `<tr><td>${bdi(r.key)}</td><td class="num">${r.reward}</td>` +
    `<td class="num">${last(r)}</td><td class="num">${r.dead}</td></tr>`).join("");
}

const wrong = (r) => `${(r.wrong_rate * 100).toFixed(1)}%`;
let alltimeAt = -Infinity;

// Health and totals are figures of the fold, not of the events: read them now and then,
// one reading at a time (ticks while one waits, as through an outage, add one reading).
const refresh = oneAtATime(async () => {
  if (!live) return;
  const obs = await client.request("field.observe", topic, { rect: [0, 0, 1, 1] });
  obs.agents.forEach((a, i) => {
    if (live.agents[i]) live.agents[i].health = a.health;
  });
  live.totals = obs.totals;
  figures();
  const board = await client.request("field.leaderboard", topic, {});
  put($("#board-users tbody"), "innerHTML", boardRows(board.users, wrong));
  put($("#board-models tbody"), "innerHTML", boardRows(board.models, wrong));
  if (performance.now() - alltimeAt > 10000) {
    alltimeAt = performance.now();
    const all = await client.request("field.leaderboard", topic, { merged: true });
    put($("#alltime-users tbody"), "innerHTML", boardRows(all.users, (r) => r.days));
    days(all.days);
  }
});

/** Read the figures; a failure is noted beside the status until a reading succeeds. */
function readFigures() {
  refresh().then(() => note(null), (err) => note(`figures not refreshed: ${err.message}`));
}

/** The day picker: every day on the all-time board, and today; picking one opens it. */
function days(list) {
  const picker = $("#day");
  const all = [...new Set([...list, today])].sort().reverse();
  const current = game.startsWith("day-") ? game.slice(4) : "";
  const html = (current ? "" : '<option value="">—</option>') + all.map((d) =>
    `<option value="${d}"${d === current ? " selected" : ""}>${d}</option>`).join("");
  put(picker, "innerHTML", html);
}

$("#day").addEventListener("change", (e) => {
  if (e.target.value) location.href = `/field/?id=field:day-${e.target.value}`;
});

/** Show revision `rev`: the live model at the end, else its history view. */
async function showAt(rev) {
  mode = live && rev >= live.revision ? "live" : "history";
  liveButton.disabled = mode === "live";
  if (mode === "live") {
    renderer.setModel(live, false);
    shown(live);
    report();
    return;
  }
  const model = new FieldModel(await viewAt(rev));
  if (mode !== "history") return;
  renderer.setModel(model, false);
  shown(model);
}

let scrubbing = null;
slider.addEventListener("input", () => {
  stopReplay();
  const rev = Number(slider.value);
  mode = live && rev >= live.revision ? "live" : "history";
  liveButton.disabled = mode === "live";
  if (mode === "history") setStatus("history", `history · revision ${rev}`);
  clearTimeout(scrubbing);
  scrubbing = setTimeout(() => showAt(rev), 60);
});

liveButton.addEventListener("click", () => {
  stopReplay();
  slider.value = slider.max;
  showAt(live.revision);
});

function stopReplay() {
  clearTimeout(replaying);
  replaying = 0;
  playButton.textContent = "▶ Replay";
}

/** Replay from the slider's revision (the start when it is live) to the live one. */
async function replayStep() {
  if (!live) return;
  const end = live.revision;
  const step = Math.max(1, Math.ceil(end / REPLAY_STEPS));
  const rev = Math.min(end, Number(slider.value) + step);
  slider.value = String(rev);
  await showAt(rev);
  if (replaying && rev < end) replaying = setTimeout(replayStep, REPLAY_MS);
  else stopReplay();
}

playButton.addEventListener("click", () => {
  if (replaying) {
    stopReplay();
    return;
  }
  if (!live) return;
  if (Number(slider.value) >= live.revision) slider.value = "1";
  playButton.textContent = "⏸ Pause";
  replaying = setTimeout(replayStep, 0);
});

wireInput($("#board-frame"), canvas, renderer);

async function main() {
  if (game.includes(":")) return missing(`${requested} is not a field`); // puzzle:x, say
  client = await Client.connect(undefined, { client: "field-page/1.1", onStatus });
  // Subscribing from a little before the current revision brings the recent events too
  // (the feed shows them), or a snapshot when they are older than the server keeps.
  let since;
  try {
    const glance = await client.request("field.observe", topic, { rect: [0, 0, 1, 1] });
    since = Math.max(0, glance.revision - FEED_BACK);
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    if (noField(err)) return; // else (generating) a snapshot says
  }
  const sub = client.subscribe(topic, (push) => {
    queue.push(push);
    pump();
  }, { since: since ?? null });
  try {
    await sub.ready;
  } catch (err) {
    // A refusal ends the subscription; a drop or a timeout leaves it to the reconnect.
    if (err instanceof RequestError) return noField(err) || setStatus("error", err.message);
  }
  setInterval(readFigures, 2000);
}

// For tests and curious people: the page's state from the console.
window.fieldPage = {
  get revision() { return renderer.model ? renderer.model.revision : 0; },
  get mode() { return mode; },
  get replaying() { return replaying !== 0; },
  get outlined() { return Boolean(renderer.outlined); },
  get progressSeen() { return progressSeen; },
  pixelAt: (x, y) => renderer.pixelAt(x, y),
  reachedOf: (tile) => (shownModel ? shownModel.reached[tile] : -1),
  // the view (canvas pixels per cell, the cell at the canvas origin); `settled` once a
  // pan or zoom has been redrawn at it and what changed offscreen is on screen
  get view() {
    const v = renderer.drawn;
    return { zoom: renderer.zoom, ox: renderer.ox, oy: renderer.oy,
             settled: v.zoom === renderer.zoom && v.ox === renderer.ox && v.oy === renderer.oy &&
                      !canvas.style.transform && !renderer.stale };
  },
  scrub(rev) {
    slider.value = String(rev);
    slider.dispatchEvent(new Event("input"));
  },
};

main().catch((err) => setStatus("closed", `error: ${err.message}`));
