// The owner's console: the server's worlds, connections, tokens and budgets, through the
// owner-only `admin.*` ops on /ws (docs/protocol.md), refreshed every few seconds.
//
// The owner token is typed or pasted into the form; it is kept in this tab's
// sessionStorage at most (so a reload reconnects) and never put in the address. Every
// action (stop, release, unload a world; create, revoke a token) is one request, and
// the tables are read again after it.

import { Client, RequestError, socketUrl } from "/js/client.js";
import { oneAtATime, statusLine } from "/js/page.js";

const ADMIN = "admin:main";
const KEY = "petridish.owner-token";
const PAGE = 50; // rows per page of worlds and connections
const REFRESH = 2000; // ms between refreshes

const $ = (sel) => document.querySelector(sel);
const offsets = { worlds: 0, connections: 0 };
let client = null;
let connection = 0; // the connect() whose client the status follows
const { say, onStatus } = statusLine(); // the console's word, or the connection's
let timer = null;
let tickFailed = false; // the error shown is a timed refresh's: the next good one clears it

const HOME = $("#error").parentElement; // the token's panel, at the top

/** Show `err` just after `near` (the part of the page whose action failed, scrolled into
 * view) or in the token's panel; null clears it. */
function showError(err, near = null) {
  tickFailed = false;
  const box = $("#error");
  box.hidden = !err;
  box.textContent = err ? (err instanceof RequestError ? err.message : String(err)) : "";
  if (near) near.after(box);
  else HOME.append(box);
  if (err && near) box.scrollIntoView({ block: "nearest" });
}

const ask = (op, args = {}) => client.request(op, ADMIN, args, { retry: false });

/** `handle` (of what a request ends with) for the client the console has now: a client let go
 * since (Forget, another login) fails its requests for that alone, and says nothing. */
function ours(handle) {
  const mine = connection;
  return (outcome) => (mine === connection ? handle(outcome) : undefined);
}

/** A cell of `row` with its column's name (phones show it beside the value). */
function cell(row, label, text = "", className = "") {
  const td = row.insertCell();
  td.dataset.label = label;
  if (className) td.className = className;
  td.textContent = text;
  return td;
}

function button(text, className, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.className = className;
  b.addEventListener("click", () => action().then(ours(() => showError(null)),
    ours((err) => showError(err, b.closest("table")))));
  return b;
}

function figures(dl, pairs) {
  dl.replaceChildren();
  for (const [name, value] of pairs) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    const pair = document.createElement("div");
    pair.append(dt, dd);
    dl.append(pair);
  }
}

/** A world's summary in a few words: `state: live · agents: 3`. */
export function summaryText(summary) {
  if (!summary) return "";
  return Object.entries(summary)
    .filter(([, v]) => v === null || typeof v !== "object")
    .slice(0, 6).map(([k, v]) => `${k}: ${v}`).join(" · ");
}

async function act(what, op, args) {
  if (!confirm(`${what}?`)) return;
  await ask(op, args);
  await refresh();
}

function renderOverview(o) {
  const c = o.connections;
  const roles = Object.entries(c.by_role).map(([r, n]) => `${r} ${n}`).join(", ");
  figures($("#overview"), [
    ["live worlds", o.live_worlds], ["held worlds", o.held.length ? o.held.join(", ") : "none"],
    ["websockets", `${c.websockets} (${roles})`], ["TCP connections", c.tcp],
    ["without a hello", c.ungreeted],
    ["store", o.store.ok ? "ok" : `NOT OK: ${o.store.trouble}`],
    ["store writer restarts", o.store.restarts],
  ]);
  $("#audit").replaceChildren(...o.audit.map((e) => {
    const li = document.createElement("li");
    const { type, by, t, ...rest } = e;
    const what = Object.entries(rest).map(([k, v]) => `${k} ${v}`).join(", ");
    li.textContent = `${new Date(t).toISOString().slice(0, 19)}Z ${by}: ${type} ${what}`;
    return li;
  }));
  $("#updated").textContent = `at ${new Date().toLocaleTimeString()}`;
}

