// The lobby page: a spectator on lobby:main listing the worlds that exist.
//
// The lobby pushes a `snapshot` (the first page of `lobby.list`: {worlds, total, offset})
// when it is subscribed and whenever that page changes (a world stored, loaded or
// unloaded, a summary told), and `events` ({type: "world_created", kind, id}) as worlds
// are created through it. "More" asks `lobby.list` for the next page (by `offset`; its
// rows are as they were when asked, the first page stays live). Today's daily
// field (UTC) is featured above the table and linked from the start of its day; once
// someone opened it (it starts then), the server lists it first like any world. Every
// row links to its world's page: a kind with its own page (PAGES) there, any other to the
// generic world page.

import { Client, socketUrl } from "/js/client.js";
import { statusLine } from "/js/page.js";

const LOBBY = "lobby:main";
// World kinds that have a page of their own (web/<kind>/).
const PAGES = {
  field: "/field/",
  ecosystem: "/ecosystem/",
  lab: "/lab/",
  puzzle: "/puzzle/",
};
const GENERIC = "/lobby/world.html";
const { say, onStatus } = statusLine(); // the lobby's word, or the connection's

const worlds = new Map(); // id -> {kind, id, revision, subscribers, live, summary}
const order = []; // ids in the server's order (featured first): the first page, then more
const more = []; // ids of the pages asked for with "More"
let firstPage = 0; // worlds in the first page (the snapshot's)
let total = 0; // worlds in the whole listing
let client = null;
const $ = (sel) => document.querySelector(sel);
const tbody = $("#worlds tbody");

function cell(row, className) {
  const td = row.insertCell();
  if (className) td.className = className;
  return td;
}

/** The page of a world. */
export function pageOf(world) {
  return `${PAGES[world.kind] ?? GENERIC}?id=${encodeURIComponent(world.id)}`;
}

/** A world's state as a word: a field's own (generating, live, ended), else live/idle. */
export function stateOf(world) {
  const s = world.summary?.state;
  if (s === "generating") {
    const share = world.summary.progress?.share;
    return share === undefined ? "generating" : `generating ${Math.round(share * 100)}%`;
  }
  if (s) return s;
  return world.live ? "live" : "idle";
}

function render(changed = new Set()) {
  tbody.replaceChildren();
  for (const id of order) {
    const world = worlds.get(id);
    const row = tbody.insertRow();
    row.dataset.id = world.id;
    if (changed.has(world.id)) row.classList.add("flash");
    const badge = document.createElement("span");
    badge.className = "kind";
    badge.dataset.kind = world.kind;
    badge.textContent = world.kind;
    cell(row).append(badge);
    const a = document.createElement("a");
    a.href = pageOf(world);
    a.textContent = world.id;
    cell(row, "id").append(a);
    cell(row, "state").textContent = stateOf(world);
    const agents = world.summary?.agents;
    const dead = world.summary?.dead;
    cell(row, "num agents").textContent =
      agents === undefined ? "—" : `${agents}${dead ? ` (${dead} dead)` : ""}`;
    cell(row, "num revision").textContent = String(world.revision);
    cell(row, "num subscribers").textContent = String(world.subscribers);
    cell(row, "loaded").textContent = world.live ? "loaded" : "unloaded";
  }
  const day = new Date().toISOString().slice(0, 10);
  const daily = { kind: "field", id: `field:day-${day}` };
  const today = worlds.get(daily.id);
  $("#today").hidden = false;
  $("#today-day").textContent = day;
  $("#today-link").href = pageOf(daily);
  $("#today-state").textContent = !today ? "starts when opened" : stateOf(today) +
    (today.summary?.agents !== undefined ? ` · ${today.summary.agents} agents` : "");
  const all = Math.max(total, order.length);
  $("#empty").hidden = all > 0;
  $("#count").textContent = (order.length < all ? `${order.length} of ` : "") +
    `${all} world${all === 1 ? "" : "s"}`;
  $("#more").hidden = order.length >= all;
}

async function showMore() {
  if (!client) return;
  $("#more").disabled = true;
  try {
    const page = await client.request("lobby.list", LOBBY, { offset: firstPage + more.length });
    for (const world of page.worlds) {
      if (!worlds.has(world.id)) order.push(world.id);
      worlds.set(world.id, world);
      more.push(world.id);
    }
    total = page.total;
    render();
    live(); // past a failure to list more
  } catch (err) {
    say("error", `cannot list more: ${err.message}`);
  } finally {
    $("#more").disabled = false;
  }
}

function onPush(push) {
  const changed = new Set();
  if (push.kind === "snapshot") {
    const before = new Map(worlds);
    worlds.clear();
    order.length = 0;
    firstPage = push.data.worlds.length;
    total = push.data.total;
    for (const world of push.data.worlds) {
      const old = before.get(world.id);
      if (!old || JSON.stringify(old) !== JSON.stringify(world)) changed.add(world.id);
      worlds.set(world.id, world);
      order.push(world.id);
    }
    for (const id of more) {
      if (!worlds.has(id)) {
        worlds.set(id, before.get(id));
        order.push(id);
      }
    }
  } else if (push.kind === "events") {
    for (const event of push.data) {
      if (event.type === "world_created" && !worlds.has(event.id)) {
        worlds.set(event.id, { kind: event.kind, id: event.id, revision: 0, subscribers: 0,
                               live: true, summary: null });
        order.push(event.id);
        total += 1;
        changed.add(event.id);
      }
    }
  }
  render(changed);
}

const live = () => say("open", `live · ${client.role}`);

async function main() {
  $("#more").addEventListener("click", showMore);
  try {
    client = await Client.connect(socketUrl(), { client: "lobby-page/1.1", onStatus });
    live();
    client.subscribe(LOBBY, onPush);
  } catch (err) {
    say("error", `cannot connect: ${err.message}`);
  }
}

render();
main();
