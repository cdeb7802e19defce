// The generic world page: a spectator on any world (`?id=kind:name`), for kinds without a
// page of their own: its snapshot as JSON and its latest events, live.

import { Client } from "/js/client.js";
import { statusLine } from "/js/page.js";

const id = new URLSearchParams(location.search).get("id") ?? "";
const $ = (sel) => document.querySelector(sel);
const KEEP = 50; // events shown
const { say, onStatus } = statusLine(); // the world's word, or the connection's
// Written as their JSON escapes: the direction controls and the paragraph separators in
// anyone's text (a name), which would reorder the rest of its line as shown.
const UNSHOWN = /[\u0085\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
$("#world").textContent = id;
document.title = `Petri Dish Games — ${id}`;

/** `value` as JSON text, every character it holds shown where it is. */
function jsonText(value, indent) {
  return JSON.stringify(value, null, indent).replace(UNSHOWN, (c) =>
    `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function onPush(push) {
  $("#rev").textContent = String(push.rev);
  if (push.kind === "snapshot") {
    $("#view").textContent = jsonText(push.data, 2).slice(0, 20000);
    return;
  }
  for (const event of push.data ?? []) {
    const li = document.createElement("li");
    li.textContent = jsonText(event);
    $("#events").prepend(li);
  }
  while ($("#events").children.length > KEEP) $("#events").lastChild.remove();
}

async function main() {
  const client = await Client.connect(undefined, { client: "world-page/1.0", onStatus });
  const sub = client.subscribe(id, onPush);
  try {
    await sub.ready;
    say("open", `live · ${client.role}`);
  } catch (err) {
    say("error", err.message); // a RequestError's starts with its code
  }
}

main().catch((err) => say("error", err.message));