function renderWorlds(page) {
  const tbody = $("#worlds tbody");
  tbody.replaceChildren();
  for (const w of page.worlds) {
    const row = tbody.insertRow();
    row.dataset.id = w.id;
    row.dataset.state = w.state;
    cell(row, "World", w.id, "id");
    cell(row, "State", w.state);
    cell(row, "Revision", w.revision < 0 ? "—" : String(w.revision), "num");
    cell(row, "Mailbox", `${w.mailbox_depth} (peak ${w.mailbox_peak})`, "num");
    cell(row, "Subscribers", String(w.subscribers), "num");
    cell(row, "Summary", summaryText(w.summary), "summary");
    const actions = cell(row, "Actions", "", "actions");
    if (w.kind === "admin") continue;
    if (w.state === "held") {
      actions.append(button("Release", "release", () => act(`Let ${w.id} load again`,
        "admin.release", { id: w.id })));
    } else {
      actions.append(
        button("Stop", "stop", () => act(`Stop ${w.id} until released`, "admin.stop",
          { id: w.id })),
        button("Unload", "unload", () => act(`Unload ${w.id}`, "admin.unload", { id: w.id })));
    }
  }
  pager("worlds", page.total);
}

function renderConnections(page) {
  const tbody = $("#connections tbody");
  tbody.replaceChildren();
  for (const c of page.connections) {
    const row = tbody.insertRow();
    cell(row, "Role", c.role);
    cell(row, "Identity", c.identity || "—", "id");
    cell(row, "Address", c.address, "id");
    const subs = cell(row, "Subscriptions", c.subscriptions.length ?
      `${c.subscriptions.length}: ${c.subscriptions.slice(0, 3).join(", ")}` +
      (c.subscriptions.length > 3 ? ", …" : "") : "none");
    subs.title = c.subscriptions.join("\n");
    cell(row, "Queued", `${c.queued_frames} frames, ${c.queued_chars} chars`, "num");
    cell(row, "In flight", String(c.inflight), "num");
  }
  pager("connections", page.total);
}

function renderTokens(tokens) {
  const tbody = $("#tokens tbody");
  tbody.replaceChildren();
  for (const t of tokens) {
    const row = tbody.insertRow();
    row.dataset.name = t.name;
    cell(row, "Name", t.name, "id");
    cell(row, "Role", t.role);
    cell(row, "Created", t.created);
    cell(row, "Sessions", String(t.sessions), "num");
    cell(row, "Actions", "", "actions").append(button("Revoke", "revoke", () => act(
      `Revoke ${t.name}'s token and end its ${t.sessions} sessions`, "admin.token_revoke",
      { name: t.name })));
  }
  $("#tokens-count").textContent = `${tokens.length}`;
}

function renderBudgets(report) {
  figures($("#limits"), [...Object.entries(report.budgets), ...Object.entries(report.connection)]);
  const tbody = $("#hits tbody");
  tbody.replaceChildren();
  for (const h of report.hits) {
    const row = tbody.insertRow();
    cell(row, "Budget", h.budget);
    cell(row, "Who", h.who, "id");
    cell(row, "Times", String(h.count), "num");
    cell(row, "Last", `${h.last_s} s ago`, "num");
  }
  if (!report.hits.length) cell(tbody.insertRow(), "Budget", "nobody lately", "empty-row").colSpan = 4;
  const busiest = $("#inflight tbody");
  busiest.replaceChildren();
  for (const a of report.inflight) {
    const row = busiest.insertRow();
    cell(row, "Account", a.account, "id");
    cell(row, "In flight", String(a.inflight), "num");
  }
  if (!report.inflight.length) cell(busiest.insertRow(), "Account", "none", "empty-row").colSpan = 2;
}

function pager(list, total) {
  const offset = offsets[list];
  const box = document.querySelector(`.pager[data-list="${list}"]`);
  box.querySelector(".prev").disabled = offset === 0;
  box.querySelector(".next").disabled = offset + PAGE >= total;
  const shown = total ? `${offset + 1}–${Math.min(total, offset + PAGE)} of ${total}` : "none";
  $(`#${list}-count`).textContent = shown;
}

