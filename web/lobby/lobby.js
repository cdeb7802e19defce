// The lobby page: a spectator on lobby:main that lists every world live.
//
// The lobby pushes a `snapshot` ({worlds: [...]}) when it is subscribed and whenever a
// live figure changes, and `events` ({type: "world_created", kind, id}) as worlds
// are created; both update the table in place.

import { Client, socketUrl } from "/js/client.js";

const LOBBY = "lobby:main";
// World kinds that have a page of their own (web/<kind>/); others are listed without a link.
const PAGES = {
  field: "/field/",
  puzzle: "/puzzle/",
};

const worlds = new Map(); // id -> {kind, id, revision, subscribers, live}
const tbody = document.querySelector("#worlds tbody");
const empty = document.querySelector("#empty");
const count = document.querySelector("#count");
const status = document.querySelector("#status");

function setStatus(state, text) {
  status.dataset.state = state;
  status.textContent = text;
}

function cell(row, className) {
  const td = row.insertCell();
  if (className) td.className = className;
  return td;
}

function worldLink(world) {
  const page = PAGES[world.kind];
  if (!page) {
    const span = document.createElement("span");
    span.textContent = world.id;
    return span;
  }
  const a = document.createElement("a");
  a.href = `${page}?id=${encodeURIComponent(world.id)}`;
  a.textContent = world.id;
  return a;
}

function render(changed = new Set()) {
  tbody.replaceChildren();
  const sorted = [...worlds.values()].sort((a, b) => a.id.localeCompare(b.id));
  for (const world of sorted) {
    const row = tbody.insertRow();
    row.dataset.id = world.id;
    if (changed.has(world.id)) row.classList.add("flash");
    const badge = document.createElement("span");
    badge.className = "kind";
    badge.dataset.kind = world.kind;
    badge.textContent = world.kind;
    cell(row).append(badge);
    cell(row, "id").append(worldLink(world));
    const rev = cell(row, "num revision");
    // -1: the world is not loaded, so its revision is not known yet.
    rev.textContent = world.revision >= 0 ? String(world.revision) : "—";
    if (world.revision < 0) rev.title = "not loaded";
    cell(row, "num subscribers").textContent = String(world.subscribers);
    cell(row, "state").textContent = world.live ? "live" : "idle";
  }
  empty.hidden = worlds.size > 0;
  count.textContent = `${worlds.size} world${worlds.size === 1 ? "" : "s"}`;
}

function onPush(push) {
  const changed = new Set();
  if (push.kind === "snapshot") {
    const before = new Map(worlds);
    worlds.clear();
    for (const world of push.data.worlds) {
      const old = before.get(world.id);
      if (!old || old.revision !== world.revision || old.subscribers !== world.subscribers) {
        changed.add(world.id);
      }
      worlds.set(world.id, world);
    }
  } else if (push.kind === "events") {
    for (const event of push.data) {
      if (event.type === "world_created" && !worlds.has(event.id)) {
        worlds.set(event.id, { kind: event.kind, id: event.id, revision: -1, subscribers: 0, live: false });
        changed.add(event.id);
      }
    }
  }
  render(changed);
}

async function main() {
  setStatus("connecting", "connecting…");
  try {
    const client = await Client.connect(socketUrl(), {
      client: "lobby-page/1.0",
      onStatus: (state, info) => {
        if (state === "open") setStatus("open", `live · ${info.role}`);
        else if (state === "reconnecting") setStatus("reconnecting", "reconnecting…");
        else setStatus("closed", "disconnected");
      },
    });
    setStatus("open", `live · ${client.role}`);
    client.subscribe(LOBBY, onPush);
  } catch (err) {
    setStatus("error", `cannot connect: ${err.message}`);
  }
}

render();
main();
