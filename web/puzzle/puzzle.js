// The player page of a puzzle room, `/puzzle/?id=puzzle:NAME`.
//
// Without `id` it creates a room and plays it: `?pack=starter&level=ID`, `?link=pd1...` (a
// share link) or `?installed=PACK` (a pack of /puzzle/editor.html), `&profile=keke`. The
// room's player plays (keys, swipes, buttons); anyone else watches it live, read-only (so does
// the player with `&watch`; a token comes from `?token=`, kept for the tab in sessionStorage,
// or localStorage). Every turn comes back in the move's reply; a watcher refetches the view
// when a push says the room moved on. The slider replays the level's moves (`puzzle.history`).

import { Client, RequestError } from "/js/client.js";
import { escapeHtml, statusLine } from "/js/page.js";
import { boardRoom, drawBoard, fitCell, pixelAt, refitOnResize } from "/puzzle/render.js";

const params = new URLSearchParams(location.search);
const $ = (sel) => document.querySelector(sel);
const canvas = $("#board");
const slider = $("#history");
const KEYS = {
  ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right",
  w: "up", s: "down", a: "left", d: "right", W: "up", S: "down", A: "left", D: "right", " ": "wait",
};
const NAMES = { u: "up", d: "down", l: "left", r: "right", s: "wait" };
const TOKEN_KEY = "petridish.puzzle_token"; // a `?token=` this tab was given
const LEADERBOARD_TRIES = 20; // half a second apart, for a win the board is still replaying

let client = null;
const { say: setStatus, onStatus: showConnection } = statusLine(); // the page's or the connection's
let roomId = params.get("id");
let view = null; // the live room view
let shown = null; // the board on the canvas (live, or a moment of the history)
let cell = 40;
let mode = "live"; // or "history"
let canPlay = false;
const inputs = []; // actions waiting for the one in flight
let busy = false;
let refreshing = false;
let stale = false;

function say(text) {
  $("#message").textContent = text;
}

/** The connection's state in the status line; once it is open again, a note on what happened
 * before the drop ("blocked", a hint) is stale: the room may have moved on meanwhile. */
function onStatus(state, info) {
  if (state === "open") say("");
  showConnection(state, info);
}

// ---- drawing ---------------------------------------------------------------------------

function layout(board) {
  const width = boardRoom(frame);
  const height = Math.max(160, window.innerHeight * (window.innerWidth < 700 ? 0.5 : 0.66));
  cell = fitCell(board.width, board.height, width, height);
}

function draw(board, revision) {
  shown = board;
  layout(board);
  drawBoard(canvas, board, cell);
  canvas.dataset.revision = String(revision);
  canvas.dataset.mode = mode;
}

function render() {
  if (!view) return;
  document.body.classList.remove("no-room");
  document.body.classList.toggle("watching", !canPlay);
  $("#room").textContent = roomId.replace(/^puzzle:/, "");
  $("#title").textContent = `${view.level + 1}/${view.levels} · ${view.title || view.level_id}`;
  $("#level-hint").textContent = view.hint;
  $("#moves").textContent = `${view.moves.length} move${view.moves.length === 1 ? "" : "s"}`;
  $("#mode").textContent = canPlay ? "" : `watching ${view.player}'s room`;
  $("#pack").textContent = view.pack;
  $("#rules").innerHTML = view.board.rules.map((r) => `<li>${escapeHtml(r)}</li>`).join("");
  const solved = new Set(view.solved);
  $("#levels").innerHTML = view.pack_levels.map((lv, i) =>
    `<li data-index="${i}" class="${i === view.level ? "current" : ""} ${solved.has(lv.id) ? "solved" : ""}">` +
    `${escapeHtml(lv.title || lv.id)}</li>`).join("");
  slider.max = String(view.moves.length);
  if (mode === "live") {
    slider.value = slider.max;
    $("#at").textContent = slider.max;
    draw(view.board, view.revision);
  }
  const banner = $("#banner");
  const last = view.level + 1 >= view.levels;
  banner.hidden = mode !== "live" || !(view.won || view.lost);
  banner.dataset.kind = view.won ? "win" : "lose";
  $("#banner-text").textContent = view.won
    ? `Solved in ${view.moves.length} moves!${last ? " That was the last level." : ""}`
    : "Nothing is YOU any more.";
  $("#banner-next").hidden = !(view.won && canPlay && !last);
  $("#banner-undo").hidden = !(view.lost && canPlay);
  $("#next").hidden = !(view.won && canPlay && !last);
}

// ---- the room --------------------------------------------------------------------------

