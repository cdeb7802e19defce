// The owner's arena: two organisms of a track side by side from `lab.pair` (alive, no
// stored error, the unproven first). A shader goes through the compile gate (gl.js): a
// failed compile or link posts /api/invalid with the first line of its info log; one that
// links and draws for 300 ms posts /api/ok. A panel is mounted in a sandboxed frame and
// posted /api/ok at once. Losing the WebGL context is no verdict: a fresh pair is dealt.
// The owner votes with the keyboard (← left, → right, s skip) or the buttons. A change of
// track drops the pair on show and deals one of the track chosen.
//
// `?gate` is the headless gate's mode (server/lab_gate.py): no dealing, and
// `labArena.judge(organism)` proves one organism through the same routes.

import { Client, RequestError, socketUrl } from "/js/client.js";
import { labOfPage, linkLabPages, lineageList, post, ratingText, record, showCounts, sleep,
         waitToDeal } from "/lab/api.js";
import { statusLine } from "/js/page.js";
import { Stage, firstLine, panelFrame, prove } from "/lab/gl.js";

const TOKEN_KEY = "pdg.owner_token";
const lab = labOfPage();
linkLabPages(lab);
const params = new URLSearchParams(location.search);
const gate = params.has("gate");
const sides = { left: document.getElementById("left"), right: document.getElementById("right") };
const stages = { left: null, right: null };
const trackSelect = document.getElementById("track");
let dealt = null; // the AbortController of the pair on show: a change of track aborts it
trackSelect.addEventListener("change", () => dealt?.abort());
let client = null;
let token = null;
const { say: setStatus, onStatus, note } = statusLine(); // the arena's word, or the connection's

// What the page did, for the owner's eyes and the gate: pairs dealt, verdicts and votes (the
// last of each), losses; `pause` the wait after the latest pair whose context was lost.
const arena = { phase: "starting", pairs: [], verdicts: [], votes: [], losses: 0, pause: 0,
                judge: null, backlog: null, ready: null };
window.labArena = arena;

