// The level editor, `/puzzle/editor.html[?pack=NAME]`: place objects and words on a grid,
// resize it, set the profile; the server validates the level (the engine's diagnostics,
// each shown beside the thing it names) and solves it (progress pushed while it searches);
// save it into a pack of your own (`puzzlepack:NAME`, created on first use) and publish it
// as a data-only share link. Nothing of a level is executable: it is JSON, checked by the
// server on every write.

import { Client, RequestError } from "/js/client.js";
import { escapeHtml, statusLine } from "/js/page.js";
import { NOUNS, WORDS, boardRoom, drawBoard, fitCell, refitOnResize } from "/puzzle/render.js";

const params = new URLSearchParams(location.search);
const $ = (sel) => document.querySelector(sel);
const canvas = $("#editor-board");
const PACK_KEY = "petridish.editor.pack";

let client = null;
const { say: setStatus, onStatus } = statusLine(); // the page's word, or the connection's
let packId = params.get("pack") ?? localStorage.getItem(PACK_KEY);
let pack = null; // the pack's view
let tool = { noun: "baba" }; // {noun} | {word} | {erase: true}
let cell = 40;
let level = {
  id: "my-level", name: "My level", width: 9, height: 7, profile: "classic",
  objects: [], text: [],
};
let problems = []; // the last validation's diagnostics

function say(text) {
  $("#message").textContent = text;
}

/** A size of the level as shown and drawn: its own when a whole number (JSON may lack it). */
const size = (n) => (Number.isInteger(n) && n > 0 ? n : null);

// ---- the level ------------------------------------------------------------------------

/** The level's JSON as the server takes it (`solution` only once the solver found one). */
function levelJson() {
  const hint = $("#hint-text").value;
  return { ...level, id: String(level.id ?? ""), name: $("#level-name").value,
           ...(hint ? { hint } : {}), profile: $("#profile").value };
}

function fillFields() {
  // The id box is one line: an id with line breaks (the server takes any string) is shown
  // as its JSON, read-only and marked ("Id (JSON)"), and the id is `level.id`; any other id
  // is the box's once someone types in it. (The JSON box renames the first kind.)
  const id = String(level.id ?? "");
  const broken = /[\r\n]/.test(id);
  $("#level-id").value = broken ? JSON.stringify(id) : id;
  $("#level-id").readOnly = broken;
  $('label[for="level-id"]').textContent = broken ? "Id (JSON)" : "Id";
  $("#level-name").value = level.name ?? "";
  $("#hint-text").value = level.hint ?? "";
  $("#width").value = String(size(level.width) ?? "");
  $("#height").value = String(size(level.height) ?? "");
  $("#profile").value = level.profile ?? "classic";
}

/** Where a diagnostic points: the cell of `objects[i]` or `text[i]`, if it names one. */
function cellOf(path) {
  const m = /^(objects|text)\[(\d+)\]/.exec(path);
  const thing = m ? level[m[1]]?.[Number(m[2])] : null;
  return thing && Number.isInteger(thing.x) && Number.isInteger(thing.y) ? [thing.x, thing.y] : null;
}

/** The board, its marks, the summary and the level's JSON, from `level`. */
function draw() {
  paint();
  $("#summary").textContent = `${size(level.width) ?? "?"} × ${size(level.height) ?? "?"} · ` +
    `${level.objects.length} objects · ${level.text.length} words`;
  $("#json").value = JSON.stringify(levelJson(), null, 1);
}

/** The board and its marks at the size the frame has room for (all a resize redraws: the
 * JSON box may hold an edit not applied yet). */
function paint() {
  const frame = $("#board-frame");
  const [width, height] = [size(level.width) ?? 1, size(level.height) ?? 1];
  cell = fitCell(width, height, boardRoom(frame), Math.max(200, window.innerHeight * 0.6));
  const board = {
    width, height,
    objects: [...level.objects, ...level.text], you: [],
  };
  const marks = {};
  const labels = [];
  for (const d of problems) {
    const at = cellOf(d.path);
    if (!at) continue;
    marks[at.join(",")] = "#ff5a4a";
    labels.push([at, `${d.path}: ${d.message}`]);
  }
  drawBoard(canvas, board, cell, marks);
  // Each cell's diagnostics beside it, on the right of the cell (left near the right edge).
  const box = $("#marks");
  box.innerHTML = "";
  const offset = canvas.offsetLeft;
  for (const [[x, y], text] of labels) {
    const el = document.createElement("span");
    el.className = "mark";
    el.textContent = text;
    el.dataset.cell = `${x},${y}`;
    el.style.top = `${canvas.offsetTop + y * cell + 2}px`;
    if (x + 1 < level.width / 2) el.style.left = `${offset + (x + 1) * cell + 2}px`;
    else el.style.right = `${frame.clientWidth - offset - x * cell + 2}px`;
    box.append(el);
  }
}

function changed() {
  problems = [];
  delete level.solution; // a recorded solution is only kept for the level it solved
  $("#diagnostics").innerHTML = "";
  $("#solver").textContent = "";
  $("#progress").hidden = true;
  draw();
}

