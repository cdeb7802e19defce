// The gallery: proven shaders without a stored error, judged at least once, best rating
// first (`lab.gallery`), each drawn live, with its lineage (`lab.lineage`), and a visitor
// cross of two chosen parents (`lab.cross`; the child is born unproven, and `lab.status`
// tells how its validation ended).
//
// One off-screen WebGL2 stage draws every card in turn and each card copies its frame
// into its own 2D canvas, so a long gallery needs one context, not one per organism.

import { Client, RequestError, backoff, socketUrl } from "/js/client.js";
import { clientKey, labOfPage, linkLabPages, lineageList, ratingText, sleep } from "/lab/api.js";
import { statusLine } from "/js/page.js";
import { Stage } from "/lab/gl.js";

const lab = labOfPage();
linkLabPages(lab);
const key = clientKey();
const CARD = [320, 240];
const PER_FRAME = 8; // cards redrawn per animation frame (round robin)
const grid = document.getElementById("gallery");
const parents = { a: null, b: null };
const cards = []; // {organism, program, context, element}
// Refusals that asking again will not change. Any other failure (a restart, a spent
// budget, a lost socket, a lab not created yet) is tried again, RETRY_MS doubling to at
// most MAX_RETRY_MS apart.
const FINAL = new Set(["bad_request", "forbidden", "unauthorized", "unknown_op"]);
const RETRY_MS = 1000;
const MAX_RETRY_MS = 30000;
let client = null;
let stage = null;
const { say: setStatus, onStatus } = statusLine(); // the gallery's word, or the connection's
const gallery = { phase: "starting", shown: [], failed: [], crosses: [], retry: 0 };
window.labGallery = gallery;

function card(o) {
  const element = document.createElement("article");
  element.className = "card";
  element.dataset.id = o.id;
  const canvas = document.createElement("canvas");
  canvas.width = CARD[0];
  canvas.height = CARD[1];
  const title = document.createElement("h2");
  title.textContent = o.title ?? o.id;
  const rating = document.createElement("p");
  rating.textContent = ratingText(o);
  const lineage = document.createElement("details");
  const summary = document.createElement("summary");
  summary.textContent = o.parents.length ? `lineage: ${o.parents.length} parents` : "lineage";
  lineage.append(summary);
  lineage.addEventListener("toggle", () => {
    if (!lineage.open || lineage.querySelector("ol")) return;
    client.request("lab.lineage", lab.id, { id: o.id, depth: 6 })
      .then((l) => lineage.append(lineageList(l))).catch(() => {});
  }, { once: false });
  const pick = document.createElement("div");
  pick.className = "pick";
  for (const slot of ["a", "b"]) {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.slot = slot;
    button.textContent = `parent ${slot.toUpperCase()}`;
    button.addEventListener("click", () => choose(slot, o));
    pick.append(button);
  }
  element.append(canvas, title, rating, lineage, pick);
  return { element, context: canvas.getContext("2d") };
}

function choose(slot, o) {
  parents[slot] = o;
  for (const c of cards) {
    const roles = ["a", "b"].filter((s) => parents[s]?.id === c.organism.id);
    if (roles.length) c.element.dataset.parent = roles.join(" ");
    else delete c.element.dataset.parent;
  }
  document.getElementById(`parent-${slot}`).textContent =
    `${slot.toUpperCase()}: ${o.title ?? o.id}`;
  document.getElementById("cross").disabled = !(parents.a && parents.b &&
                                                  parents.a.id !== parents.b.id);
}

async function cross() {
  const out = document.getElementById("cross-result");
  const button = document.getElementById("cross");
  button.disabled = true;
  const entry = { a: parents.a.id, b: parents.b.id, id: null, status: null, reason: null };
  gallery.crosses.push(entry);
  try {
    let r = await client.request("lab.cross", lab.id,
                                 { a: parents.a.id, b: parents.b.id, client_key: key });
    entry.id = r.id;
    out.textContent = `${r.id}: validating…`;
    for (let i = 0; r.status === "validating" && i < 120; i++) {
      await sleep(500);
      r = await client.request("lab.status", lab.id, { id: r.id, client_key: key });
    }
    entry.status = r.status;
    entry.reason = r.reason;
    // (a child repeating an organism the public may not see is rejected with no id)
    out.textContent = r.status === "rejected" ? `${r.id ?? "the child"} was rejected: ${r.reason}` :
      r.status === "validating" ? `${r.id} is still being validated` :
      `${r.id} was born, unproven: the owner's arena will prove it`;
  } catch (err) {
    entry.status = "refused";
    entry.reason = err.code ?? String(err);
    out.textContent = `the cross was refused: ${err.message ?? err}`;
  } finally {
    button.disabled = false;
  }
}

function animate() {
  let next = 0;
  const started = performance.now();
  const frame = (now) => {
    const live = cards.filter((c) => c.program);
    for (let k = 0; k < Math.min(PER_FRAME, live.length); k++) {
      const c = live[(next + k) % live.length];
      stage.draw(c.program, (now - started) / 1000);
      c.context.drawImage(stage.canvas, 0, 0, CARD[0], CARD[1]);
    }
    next += PER_FRAME;
    if (!stage.lost) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}

/** The lab's gallery (`lab.gallery`), asked again after a failure that may pass; null
 * after one that will not. Each failure is said on the status line. */
async function readGallery() {
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.request("lab.gallery", lab.id, { limit: 48 });
    } catch (err) {
      const why = String(err.message ?? err);
      if (err instanceof RequestError && FINAL.has(err.code)) {
        gallery.phase = "failed";
        setStatus("error", why);
        return null;
      }
      gallery.phase = "retrying";
      gallery.retry = backoff(attempt, RETRY_MS, MAX_RETRY_MS);
      setStatus("error", `${why}: trying again in ${gallery.retry / 1000} s`);
      await sleep(gallery.retry);
    }
  }
}

async function start() {
  try {
    client = await Client.connect(socketUrl(), { client: "lab-gallery/1", onStatus });
  } catch (err) {
    setStatus("error", String(err.message ?? err));
    return;
  }
  document.getElementById("cross").addEventListener("click", cross);
  const canvas = document.createElement("canvas");
  stage = new Stage(canvas, { size: CARD, onLost: () => setStatus("lost", "WebGL was lost: reload to draw again") });
  const organisms = (await readGallery())?.organisms;
  if (!organisms) return;
  document.getElementById("empty").hidden = organisms.length > 0;
  for (const o of organisms) {
    const made = card(o);
    const compiled = stage.compile(o.code);
    const entry = { organism: o, program: compiled.program ?? null, ...made };
    if (!compiled.program) {
      made.element.querySelector("p").textContent += " · does not compile in this browser";
      gallery.failed.push(o.id);
    } else {
      gallery.shown.push(o.id);
    }
    cards.push(entry);
    grid.append(made.element);
  }
  setStatus("live", `${organisms.length} organisms`);
  gallery.phase = "live";
  animate();
}

start();
