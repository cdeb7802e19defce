"use strict";
// The peer servers of `python -m bench peers` (bench/peers.py starts them; run from the
// package cache with NODE_PATH pointing at its node_modules):
//
//   node server.js colyseus memory        Colyseus 0.16, counter rooms kept in memory
//   node server.js colyseus sqlite DB     ... each add written to SQLite before the reply
//   node server.js echo                   a bare `ws` server sending every frame back
//
// Each prints `listening on http://127.0.0.1:PORT` once it accepts connections.
//
// Rooms (one class, three names):
//   counter          round trips: the counter in plain fields, nobody else watching, so
//                    an add is decide, (append), reply: the same work as our scratch.add
//                    to a world nobody subscribes to.
//   counter_watched  fan-out: the counter in a synchronized Schema state, so every client
//                    of the room gets the room's patches (every 50 ms, Colyseus's default).
//   lounge           idle connections: all join one room with no state.
//
// An add is `["add", {amount, note}]` (msgpack), checked as strictly as our server checks
// `scratch.add` (an integer |amount| <= 10^12, a note of at most 16,384 characters, no
// other key); the reply is `["added", {total, adds, revision}]`, or `["refused", {reason}]`.

const { Server, Room } = require("@colyseus/core");
const { WebSocketTransport } = require("@colyseus/ws-transport");
const { Schema, defineTypes } = require("@colyseus/schema");

const MAX_AMOUNT = 1e12;
const MAX_NOTE = 16384;
const HOST = "127.0.0.1";

class Counter extends Schema {
  constructor() {
    super();
    this.revision = 0;
    this.adds = 0;
    this.total = 0;
  }
}
// Field order is the wire order: bench/_colyseus.py decodes these three by index.
defineTypes(Counter, { revision: "uint32", adds: "uint32", total: "float64" });

function refusal(message) {
  if (message === null || typeof message !== "object" || Array.isArray(message)) {
    return "args: expected an object";
  }
  for (const key of Object.keys(message)) {
    if (key !== "amount" && key !== "note") return `args.${key}: unknown key`;
  }
  const { amount, note = "" } = message;
  if (!Number.isSafeInteger(amount)) return "args.amount: expected int";
  if (Math.abs(amount) > MAX_AMOUNT) return "args.amount: out of range";
  if (typeof note !== "string") return "args.note: expected str";
  if (note.length > MAX_NOTE) return "args.note: too long";
  return null;
}

// The store: the same tables and pragmas as our event store (server/storage/sqlite_writer.py),
// one transaction (one fsync) per add: better-sqlite3 is synchronous, so no group commit.
function openStore(path) {
  const Database = require("better-sqlite3");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec(`
    CREATE TABLE IF NOT EXISTS streams (name TEXT PRIMARY KEY, rev INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS events (
      stream TEXT NOT NULL, rev INTEGER NOT NULL, data TEXT NOT NULL,
      PRIMARY KEY (stream, rev)) WITHOUT ROWID;`);
  const insert = db.prepare("INSERT INTO events (stream, rev, data) VALUES (?, ?, ?)");
  const upsert = db.prepare("INSERT INTO streams (name, rev) VALUES (?, ?) "
    + "ON CONFLICT (name) DO UPDATE SET rev = excluded.rev");
  const append = db.transaction((stream, rev, text) => {
    insert.run(stream, rev, text);
    upsert.run(stream, rev);
  });
  return {
    append,
    settings: { journal_mode: db.pragma("journal_mode", { simple: true }),
                synchronous: db.pragma("synchronous", { simple: true }) },
  };
}

function serveColyseus(mode, dbPath) {
  const store = mode === "sqlite" ? openStore(dbPath) : null;

  class CounterRoom extends Room {
    onCreate(options) {
      this.watched = Boolean(options && options.watched);
      this.counter = this.watched ? new Counter() : { revision: 0, adds: 0, total: 0 };
      if (this.watched) this.setState(this.counter);
      this.onMessage("add", (client, message) => this.add(client, message));
    }

    add(client, message) {
      const reason = refusal(message);
      if (reason !== null) {
        client.send("refused", { reason });
        return;
      }
      const c = this.counter;
      const revision = c.revision + 1;
      if (store !== null) {
        const event = { type: "added", amount: message.amount, note: message.note ?? "" };
        store.append(this.roomId, revision, JSON.stringify(event));
      }
      c.revision = revision;
      c.adds += 1;
      c.total += message.amount;
      client.send("added", { total: c.total, adds: c.adds, revision });
    }
  }

  // Keepalive as our server's (Hypercorn's): a ping every 20 s, and no connection dropped
  // for a missing pong (Colyseus's default pings every 3 s and drops after 2 unanswered).
  // The load generator reads a connection only in its server's turns, so it answers
  // pings late, and any ping costs the client its share during every server's turn.
  const transport = new WebSocketTransport({ pingInterval: 20000,
                                             pingMaxRetries: Number.MAX_SAFE_INTEGER });
  const server = new Server({ transport, greet: false });
  server.define("counter", CounterRoom);
  server.define("counter_watched", CounterRoom, { watched: true });
  server.define("lounge", CounterRoom);
  server.listen(0, HOST).then(() => {
    const { port } = server.transport.server.address();
    if (store !== null) console.log(`store: ${JSON.stringify(store.settings)}`);
    console.log(`colyseus ${mode}: listening on http://${HOST}:${port}`);
  });
}

function serveEcho() {
  const { WebSocketServer } = require("ws");
  const wss = new WebSocketServer({ host: HOST, port: 0, perMessageDeflate: false });
  wss.on("connection", (ws) => {
    ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  wss.on("listening", () => {
    console.log(`echo: listening on http://${HOST}:${wss.address().port}`);
  });
}

// `bench peers` reads the memory of live objects only: SIGHUP asks for a full collection
// first (node --expose-gc; Colyseus takes SIGUSR2 for a graceful shutdown).
if (typeof global.gc === "function") process.on("SIGHUP", () => global.gc());

const [what, mode, dbPath] = process.argv.slice(2);
if (what === "colyseus" && (mode === "memory" || (mode === "sqlite" && dbPath))) {
  serveColyseus(mode, dbPath);
} else if (what === "echo") {
  serveEcho();
} else {
  console.error("usage: node server.js colyseus memory | colyseus sqlite DB | echo");
  process.exit(2);
}
