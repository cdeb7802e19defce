// What the lab's pages share beside the renderer: which lab the page shows, the seed's
// HTTP routes (verdicts, reports and votes), the client key a public judge keeps, and a
// small status line.

import { RequestError, backoff } from "/js/client.js";
import { isolated, oneAtATime } from "/js/page.js";

/** The lab of this page's `?id=lab:NAME` (default lab:main). */
export function labOfPage() {
  const id = new URLSearchParams(location.search).get("id") || "lab:main";
  const name = /^lab:([A-Za-z0-9_-][A-Za-z0-9_.-]{0,79})$/.exec(id)?.[1] ?? "main";
  return { id: `lab:${name}`, name };
}

/** Point the page's links to the lab's pages at `lab` (`?id=`): they stay in one lab. */
export function linkLabPages(lab) {
  for (const link of document.querySelectorAll('a[href^="/lab/"]')) {
    link.href = `${link.pathname}?id=${encodeURIComponent(lab.id)}`;
  }
}

/** POST `body` to one of the seed's routes (server/lab_routes.py); resolves with the
 * result, rejects with the RequestError of a refusal. */
export async function post(path, lab, body, token = null) {
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(`${path}?lab=${encodeURIComponent(lab.name)}`, {
    method: "POST", headers, body: JSON.stringify(body), credentials: "omit",
    cache: "no-store",
  });
  let reply;
  try {
    reply = await response.json();
  } catch {
    throw new RequestError("internal", `${path} answered ${response.status} without JSON`);
  }
  if (!reply.ok) throw new RequestError(reply.error.code, reply.error.message, reply.error.detail);
  return reply.result;
}

const KEY = "pdg.lab.client_key";

/** The public judge's client key: made once (128 random bits) and kept in this browser. */
export function clientKey() {
  let key = null;
  try {
    key = localStorage.getItem(KEY);
  } catch { /* storage refused: a key for this page only */ }
  if (!key || !/^[0-9a-f]{32}$/.test(key)) {
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    key = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
    try {
      localStorage.setItem(KEY, key);
    } catch { /* as above */ }
  }
  return key;
}

/** An organism's rating as a short text. */
export function ratingText(o) {
  return `ordinal ${o.ordinal.toFixed(2)} · μ ${o.mu.toFixed(1)} σ ${o.sigma.toFixed(1)} · ` +
    `${o.judged} vote${o.judged === 1 ? "" : "s"}`;
}

/** A list element of an organism's ancestors (lab.lineage), nearest first. */
export function lineageList(lineage) {
  const list = document.createElement("ol");
  list.className = "lineage";
  for (const a of lineage.ancestors) {
    const item = document.createElement("li");
    item.dataset.id = a.id;
    item.dataset.generation = String(a.generation);
    const state = a.status === "dead" ? "dead" : a.render_ok ? "proven" : "unproven";
    const parents = a.parents.length ? ` ← ${a.parents.join(" × ")}` : " (a first organism)";
    item.textContent = `${"· ".repeat(a.generation)}${isolated(a.title ?? a.id)} [${state}, ` +
      `${a.source}, ordinal ${a.ordinal.toFixed(2)}]${parents}`;
    list.append(item);
  }
  if (lineage.truncated) {
    const more = document.createElement("li");
    more.textContent = "…";
    list.append(more);
  }
  return list;
}

const KEPT = 100; // entries a page keeps of what it did

/** Append `entry` to `list`, one of a page's records of what it did (read by tests and the
 * curious), keeping the last KEPT: a page may deal pairs for hours. */
export function record(list, entry) {
  list.push(entry);
  if (list.length > KEPT) list.splice(0, list.length - KEPT);
}

/** Sleep `ms` milliseconds. */
export function sleep(ms) {
  return new Promise((wake) => setTimeout(wake, ms));
}

/** Wait before dealing the next pair after the `unshown`th in a row that `page` (its record,
 * whose `phase` and `pause` say so) could not show: a lost WebGL context or a shader this
 * browser will not draw is no verdict, and a browser that blocked WebGL loses every pair,
 * so the page deals ever more slowly (0.3 s doubling to 30 s), not as fast as it can.
 * `say(seconds)` tells the status line. */
export async function waitToDeal(page, unshown, say) {
  page.phase = "waiting";
  page.pause = backoff(unshown - 1, 300, 30000);
  say(page.pause / 1000);
  await sleep(page.pause);
}

/** Keep `element` showing the lab's counts (lab.info every few seconds: a lab's stream is
 * not followed, its events carry unproven code), one reading at a time: ticks while one
 * waits, as through an outage, add one reading. A failed reading says why in a `note` of the
 * page's status line (`statusLine().note`); the next good one clears it. */
export function showCounts(client, lab, element, note, every = 3000) {
  const read = oneAtATime(async () => {
    const c = await client.request("lab.info", lab.id, {});
    element.textContent = `${c.organisms} organisms · ${c.proven} proven · ${c.dead} dead · ` +
      `${c.votes} votes`;
  });
  const once = () => read().then(() => note(null),
    (err) => note(`counts not refreshed: ${err.message ?? err}`));
  once();
  return setInterval(once, every);
}