function freeId(prefix) {
  const used = new Set([...level.objects, ...level.text].map((o) => o.id));
  let n = 1;
  while (used.has(`${prefix}${n}`)) n += 1;
  return `${prefix}${n}`;
}

function place(x, y) {
  if (tool.erase) {
    erase(x, y);
    return;
  }
  const facing = $("#facing").value;
  if (tool.noun) level.objects.push({ id: freeId(tool.noun), noun: tool.noun, x, y, facing });
  else level.text.push({ id: freeId("t"), word: tool.word, x, y });
  changed();
}

function erase(x, y) {
  // The topmost thing: words lie above objects, the later above the earlier.
  for (const list of [level.text, level.objects]) {
    for (let i = list.length - 1; i >= 0; i -= 1) {
      if (list[i].x === x && list[i].y === y) {
        list.splice(i, 1);
        changed();
        return;
      }
    }
  }
}

function resize() {
  const width = Math.max(1, Math.min(64, Number($("#width").value) || 1));
  const height = Math.max(1, Math.min(64, Number($("#height").value) || 1));
  const inside = (o) => o.x < width && o.y < height;
  const dropped = [...level.objects, ...level.text].filter((o) => !inside(o)).length;
  level = { ...level, width, height, objects: level.objects.filter(inside), text: level.text.filter(inside) };
  if (dropped) say(`${dropped} thing${dropped === 1 ? "" : "s"} outside the new size removed`);
  changed();
}

function cellAt(e) {
  const r = canvas.getBoundingClientRect();
  const x = Math.floor((e.clientX - r.left) / cell);
  const y = Math.floor((e.clientY - r.top) / cell);
  return x >= 0 && y >= 0 && x < level.width && y < level.height ? [x, y] : null;
}

canvas.addEventListener("click", (e) => {
  const at = cellAt(e);
  if (at) place(...at);
});
canvas.addEventListener("contextmenu", (e) => {
  e.preventDefault();
  const at = cellAt(e);
  if (at) erase(...at);
});

function palette() {
  const choose = (button, chosen) => {
    for (const b of document.querySelectorAll(".palette button, #eraser")) b.classList.remove("chosen");
    button.classList.add("chosen");
    tool = chosen;
  };
  for (const noun of NOUNS) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = noun;
    b.dataset.noun = noun;
    b.addEventListener("click", () => choose(b, { noun }));
    $("#nouns").append(b);
  }
  for (const word of WORDS) {
    const b = document.createElement("button");
    b.type = "button";
    b.textContent = word.toUpperCase();
    b.dataset.word = word;
    b.addEventListener("click", () => choose(b, { word }));
    $("#words").append(b);
  }
  $("#eraser").addEventListener("click", () => choose($("#eraser"), { erase: true }));
  $("#nouns button").classList.add("chosen");
}

// ---- the server: validate, solve, save, publish ----------------------------------------

function showProblems(list) {
  problems = list;
  $("#diagnostics").innerHTML = list.map((d) =>
    `<li data-path="${escapeHtml(d.path)}">${escapeHtml(d.path ? `${d.path}: ` : "")}${escapeHtml(d.message)}</li>`).join("");
  draw();
}

async function ensurePack() {
  if (pack) return pack;
  const name = $("#pack-name").value.trim() || "My pack";
  packId = packId ?? `p${Math.random().toString(36).slice(2, 10)}`;
  try {
    pack = await client.request("puzzlepack.create", `puzzlepack:${packId}`, { name });
  } catch (err) {
    if (!(err instanceof RequestError) || err.code !== "already_exists") throw err;
    pack = await client.request("puzzlepack.view", `puzzlepack:${packId}`, {});
    if (pack.owner !== client.hello.name) { // someone else's: make one of our own
      packId = null;
      pack = null;
      return ensurePack();
    }
  }
  localStorage.setItem(PACK_KEY, packId);
  client.subscribe(`puzzlepack:${packId}`, onPackPush);
  showPack();
  return pack;
}

function showPack() {
  $("#pack-id").textContent = packId ? `puzzlepack:${packId}` : "";
  // No op renames a pack: once it exists, its name is shown, not asked for.
  const name = $("#pack-name");
  name.readOnly = Boolean(pack);
  name.title = pack ? "A pack's name is set when it is made (its first Validate, Solve or Save)" : "";
  if (!pack) return;
  name.value = pack.name;
  $("#pack-levels").innerHTML = pack.levels.map((lv, i) =>
    `<li data-index="${i}">${escapeHtml(lv.title || lv.id)} <small>${lv.width}×${lv.height}` +
    `${lv.solution ? ` · solved in ${lv.solution}` : ""}</small></li>`).join("");
}

function onPackPush(push) {
  if (push.kind !== "snapshot" || !push.data.revision) return;
  pack = push.data;
  showPack();
  const solving = push.data.solving;
  const bar = $("#progress");
  bar.hidden = !solving;
  if (solving) {
    bar.value = Math.min(1, solving.expanded / solving.max_expanded);
    $("#solver").textContent = `searching… ${solving.expanded} of ${solving.max_expanded} states in ${solving.seconds.toFixed(1)} s`;
    $("#solver").dataset.expanded = String(solving.expanded);
  }
}

