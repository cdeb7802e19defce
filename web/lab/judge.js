// The public judging page: pairs of proven shaders from `lab.public_pair`, at most one of
// them an unproven canary. Each body is compiled as an instrumented copy first (gl.js
// `instrument`) and, where that copy fails, once more as the pristine source before the
// pair is skipped; the canary's outcome (compiled and 300 ms drawn, or not) is reported to
// /api/pub/seen. The page never writes an error and never kills: only the owner does.
// u_audio comes from the page's own analysis of the bundled voice track (x overall,
// y bass, z mid, w high, 0 to 1; all zero when it does not play). Votes go to
// /api/pub/vote under the client key this browser keeps.

import { Client, RequestError, socketUrl } from "/js/client.js";
import { clientKey, labOfPage, linkLabPages, post, record, showCounts, sleep, waitToDeal }
  from "/lab/api.js";
import { statusLine } from "/js/page.js";
import { SILENT, Stage, instrument, prove } from "/lab/gl.js";

const lab = labOfPage();
linkLabPages(lab);
const { say: setStatus, onStatus, note } = statusLine(); // the loop's word, or the connection's
const key = clientKey();
const sides = { left: document.getElementById("left"), right: document.getElementById("right") };
const stages = { left: null, right: null };
let client = null;

const BANDS = [[20, 8000], [20, 250], [250, 2000], [2000, 8000]]; // overall, bass, mid, high (Hz)

/** The voice track and its analysis: levels() is [overall, bass, mid, high] in 0..1. */
class Voice {
  constructor(element, button) {
    this.element = element;
    this.button = button;
    this.context = null;
    this.analyser = null;
    this.bins = null;
    button.addEventListener("click", () => (element.paused ? this.play() : this.pause()));
  }

  async play() {
    if (!this.context) {
      this.context = new AudioContext();
      const source = this.context.createMediaElementSource(this.element);
      this.analyser = this.context.createAnalyser();
      this.analyser.fftSize = 2048;
      this.analyser.smoothingTimeConstant = 0.6;
      source.connect(this.analyser);
      this.analyser.connect(this.context.destination);
      this.bins = new Uint8Array(this.analyser.frequencyBinCount);
    }
    await this.context.resume();
    await this.element.play();
    this.button.textContent = "❚❚ pause the voice";
    this.button.setAttribute("aria-pressed", "true");
  }

  pause() {
    this.element.pause();
    this.button.textContent = "▶ play the voice";
    this.button.setAttribute("aria-pressed", "false");
  }

  levels() {
    const el = this.element;
    if (!this.analyser || el.paused || el.ended) return SILENT;
    this.analyser.getByteFrequencyData(this.bins);
    const hz = this.context.sampleRate / this.analyser.fftSize;
    return BANDS.map(([lo, hi]) => {
      const a = Math.max(0, Math.floor(lo / hz));
      const b = Math.min(this.bins.length, Math.ceil(hi / hz));
      let sum = 0;
      for (let i = a; i < b; i++) sum += this.bins[i];
      return b > a ? sum / ((b - a) * 255) : 0;
    });
  }
}

const voice = new Voice(document.getElementById("voice"), document.getElementById("play"));

// What the page did: pairs dealt, each compile attempt, each report (the last of each, read
// by tests); `pause` the wait after the latest pair it could not show.
const judge = { phase: "starting", pairs: [], attempts: [], reports: [], votes: 0,
                losses: 0, pause: 0, audio: () => voice.levels() };
window.labJudge = judge;

function stageOf(side) {
  if (!stages[side] || stages[side].lost) {
    const canvas = document.createElement("canvas");
    canvas.className = "organism";
    stages[side] = new Stage(canvas, { audio: () => voice.levels(), onLost: () => judge.losses++ });
    sides[side].querySelector(".stage").replaceChildren(canvas);
  }
  return stages[side];
}

/** The instrumented copy, then (if that fails) the pristine body: {program} or a failure. */
function compileForJudging(stage, o) {
  const attempt = { id: o.id, instrumented: null, pristine: null };
  record(judge.attempts, attempt);
  const first = stage.compile(instrument(o.code));
  attempt.instrumented = first.program ? "ok" : first.lost ? "lost" : "failed";
  if (first.program || first.lost) return first;
  const second = stage.compile(o.code);
  attempt.pristine = second.program ? "ok" : second.lost ? "lost" : "failed";
  return second;
}

async function report(id, ok) {
  const entry = { id, ok, verdict: null };
  record(judge.reports, entry);
  try {
    entry.verdict = (await post("/api/pub/seen", lab, { id, client_key: key, ok })).verdict;
  } catch (err) {
    entry.error = err.code ?? String(err);
  }
}