// One refresh at a time: a timer's tick or an action's while one is in flight has one more
// start after it (with the offsets and role as they are then), so an outage piles up none.
const refresh = oneAtATime(async () => {
  if (!client) return;
  // Settled, all of them, before the next refresh may start: a refusal of one ends none.
  const replies = await Promise.allSettled([
    ask("admin.overview"),
    ask("admin.worlds", { offset: offsets.worlds, limit: PAGE }),
    ask("admin.connections", { offset: offsets.connections, limit: PAGE, role: $("#role").value }),
    ask("admin.tokens"),
    ask("admin.budgets"),
  ]);
  const failed = replies.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  const [overview, worlds, connections, tokens, budgets] = replies.map((r) => r.value);
  renderOverview(overview);
  renderWorlds(worlds);
  renderConnections(connections);
  renderTokens(tokens.tokens);
  renderBudgets(budgets);
  document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed ?? 0) + 1);
});

/** The timer's refresh (none while the tab is hidden); its error shows until one succeeds. */
function tick() {
  if (document.hidden) return;
  refresh().then(ours(() => { if (tickFailed) showError(null); }), ours((err) => {
    showError(err);
    tickFailed = true;
  }));
}

function disconnect() {
  connection += 1; // a client let go reports its closing late: not the console's state
  clearInterval(timer);
  if (client) client.close();
  client = null;
  $("#console").hidden = true;
  say("closed", "not connected");
}

/** The server ended the console's session (its token was revoked: the notice, or the
 * refused hello of a reconnect after a 1008 close): back to the login form, saying why,
 * the token forgotten. */
function ended(err) {
  sessionStorage.removeItem(KEY);
  disconnect();
  showError(err);
}

async function connect(token) {
  disconnect();
  showError(null);
  say("connecting", "connecting…");
  const mine = connection;
  let connected;
  try {
    connected = await Client.connect(socketUrl(), {
      token, client: "admin-page/1.0",
      onStatus: (state, info) => {
        if (mine !== connection) return;
        if (state === "closed" && info.error) ended(info.error);
        else onStatus(state, info);
      },
    });
  } catch (err) {
    if (mine !== connection) return; // let go meanwhile (Forget, another login)
    say("error", "refused");
    showError(err);
    return;
  }
  if (mine !== connection) {
    connected.close();
    return;
  }
  client = connected;
  const { role } = client; // disconnect() lets the client go
  if (role !== "owner") {
    disconnect();
    showError(`this token is for the ${role} role; the console needs the owner token`);
    return;
  }
  sessionStorage.setItem(KEY, token);
  say("open", "live · owner");
  $("#console").hidden = false;
  await refresh().catch(ours(showError));
  if (mine === connection) timer = setInterval(tick, REFRESH);
}

$("#login").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("#token").value.trim();
  $("#token").value = "";
  if (token) connect(token);
});
$("#forget").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  disconnect();
});
$("#create").addEventListener("submit", (e) => {
  e.preventDefault();
  const name = $("#new-name").value.trim();
  if (!name || !client) return;
  ask("admin.token_create", { name, role: $("#new-role").value }).then(ours((made) => {
    $("#created").hidden = false;
    $("#created-name").textContent = `${made.name} (${made.role})`;
    $("#created-token").textContent = made.token;
    $("#new-name").value = "";
    showError(null);
    return refresh();
  })).catch(ours((err) => showError(err, $("#create"))));
});
$("#role").addEventListener("change", () => {
  offsets.connections = 0;
  refresh().catch(ours(showError));
});
for (const box of document.querySelectorAll(".pager")) {
  const list = box.dataset.list;
  box.querySelector(".prev").addEventListener("click", () => {
    offsets[list] = Math.max(0, offsets[list] - PAGE);
    refresh().catch(ours(showError));
  });
  box.querySelector(".next").addEventListener("click", () => {
    offsets[list] += PAGE;
    refresh().catch(ours(showError));
  });
}

const kept = sessionStorage.getItem(KEY);
if (kept) connect(kept);