async function validate() {
  await ensurePack();
  const result = await client.request("puzzlepack.check", `puzzlepack:${packId}`, { level: levelJson() });
  showProblems(result.diagnostics);
  say(result.ok ? `valid · rules: ${result.rules.join(", ") || "none"}` : `${result.diagnostics.length} problem(s)`);
  return result.ok;
}

async function solve() {
  await ensurePack();
  const budget = Number($("#budget").value);
  $("#solver").textContent = "searching…";
  $("#progress").hidden = false;
  $("#progress").value = 0;
  try {
    const result = await client.request("puzzlepack.solve", `puzzlepack:${packId}`,
      { level: levelJson(), budget_ms: budget });
    $("#solver").dataset.status = result.status;
    if (result.status === "solved") {
      level.solution = result.moves;
      $("#solver").textContent = `solved in ${result.moves.length} moves (${result.expanded} states): ${result.moves}`;
    } else if (result.status === "unsolvable") {
      $("#solver").textContent = `unsolvable: every reachable state was searched (${result.expanded})`;
    } else {
      $("#solver").textContent = `not solved within the budget (${result.expanded} states): ${result.reason}`;
    }
    $("#json").value = JSON.stringify(levelJson(), null, 1);
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    $("#solver").textContent = err.message;
    if (err.detail.diagnostics) showProblems(err.detail.diagnostics);
  } finally {
    $("#progress").hidden = true; // the search is over: the line below says how it went
  }
}

async function save() {
  await ensurePack();
  try {
    pack = await client.request("puzzlepack.save", `puzzlepack:${packId}`, { level: levelJson() });
    showPack();
    showProblems([]);
    say(`saved into ${pack.name}`);
    const play = $("#play");
    play.hidden = false;
    play.href = `/puzzle/?installed=${encodeURIComponent(packId)}&level=${encodeURIComponent(levelJson().id)}`;
  } catch (err) {
    if (!(err instanceof RequestError)) throw err;
    showProblems(err.detail.diagnostics ?? []);
    say(err.message);
  }
}

async function publish() {
  await save();
  const one = await client.request("puzzlepack.level", `puzzlepack:${packId}`, { level: levelJson().id });
  const url = `${location.origin}/puzzle/?link=${one.link}`;
  const box = $("#share-link");
  box.hidden = false;
  box.value = url;
  try {
    await navigator.clipboard.writeText(url);
    say("The level's share link is copied.");
  } catch {
    say("Copy the share link below.");
  }
}

async function load(id) {
  const one = await client.request("puzzlepack.level", `puzzlepack:${packId}`, { level: id });
  level = { objects: [], text: [], ...one.level };
  fillFields();
  changed();
  if (one.level.solution) level.solution = one.level.solution;
  say(`editing ${id}`);
}

function report(fn) {
  return () => fn().catch((err) => say(err.message));
}

$("#validate").addEventListener("click", report(validate));
$("#solve").addEventListener("click", report(solve));
$("#save").addEventListener("click", report(save));
$("#publish").addEventListener("click", report(publish));
$("#width").addEventListener("change", resize);
$("#height").addEventListener("change", resize);
$("#profile").addEventListener("change", changed);
$("#level-id").addEventListener("input", () => { level.id = $("#level-id").value; });
for (const id of ["#level-id", "#level-name", "#hint-text"]) $(id).addEventListener("change", draw);
$("#pack-levels").addEventListener("click", (e) => {
  // The id from the pack, not from the markup: HTML makes a carriage return in one a newline.
  const li = e.target.closest("li[data-index]");
  if (li) report(() => load(pack.levels[Number(li.dataset.index)].id))();
});
$("#apply-json").addEventListener("click", () => {
  try {
    const data = JSON.parse($("#json").value);
    level = { objects: [], text: [], ...data };
    fillFields();
    changed();
  } catch (err) {
    say(`not JSON: ${err.message}`);
  }
});
refitOnResize($("#board-frame"), paint);

async function main() {
  palette();
  fillFields();
  draw();
  const token = params.get("token") ?? localStorage.getItem("petridish.token");
  client = await Client.connect(undefined, { token, client: "puzzle-editor/1.0", onStatus });
  setStatus("open", `live · ${client.role}`);
  if (client.role === "spectator") say("A spectator cannot save or solve: open the editor with an agent token (?token=…).");
  if (packId) {
    try {
      pack = await client.request("puzzlepack.view", `puzzlepack:${packId}`, {});
      if (pack.owner === client.hello.name) client.subscribe(`puzzlepack:${packId}`, onPackPush);
      else pack = null;
    } catch (err) {
      if (!(err instanceof RequestError)) throw err;
      pack = null; // not created yet: the first validate or save creates it
    }
    showPack();
  }
}

// For tests and curious people.
window.editorPage = {
  get level() { return levelJson(); },
  get cell() { return cell; },
  get pack() { return packId; },
  get problems() { return problems; },
  get key() { return client?.key ?? null; }, // this anonymous caller's key (tests act as it)
};

main().catch((err) => setStatus("closed", `error: ${err.message}`));