function setVerdict(side, verdict, text) {
  const p = sides[side].querySelector(".verdict");
  p.dataset.verdict = verdict;
  p.textContent = text;
}

/** Free the programs a pair compiled (each stage also stops drawing). */
function release(compiled) {
  for (const [side, r] of Object.entries(compiled)) if (r.program) stages[side].release(r.program);
}

/** Compile and draw a pair: "lost", "skipped" (its programs freed) or the compiled
 * programs by side, drawing until release(). */
async function judgePair(pair) {
  const order = [["left", pair.left], ["right", pair.right]];
  const compiled = {};
  for (const [side, o] of order) {
    sides[side].dataset.id = o.id;
    sides[side].querySelector(".title").textContent = o.title ?? "untitled";
    setVerdict(side, "", "");
    compiled[side] = compileForJudging(stageOf(side), o);
  }
  if (order.some(([side]) => compiled[side].lost)) {
    release(compiled);
    return "lost";
  }
  const failed = order.filter(([side]) => !compiled[side].program);
  if (failed.length) {
    for (const [side, o] of failed) {
      setVerdict(side, "skipped", "did not compile here: skipped");
      if (o.id === pair.canary) await report(o.id, false);
    }
    release(compiled);
    return "skipped";
  }
  const losses = judge.losses;
  const outcomes = await Promise.all(order.map(([side, o]) => prove(stages[side], o.code, {
    compiled: compiled[side] }).then((r) => [side, o, r])));
  if (judge.losses > losses || outcomes.some(([, , r]) => r.verdict === "lost")) {
    release(compiled);
    return "lost";
  }
  for (const [side, o] of outcomes) {
    setVerdict(side, "ok", "");
    if (o.id === pair.canary) await report(o.id, true);
  }
  return compiled;
}

function choose() {
  const bar = document.getElementById("votes");
  bar.hidden = false;
  return new Promise((resolve) => {
    const done = (choice) => {
      document.removeEventListener("keydown", onKey);
      bar.onclick = null;
      bar.hidden = true;
      resolve(choice);
    };
    const onKey = (event) => {
      const choice = { ArrowLeft: "left", ArrowRight: "right", s: "skip", S: "skip" }[event.key];
      if (choice) {
        event.preventDefault();
        done(choice);
      }
    };
    document.addEventListener("keydown", onKey);
    bar.onclick = (event) => {
      const choice = event.target.closest("button")?.dataset.choice;
      if (choice) done(choice);
    };
  });
}

async function loop() {
  let unshown = 0; // pairs in a row that could not be shown
  for (;;) {
    judge.phase = "dealing";
    let pair;
    try {
      pair = await client.request("lab.public_pair", lab.id, { client_key: key });
    } catch (err) {
      const waiting = err instanceof RequestError && err.code === "no_pair";
      setStatus(waiting ? "waiting" : "error", waiting ?
        "nothing to judge yet: fewer than two proven shaders" : String(err.message ?? err));
      await sleep(waiting ? 2000 : 3000);
      continue;
    }
    record(judge.pairs, { pair: pair.pair, left: pair.left.id, right: pair.right.id,
                          canary: pair.canary });
    judge.phase = "judging";
    setStatus("live", "drawing…");
    const outcome = await judgePair(pair);
    if (outcome === "lost" || outcome === "skipped") {
      const why = outcome === "lost" ? "the WebGL context was lost" : "one of them would not draw here";
      await waitToDeal(judge, ++unshown, (s) =>
        setStatus(outcome === "lost" ? "lost" : "live", `${why}: the next pair in ${s} s`));
      continue;
    }
    unshown = 0;
    judge.phase = "voting";
    setStatus("live", "which one? ← · → · s to skip");
    const choice = await choose();
    if (choice !== "skip") {
      try {
        await post("/api/pub/vote", lab, { pair: pair.pair, client_key: key,
                                            winner: choice === "left" ? pair.left.id : pair.right.id });
        judge.votes += 1;
      } catch (err) {
        setStatus("error", `the vote was refused: ${err.message ?? err}`);
        await sleep(800);
      }
    }
    release(outcome);
  }
}

function showLevels() {
  const el = document.getElementById("levels");
  const tick = () => {
    const a = voice.levels();
    el.textContent = a.some((x) => x > 0) ?
      `voice ${a.map((x) => x.toFixed(2)).join(" ")}` : "silent";
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

async function start() {
  try {
    client = await Client.connect(socketUrl(), { client: "lab-judge/1", onStatus });
  } catch (err) {
    setStatus("error", String(err.message ?? err));
    return;
  }
  showCounts(client, lab, document.getElementById("counts"), note);
  showLevels();
  await loop();
}

start();