async function refresh() {
  // Coalesced: one view request at a time, another after it if a push came meanwhile.
  if (refreshing) {
    stale = true;
    return;
  }
  refreshing = true;
  try {
    do {
      stale = false;
      const fresh = await client.request("puzzle.view", roomId, {});
      const levelChanged = !view || fresh.level !== view.level;
      if (!view || fresh.revision >= view.revision) view = fresh;
      render();
      if (levelChanged || view.won) leaderboard();
    } while (stale);
  } finally {
    refreshing = false;
  }
}

async function leaderboard(tries = 0) {
  try {
    const board = await client.request("puzzle.leaderboard", roomId, {});
    $("#leaders tbody").innerHTML = board.fewest.slice(0, 10).map((r) =>
      `<tr><td>${escapeHtml(r.user)}</td><td class="num">${r.moves}</td></tr>`).join("") ||
      "<tr><td>nobody yet</td></tr>";
    // The board counts a win once it has replayed it (in a worker process, a moment after
    // the winning move): until the player's row is there, look again.
    const mine = (r) => r.user === view.player && r.moves <= view.moves.length;
    if (view.won && !board.fewest.some(mine) && tries < LEADERBOARD_TRIES) {
      setTimeout(() => leaderboard(tries + 1), 500);
    }
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
  }
}

async function write(op, args = {}) {
  // One write at a time; each at the revision of the view it was meant for.
  try {
    const reply = await client.request(op, roomId, { ...args, expected_revision: view.revision });
    const before = view;
    view = reply.room;
    if (mode === "history") backToLive();
    render();
    if (before.level !== view.level || (view.won && !before.won)) leaderboard();
    say(op === "puzzle.undo" ? "undone" : op === "puzzle.reset" ? "back to the start" : "");
    return reply;
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    if (err.code === "stale_revision") await refresh();
    else say(err.code === "no_change" ? "blocked" : err.message);
    return null;
  }
}

function act(action) {
  if (!canPlay || !view) return;
  inputs.push(action);
  if (!busy) drain();
}

async function drain() {
  busy = true;
  try {
    while (inputs.length) {
      const action = inputs.shift();
      if (action === "undo") await write("puzzle.undo");
      else if (action === "reset") await write("puzzle.reset");
      else if (action === "next") await write("puzzle.next");
      else if (action.startsWith("level:")) await write("puzzle.select", { level: action.slice(6) });
      else await write("puzzle.move", { dir: action });
    }
  } finally {
    busy = false;
  }
}

async function hint() {
  if (!canPlay) return;
  say("asking the solver…");
  try {
    const h = await client.request("puzzle.hint", roomId, { budget_ms: 4000 });
    if (h.status === "solved") {
      const steps = [...h.moves].map((m) => NAMES[m]);
      say(`Hint: ${h.next} — ${h.moves.length} moves win from here (${steps.slice(0, 8).join(", ")}${steps.length > 8 ? ", …" : ""})`);
    } else if (h.status === "unsolvable") {
      say("Nothing reachable from here wins: undo or reset.");
    } else {
      say("The solver ran out of time; try again or reset.");
    }
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    say(err.message);
  }
}

async function share() {
  const links = await client.request("puzzle.link", roomId, {});
  const url = `${location.origin}/puzzle/?link=${links.level}`;
  const box = $("#share-link");
  box.hidden = false;
  box.value = url;
  box.select();
  try {
    await navigator.clipboard.writeText(url);
    say("The link to this level is copied.");
  } catch {
    say("Copy the link below to share this level.");
  }
}

// ---- history: replay the level's moves ------------------------------------------------

let scrubbing = null;
slider.addEventListener("input", () => {
  if (!view) return;
  const move = Number(slider.value);
  $("#at").textContent = String(move);
  if (move >= view.moves.length) {
    backToLive();
    return;
  }
  mode = "history";
  $("#live").disabled = false;
  clearTimeout(scrubbing);
  scrubbing = setTimeout(async () => {
    const past = await client.request("puzzle.history", roomId, { move });
    if (mode === "history") {
      draw(past.board, past.revision);
      canvas.dataset.move = String(move);
      $("#banner").hidden = true;
    }
  }, 40);
});

function backToLive() {
  mode = "live";
  $("#live").disabled = true;
  delete canvas.dataset.move;
  render();
}

$("#live").addEventListener("click", backToLive);

// ---- input -----------------------------------------------------------------------------

document.addEventListener("keydown", (e) => {
  if (e.target instanceof HTMLInputElement || e.ctrlKey || e.metaKey || e.altKey) return;
  const dir = KEYS[e.key];
  const key = e.key.toLowerCase();
  if (dir) act(dir);
  else if (key === "z") act("undo");
  else if (key === "r") act("reset");
  else if (key === "n" && view?.won) act("next");
  else if (key === "h") hint();
  else return;
  e.preventDefault();
});