function takeToken() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("token")) {
    sessionStorage.setItem(TOKEN_KEY, hash.get("token"));
    history.replaceState(null, "", location.pathname + location.search); // out of sight
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function stageOf(side) {
  // A context once lost stays lost: a fresh canvas gets a fresh context.
  if (!stages[side] || stages[side].lost) {
    const canvas = document.createElement("canvas");
    canvas.className = "organism";
    stages[side] = new Stage(canvas, { onLost: () => arena.losses++ });
  }
  return stages[side];
}

function mount(side, element) {
  const host = sides[side].querySelector(".stage");
  host.replaceChildren(element);
  if (element.tagName === "IFRAME") fitPanel(host, element);
}

function fitPanel(host, frame) {
  const scale = Math.min(1, host.clientWidth / 520);
  frame.style.transform = `scale(${scale})`;
  host.style.height = `${400 * scale}px`;
}

/** The side's rating line: what `o` is now (`state`) and its rating. */
function rate(side, o, state) {
  sides[side].querySelector(".rating").textContent = `${state} · ${ratingText(o)}`;
}

function show(side, o, verdict = "") {
  const el = sides[side];
  el.dataset.id = o.id;
  el.querySelector(".title").textContent = o.title ?? o.id;
  rate(side, o, o.render_ok ? "proven" : "unproven");
  setVerdict(side, verdict, verdict);
  const box = el.querySelector(".lineage-list");
  box.replaceChildren();
  client.request("lab.lineage", lab.id, { id: o.id, depth: 4 })
    .then((lineage) => box.replaceChildren(lineageList(lineage))).catch(() => {});
}

function setVerdict(side, verdict, text) {
  const p = sides[side].querySelector(".verdict");
  p.dataset.verdict = verdict;
  p.textContent = text;
}

/** What the lab's answer to a verdict (`Marked`) says the organism is now: an ok leaves
 * one killed meanwhile (from another tab) dead. */
function became(marked) {
  return marked.status === "dead" ? "dead" : marked.render_ok ? "proven" : "unproven";
}

async function report(o, outcome, pair) {
  // The verdict through the seed's owner routes; a proven organism needs no second ok.
  const entry = { id: o.id, pair, verdict: outcome.verdict, ms: outcome.ms ?? null,
                  posted: false };
  try {
    if (outcome.verdict === "ok" && !o.render_ok) {
      entry.became = became(await post("/api/ok", lab, { id: o.id }, token));
      entry.posted = true;
    } else if (outcome.verdict === "invalid") {
      entry.log = firstLine(outcome.log);
      entry.became = became(await post("/api/invalid", lab, { id: o.id, log: entry.log }, token));
      entry.posted = true;
    }
  } catch (err) {
    entry.error = String(err.message ?? err);
    setStatus("error", `could not post the verdict on ${o.id}: ${entry.error}`);
  }
  record(arena.verdicts, entry);
  return entry;
}

/** Judge one organism on `side` (of pair `pair`, or null for the gate):
 * {verdict: ok|invalid|lost|cancelled, ...}. */
async function judgeOn(side, o, signal, pair = null) {
  if (o.track === "panel") {
    mount(side, panelFrame(o.code));
    setVerdict(side, "ok", "mounted in its sandbox: render_ok");
    return reported(side, o, { verdict: "ok", ms: 0 }, pair);
  }
  const stage = stageOf(side);
  mount(side, stage.canvas);
  const outcome = await prove(stage, o.code, { signal });
  if (outcome.verdict === "lost" || outcome.verdict === "cancelled") return outcome;
  if (outcome.verdict === "invalid") setVerdict(side, "invalid", `dead: ${firstLine(outcome.log)}`);
  else setVerdict(side, "ok", `drew for ${Math.round(outcome.ms)} ms`);
  return { ...(await reported(side, o, outcome, pair)), program: outcome.program };
}

/** `report`, then the side's rating line says what the lab made of `o`. */
async function reported(side, o, outcome, pair) {
  const entry = await report(o, outcome, pair);
  if (entry.posted) rate(side, o, entry.became);
  return entry;
}

/** Judge both sides; null when a context was lost. `controller` aborts both judgments
 * (a loss aborts it too). */
async function judgePair(pair, controller) {
  const losses = arena.losses;
  const watch = setInterval(() => { if (arena.losses > losses) controller.abort(); }, 20);
  try {
    const results = await Promise.all([
      judgeOn("left", pair.left, controller.signal, pair.pair),
      judgeOn("right", pair.right, controller.signal, pair.pair)]);
    if (arena.losses > losses || results.some((r) => r.verdict === "lost")) return null;
    return results;
  } finally {
    clearInterval(watch);
  }
}

function choose(pair, results, signal) {
  // Votes wait for both verdicts; a pair with a dead organism can only be skipped. An
  // abort of `signal` (a change of track) is "redeal".
  const votable = results.every((r) => r.verdict === "ok");
  const bar = document.getElementById("votes");
  bar.hidden = false;
  for (const b of bar.querySelectorAll("button")) b.disabled = !votable && b.dataset.choice !== "skip";
  return new Promise((resolve) => {
    const done = (choice) => {
      document.removeEventListener("keydown", onKey);
      signal.removeEventListener("abort", redeal);
      bar.onclick = null;
      resolve(choice);
    };
    const redeal = () => done("redeal");
    signal.addEventListener("abort", redeal);
    const onKey = (event) => {
      const choice = { ArrowLeft: "left", ArrowRight: "right", s: "skip", S: "skip",
                       ArrowDown: "skip" }[event.key];
      if (choice && (votable || choice === "skip")) {
        event.preventDefault();
        done(choice);
      }
    };
    document.addEventListener("keydown", onKey);
    bar.onclick = (event) => {
      const choice = event.target.closest("button")?.dataset.choice;
      if (choice && !event.target.disabled) done(choice);
    };
  });
}

async function vote(pair, choice) {
  const winner = choice === "left" ? pair.left.id : pair.right.id;
  const voted = await post("/api/vote", lab, { pair: pair.pair, winner }, token);
  record(arena.votes, { pair: pair.pair, winner, judged: voted.winner.judged });
  const side = choice;
  const other = choice === "left" ? "right" : "left";
  rate(side, voted.winner, "won");
  rate(other, voted.loser, "lost");
  await sleep(400);
}

function releaseAll(results) {
  for (const [side, r] of Object.entries({ left: results?.[0], right: results?.[1] })) {
    if (r?.program && stages[side] && !stages[side].lost) stages[side].release(r.program);
  }
}

async function deal() {
  document.getElementById("pair").hidden = false;
  document.getElementById("bar").hidden = false;
  let lost = 0; // pairs in a row whose context was lost
  for (;;) {
    arena.phase = "dealing";
    dealt = new AbortController();
    let pair;
    try {
      pair = await client.request("lab.pair", lab.id, { track: trackSelect.value });
    } catch (err) {
      if (err instanceof RequestError && err.code === "no_pair") {
        setStatus("waiting", "waiting for births: fewer than two live organisms");
        await sleep(1000);
        continue;
      }
      setStatus("error", String(err.message ?? err));
      await sleep(2000);
      continue;
    }
    if (dealt.signal.aborted) continue; // dealt for the track before the change
    record(arena.pairs, pair.pair);
    show("left", pair.left, "judging…");
    show("right", pair.right, "judging…");
    arena.phase = "judging";
    setStatus("live", `pair ${pair.pair}: judging`);
    const results = await judgePair(pair, dealt);
    if (dealt.signal.aborted && results !== null) { // the track changed: deal for it
      releaseAll(results);
      continue;
    }
    if (results === null) {
      await waitToDeal(arena, ++lost, (s) =>
        setStatus("lost", `the WebGL context was lost: a fresh pair in ${s} s (no verdict)`));
      continue; // the next deal makes fresh canvases
    }
    lost = 0;
    arena.phase = "voting";
    setStatus("live", "vote: ← left · → right · s skip");
    const choice = await choose(pair, results, dealt.signal);
    document.getElementById("votes").hidden = true;
    if (choice === "left" || choice === "right") {
      try {
        await vote(pair, choice);
      } catch (err) {
        setStatus("error", `the vote was refused: ${err.message ?? err}`);
        await sleep(1000);
      }
    }
    releaseAll(results);
  }
}

async function judgeOne(o) {
  // The gate's: one organism on the left stage, its verdict posted, the stage freed.
  const started = performance.now();
  arena.phase = "judging";
  show("left", o, "judging…");
  const result = await judgeOn("left", o, null);
  releaseAll([result]);
  arena.phase = "idle";
  return { id: o.id, verdict: result.verdict, log: result.log ?? null, posted: !!result.posted,
           error: result.error ?? null, ms: performance.now() - started };
}

/** Show the login form until it is submitted; the token it keeps in this tab. */
async function askToken() {
  const form = document.getElementById("login");
  form.hidden = false;
  await new Promise((resolve) => form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
    resolve();
  }, { once: true }));
  form.hidden = true;
  return sessionStorage.getItem(TOKEN_KEY);
}

