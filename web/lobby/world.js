// The generic world page: a spectator on any world (`?id=kind:name`), for kinds without a
// page of their own: its snapshot as JSON and its latest events, live.

import { Client } from "/js/client.js";
import { setStatus } from "/js/page.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const $ = (sel) => document.querySelector(sel);
const KEEP = 50; // events shown
$("#world").textContent = id;
document.title = `Petri Dish Games — ${id}`;

function onPush(push) {
  $("#rev").textContent = String(push.rev);
  if (push.kind === "snapshot") {
    $("#view").textContent = JSON.stringify(push.data, null, 2).slice(0, 20000);
    return;
  }
  for (const event of push.data ?? []) {
    const li = document.createElement("li");
    li.textContent = JSON.stringify(event);
    $("#events").prepend(li);
  }
  while ($("#events").children.length > KEEP) $("#events").lastChild.remove();
}

async function main() {
  const client = await Client.connect(undefined, { client: "world-page/1.0" });
  const sub = client.subscribe(id, onPush);
  try {
    await sub.ready;
    setStatus("open", `live · ${client.role}`);
  } catch (err) {
    setStatus("error", `${err.code ?? "error"}: ${err.message}`);
  }
}

main().catch((err) => setStatus("error", err.message));