// The pad acts on pointerdown: at once, and even for a tap that comes right after a swipe
// (the browser eats the click of a tap that stops a fling). A keyboard's click still acts.
for (const button of document.querySelectorAll("#pad button")) {
  button.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    act(button.dataset.dir);
  });
  button.addEventListener("click", (e) => { if (e.detail === 0) act(button.dataset.dir); });
}
$("#undo").addEventListener("click", () => act("undo"));
$("#reset").addEventListener("click", () => act("reset"));
$("#next").addEventListener("click", () => act("next"));
$("#banner-next").addEventListener("click", () => act("next"));
$("#banner-undo").addEventListener("click", () => act("undo"));
$("#hint").addEventListener("click", hint);
$("#share").addEventListener("click", () => share().catch((err) => say(err.message)));
$("#levels").addEventListener("click", (e) => {
  // The id from the view, not from the markup: HTML makes a carriage return in one a newline.
  const li = e.target.closest("li[data-index]");
  if (li && canPlay) act(`level:${view.pack_levels[Number(li.dataset.index)].id}`);
});

// A swipe on the board (touch, pen or a mouse drag) moves; a tap waits.
let swipe = null;
const frame = $("#board-frame");
frame.addEventListener("pointerdown", (e) => {
  swipe = { x: e.clientX, y: e.clientY, id: e.pointerId };
});
frame.addEventListener("pointerup", (e) => {
  if (!swipe || swipe.id !== e.pointerId) return;
  const dx = e.clientX - swipe.x;
  const dy = e.clientY - swipe.y;
  swipe = null;
  if (Math.max(Math.abs(dx), Math.abs(dy)) < 24) return;
  act(Math.abs(dx) > Math.abs(dy) ? (dx > 0 ? "right" : "left") : (dy > 0 ? "down" : "up"));
});
frame.addEventListener("pointercancel", () => { swipe = null; });
refitOnResize(frame, () => { if (shown) draw(shown, Number(canvas.dataset.revision)); });

// ---- start -----------------------------------------------------------------------------

function createArgs() {
  const args = {};
  for (const key of ["pack", "level", "link", "installed", "profile"]) {
    if (params.get(key)) args[key] = params.get(key);
  }
  return args;
}

async function main() {
  const given = params.get("token"); // "" forgets the tab's token
  const previous = sessionStorage.getItem(TOKEN_KEY);
  if (params.has("token")) { // out of the address bar (and its history) at once, whatever comes
    if (given) sessionStorage.setItem(TOKEN_KEY, given); // kept in this tab: a reload plays on
    else sessionStorage.removeItem(TOKEN_KEY);
    const kept = new URLSearchParams(params);
    kept.delete("token");
    history.replaceState(null, "", `/puzzle/${String(kept) ? `?${kept}` : ""}`);
  }
  const token = sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem("petridish.token");
  try {
    client = await Client.connect(undefined, { token, client: "puzzle-page/1.0", onStatus });
  } catch (err) { // a refused token is not kept, the tab's before it is (a lost connection
    // keeps it)
    if (err instanceof RequestError && err.code === "unauthorized" &&
        token === sessionStorage.getItem(TOKEN_KEY)) {
      if (previous && previous !== token) sessionStorage.setItem(TOKEN_KEY, previous);
      else sessionStorage.removeItem(TOKEN_KEY);
    }
    throw err;
  }
  setStatus("open", `live · ${client.role}`);
  if (!roomId) {
    if (client.role === "spectator") {
      setStatus("error", "a spectator can only watch: open a room with ?id=puzzle:NAME");
      return;
    }
    roomId = `puzzle:${Math.random().toString(36).slice(2, 10)}`;
    try {
      view = await client.request("puzzle.create", roomId, createArgs());
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      const where = (err.detail.diagnostics ?? []).map((d) => `${d.path}: ${d.message}`);
      setStatus("error", `cannot open this level: ${[err.message, ...where].join("; ")}`);
      return;
    }
    history.replaceState(null, "", `/puzzle/?id=${encodeURIComponent(roomId)}`);
  }
  client.subscribe(roomId, (push) => {
    if (push.kind === "events" && view && push.rev <= view.revision) return; // our own reply had it
    refresh();
  });
  await refresh();
  canPlay = !params.has("watch") && client.role !== "spectator" &&
    view.player === client.hello.name;
  render();
}

// For tests and curious people: the page's state from the console.
window.puzzlePage = {
  get view() { return view; },
  get room() { return roomId; },
  get mode() { return mode; },
  get canPlay() { return canPlay; },
  get cell() { return cell; },
  pixelAt: (x, y) => pixelAt(canvas, cell, x, y),
  scrub(move) {
    slider.value = String(move);
    slider.dispatchEvent(new Event("input"));
  },
};

main().catch((err) => setStatus("closed", `error: ${err.message}`));