function refuse(text) {
  // A refused token is dropped from the tab and the form asks again: a new token
  // reloads the arena.
  sessionStorage.removeItem(TOKEN_KEY);
  setStatus("error", text);
  arena.phase = "refused";
  askToken().then(() => location.reload());
}

async function start() {
  token = takeToken();
  if (!token) {
    setStatus("login", "the arena is the owner's: enter the owner token");
    token = await askToken();
  }
  try {
    client = await Client.connect(socketUrl(), { token, client: "lab-arena/1", onStatus });
  } catch (err) {
    refuse(`the server refused the token: ${err.message ?? err}`);
    return;
  }
  if (client.role !== "owner") {
    refuse("this token is not the owner's: the arena needs the owner");
    return;
  }
  const track = params.get("track");
  if (track === "panel" || track === "shader") trackSelect.value = track;
  showCounts(client, lab, document.getElementById("counts"), note);
  if (gate) {
    arena.judge = judgeOne;
    arena.backlog = (track, limit) => client.request("lab.backlog", lab.id, { track, limit });
    arena.phase = "idle";
    document.getElementById("pair").hidden = false;
    setStatus("live", "gate mode: the headless gate proves the backlog");
    return;
  }
  await deal();
}

arena.ready = start();
window.addEventListener("resize", () => {
  for (const side of Object.keys(sides)) {
    const host = sides[side].querySelector(".stage");
    const frame = host.querySelector("iframe");
    if (frame) fitPanel(host, frame);
  }
});
