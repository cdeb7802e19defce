// The browser's protocol client for /ws: hello, request/reply by id, subscribe,
// reconnect with backoff and resume. No dependencies, no build step.
//
//   import { Client } from "/js/client.js";
//   const c = await Client.connect();                       // a spectator on this page's host
//   const sub = c.subscribe("lobby:main", (push) => { ... }); // push: {topic, rev, kind, data}
//   const result = await c.request("lobby.list", "lobby:main", {});
//
// After a drop the client reconnects (exponential backoff with jitter), says hello
// again and resubscribes each topic with `since` = the last revision it delivered,
// so a callback sees each event once, in order, or a snapshot when the gap is too
// old for the server's history. A `resync` push is handled the same way. A resubscribe
// the server refuses (a world an admin stopped) is reported (`onStatus("refused")`) and
// tried again with backoff until it succeeds or is closed; then the refusal of another
// topic still refused is said again, or, once none is, `onStatus("open")`.
//
// An anonymous caller says hello again with the `key` its first hello's reply gave, so a
// reconnect is the same caller; with `rememberKey` the key is kept in localStorage, so the
// next visit (a reload) is the same caller too: the owner of the runs it created.
//
// Frames go out no faster than the connection's token bucket refills (the hello reply
// names its `rate` and `burst`; the client keeps a tenth under both, for the network's
// jitter), so a caller that outruns it waits instead of being refused `rate_limited`.
//
// Every request carries a `request_id` (a fresh random one unless given): a write sent
// again with it is applied once and answered with its first result. A request id is its
// caller's own (the token's name, or the anonymous caller its `key` stands for, which a
// reconnect keeps): sent by another caller it is another write. A request whose
// socket dropped before its reply is sent again, with the same id, once the client has
// reconnected (until its timeout); with `retry: false` it rejects ConnectionLost
// instead, whose `requestId` names the id to resend with.
//
// A request or subscription refused because its client spent its server time
// (`over_budget` `cpu`: the server says "slow down" and when it refills, `retry_after`)
// is sent again once that time has passed, when it passes before the request's timeout;
// otherwise the refusal is the caller's. (The server reads nothing more from the socket
// meanwhile: what a page sends waits its turn either way.)

export const PROTOCOL_VERSION = 1;
const PACE_MARGIN = 0.9; // of the server's frame rate and burst the client allows itself
const KEY_ITEM = "petridish.key"; // localStorage: the anonymous caller's key (rememberKey)
const KEY_RE = /^[A-Za-z0-9_-]{16,64}$/; // a key as the server hands one out (protocol/envelope.py)

/** The wait before attempt `attempt` (0, 1, ...): `base` ms doubling, at most `max`. */
export const backoff = (attempt, base, max) => Math.min(max, base * 2 ** Math.min(attempt, 20));

/** The key a past visit kept, if storage allows one and it is well formed. */
function storedKey() {
  try {
    const key = localStorage.getItem(KEY_ITEM);
    return key && KEY_RE.test(key) ? key : null;
  } catch {
    return null; // storage refused: this visit's own key
  }
}

function keepKey(key) {
  try {
    localStorage.setItem(KEY_ITEM, key);
  } catch { /* storage refused: the key lasts this visit */ }
}

/** The connection's token bucket as the client keeps it: a frame waits for a token. */
class Pace {
  constructor(rate, burst) {
    this.rate = rate * PACE_MARGIN;
    this.burst = Math.max(1, burst * PACE_MARGIN);
    this.level = this.burst - 1; // the hello spent one
    this.at = performance.now();
  }

  async spend() {
    for (;;) {
      const now = performance.now();
      this.level = Math.min(this.burst, this.level + ((now - this.at) / 1000) * this.rate);
      this.at = now;
      if (this.level >= 1) {
        this.level -= 1;
        return;
      }
      await new Promise((wake) => setTimeout(wake, ((1 - this.level) / this.rate) * 1000));
    }
  }

  /** The pace a hello reply names, or null when it names none. */
  static of(hello) {
    const ok = (x) => typeof x === "number" && x > 0;
    return ok(hello.rate) && ok(hello.burst) ? new Pace(hello.rate, hello.burst) : null;
  }
}

/** The server refused a request: `code` is one of the documented error codes. */
export class RequestError extends Error {
  constructor(code, message, detail) {
    super(`${code}: ${message}`);
    this.name = "RequestError";
    this.code = code;
    this.detail = detail ?? {};
  }
}

/** The socket closed before the reply came; the request may or may not have run. */
export class ConnectionLost extends Error {
  constructor(message, requestId = null) {
    super(message);
    this.name = "ConnectionLost";
    this.requestId = requestId; // resend the write with it: it is applied at most once
  }
}

/** A fresh random request id: 22 hex digits (11 random bytes). */
export function newRequestId() {
  const bytes = crypto.getRandomValues(new Uint8Array(11)); // also where randomUUID is not
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Milliseconds until `err`, a refusal of a client whose server time is spent, may be sent
 * again; null for any other error. */
function restOf(err) {
  const wait = err instanceof RequestError && err.code === "over_budget" &&
    err.detail.budget === "cpu" ? err.detail.retry_after : undefined;
  return typeof wait === "number" && wait >= 0 ? wait * 1000 : null;
}

/** ws:// or wss:// URL of `path` on the host that served this page. */
export function socketUrl(path = "/ws") {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${path}`;
}

/** One followed topic; `close()` unsubscribes. */
class Subscription {
  constructor(client, topic, onPush, since) {
    this.client = client;
    this.topic = topic;
    this.onPush = onPush;
    this.lastRev = since ?? null; // the last revision handed to onPush
    this.result = null; // the latest subscribe reply
    this.retry = null; // the timer of a refused resubscribe's next attempt
    this.refused = null; // its last resubscribe's refusal (onStatus info), while it stands
  }

  /** Deliver one push, dropping events already delivered before a resume. */
  deliver(push) {
    if (this.lastRev !== null) {
      if (push.kind === "snapshot" && push.rev < this.lastRev) return;
      if (push.kind === "events") {
        const fresh = push.rev - this.lastRev;
        if (fresh <= 0) return;
        if (fresh < push.data.length) push = { ...push, data: push.data.slice(-fresh) };
      }
    }
    this.lastRev = push.rev;
    this.onPush(push);
  }

  close() {
    clearTimeout(this.retry);
    this.client._unsubscribe(this);
  }
}

export class Client {
  /**
   * Open a socket and say hello; resolves once the server replied (role known).
   * options: token, client ("name/1.0"), onStatus(status, info) where status is
   * "open" (info.role), "closed" (info.error: why, when the server ended the session: its
   * `unauthorized` notice, or a reconnect's refused hello), "reconnecting" (info.delay in
   * ms) or "refused" (a resubscribe: info.topic, info.error, info.delay), maxDelay (ms),
   * rememberKey.
   */
  static async connect(url = socketUrl(), options = {}) {
    const client = new Client(url, options);
    await client._open();
    return client;
  }

  constructor(url, { token = null, client = "petridish-js/1.0", onStatus = () => {}, maxDelay = 5000,
                     rememberKey = false } = {}) {
    this.url = url;
    this.token = token;
    this.rememberKey = rememberKey;
    // an anonymous caller's key, from the first hello's reply (or a past visit's)
    this.key = rememberKey ? storedKey() : null;
    this.clientName = client;
    this.onStatus = onStatus;
    this.maxDelay = maxDelay;
    this.role = null;
    this.hello = null;
    this.ended = null; // why the server ended the session: its notice, or a refused hello
    this._pace = null; // the current socket's (null: the server names none)
    this.connections = 0;
    this._ws = null;
    this._nextId = 1;
    this._pending = new Map(); // id -> {resolve, reject, op}
    this._subs = new Map(); // topic -> Subscription
    this._closed = false;
    this._attempt = 0;
    this._waiters = []; // request() calls waiting for a greeted socket
  }

  /**
   * Send one request; resolves with its result, rejects with RequestError (refused;
   * `too_large` at once, unsent, for a frame over the hello's `max_frame`),
   * ConnectionLost (socket dropped first, with `retry: false`) or an Error named
   * "TimeoutError" (no reply within `timeout` ms; a `retry`'s attempts share them). It
   * carries `requestId` (default: a fresh one) and is sent again with that id after a
   * drop unless `retry` is false, and after its client's server time refilled (`cpu`).
   */
  async request(op, to = null, args = null, { timeout = 30000, requestId = null, retry = true } = {}) {
    const frame = { op, request_id: requestId ?? newRequestId() };
    if (to !== null) frame.to = to;
    if (args !== null) frame.args = args;
    const deadline = Date.now() + timeout;
    for (;;) {
      try {
        return await this._call(frame, Math.max(0, deadline - Date.now()));
      } catch (err) {
        if (!(err instanceof ConnectionLost)) throw err;
        if (!retry || this._closed || Date.now() >= deadline) {
          throw new ConnectionLost(err.message, frame.request_id);
        }
      }
    }
  }

  /**
   * Follow `topic`: onPush({topic, rev, kind, data}) for each snapshot and batch of
   * events. `sub.ready` resolves with the subscribe reply, or rejects with the
   * RequestError that refused it (the subscription is then forgotten).
   */
  subscribe(topic, onPush, { since = null } = {}) {
    if (this._subs.has(topic)) throw new Error(`already subscribed to ${topic}`);
    const sub = new Subscription(this, topic, onPush, since);
    this._subs.set(topic, sub);
    sub.ready = this._sendSubscribe(sub).catch((err) => {
      if (err instanceof RequestError && this._subs.get(topic) === sub) this._subs.delete(topic);
      throw err;
    });
    sub.ready.catch(() => {}); // only callers who await `ready` see the refusal
    return sub;
  }

  /** Close for good: no reconnect; pending requests reject. */
  close() {
    this._closed = true;
    if (this._ws) this._ws.close(1000);
    this._failPending(new ConnectionLost("the client was closed"));
    for (const wake of this._waiters.splice(0)) wake(); // they see _closed and throw
  }

  // ---- internals -----------------------------------------------------------

  _open() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url);
      let greeted = false;
      ws.onopen = () => {
        if (this._closed) {
          ws.close(1000); // the client was closed while this socket was opening
          return;
        }
        const hello = { op: "hello", protocol: PROTOCOL_VERSION, id: 0, client: this.clientName };
        if (this.token) hello.token = this.token;
        else if (this.key) hello.key = this.key; // the same anonymous caller after a drop
        ws.send(JSON.stringify(hello));
      };
      ws.onmessage = (msg) => {
        const frame = JSON.parse(msg.data);
        if (!greeted) {
          if (!frame.ok) {
            const err = frame.error ?? {};
            this._closed = true; // a refused hello will be refused again
            this.ended = new RequestError(err.code, err.message, err.detail);
            ws.close(1000);
            reject(this.ended);
            return;
          }
          greeted = true;
          this.hello = frame.result ?? {};
          this.role = this.hello.role ?? null;
          this.key = this.hello.key ?? this.key ?? null;
          if (this.rememberKey && this.key) keepKey(this.key);
          this._pace = Pace.of(this.hello);
          this.connections += 1;
          this._attempt = 0;
          this._ws = ws;
          this.onStatus("open", { role: this.role });
          for (const sub of this._subs.values()) sub.refused = null; // said by this socket anew
          for (const sub of this._subs.values()) this._resubscribe(sub);
          for (const wake of this._waiters.splice(0)) wake();
          resolve(this);
          return;
        }
        this._receive(frame);
      };
      ws.onclose = () => {
        if (this._ws === ws) this._ws = null;
        this._failPending(new ConnectionLost("the connection closed before the reply"));
        if (!greeted && this.connections === 0) {
          reject(new ConnectionLost(`could not open ${this.url}`));
          return;
        }
        if (this._closed) {
          // A refused hello on a reconnect closes for good: requests waiting for a
          // greeted socket must fail rather than wait forever.
          for (const wake of this._waiters.splice(0)) wake();
          this.onStatus("closed", this.ended ? { error: this.ended } : {});
          return;
        }
        this._reconnectLater();
      };
    });
  }

  _reconnectLater() {
    const base = backoff(this._attempt, 100, this.maxDelay);
    const delay = base * (0.75 + Math.random() * 0.5); // jitter: no thundering herd
    this._attempt += 1;
    this.onStatus("reconnecting", { delay });
    setTimeout(() => {
      if (!this._closed) this._open().catch(() => {}); // onclose schedules the next attempt
    }, delay);
  }

  _receive(frame) {
    if ("topic" in frame) {
      const sub = this._subs.get(frame.topic);
      if (!sub) return;
      if (frame.kind === "resync") {
        // The server dropped us from the topic: subscribe again from what we delivered.
        this._resubscribe(sub);
      } else {
        sub.deliver(frame);
      }
      return;
    }
    if (frame.id === null && frame.error?.code === "unauthorized") {
      // The server ends this session (its token was revoked) and closes 1008 next: a hello
      // with the token would be refused, so the client closes for good, saying why.
      const err = frame.error;
      this._closed = true;
      this.ended = new RequestError(err.code, err.message, err.detail);
      return;
    }
    const pending = this._pending.get(frame.id);
    if (!pending) return;
    this._pending.delete(frame.id);
    if (frame.ok) pending.resolve(frame.result);
    else {
      const err = frame.error ?? {};
      pending.reject(new RequestError(err.code, err.message, err.detail));
    }
  }

  async _call(frame, timeout, wanted = () => true) {
    // The timeout counts from here: waiting for a reconnect, a token or a budget's refill
    // spends it too. A frame refused for spent server time is sent again on the socket
    // that refused it, while `wanted()`; a drop meanwhile is a drop like any other.
    const deadline = performance.now() + timeout;
    for (;;) {
      try {
        return await this._send(frame, deadline, timeout);
      } catch (err) {
        const ws = this._ws;
        const rest = restOf(err);
        if (rest === null || this._closed || performance.now() + rest >= deadline) throw err;
        await new Promise((wake) => setTimeout(wake, rest));
        if (this._closed) throw new ConnectionLost("the client is closed");
        if (this._ws !== ws) throw new ConnectionLost("the connection dropped while it waited");
        if (!wanted()) throw err;
      }
    }
  }

  async _send(frame, deadline, timeout) {
    const timedOut = () => {
      const err = new Error(`${frame.op} got no reply within ${timeout} ms`);
      err.name = "TimeoutError";
      return err;
    };
    // The token is the bucket's of the socket the frame goes out on: one spent before a
    // drop is spent again on the new socket (a backlog would burst past its bucket).
    for (;;) {
      while (!this._ws) {
        if (this._closed) throw new ConnectionLost("the client is closed");
        const left = deadline - performance.now();
        if (left <= 0) throw timedOut();
        await new Promise((wake) => {
          // A waiter that times out leaves the list: a page asking on a timer through a
          // long outage would otherwise keep one for every request it made.
          const waiter = () => { clearTimeout(timer); wake(); };
          const timer = setTimeout(() => {
            const at = this._waiters.indexOf(waiter);
            if (at !== -1) this._waiters.splice(at, 1);
            wake();
          }, left);
          this._waiters.push(waiter);
        });
      }
      const ws = this._ws;
      if (this._pace) await this._pace.spend();
      if (this._ws === ws) break;
    }
    const id = this._nextId++;
    frame.id = id;
    const text = JSON.stringify(frame);
    // The server answers a frame over max_frame with no id to match: refuse it as it would.
    const limit = this.hello.max_frame;
    if (typeof limit === "number" && new TextEncoder().encode(text).length > limit) {
      const message = `the frame is longer than ${limit} bytes`;
      throw new RequestError("too_large", message, { max_frame: limit });
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(id);
        reject(timedOut());
      }, Math.max(0, deadline - performance.now()));
      const settle = (fn) => (value) => { clearTimeout(timer); fn(value); };
      this._pending.set(id, { resolve: settle(resolve), reject: settle(reject), op: frame.op });
      this._ws.send(text);
    });
  }

  async _sendSubscribe(sub) {
    const frame = { op: "subscribe", to: sub.topic };
    if (sub.lastRev !== null) frame.since = sub.lastRev;
    sub.result = await this._call(frame, 30000, () => this._subs.get(sub.topic) === sub);
    return sub.result;
  }

  /** Subscribe `sub` again; a refusal is reported and retried with backoff while it is
   * followed (a drop leaves it to the reconnect, which resubscribes). */
  async _resubscribe(sub, attempt = 0) {
    clearTimeout(sub.retry);
    try {
      await this._sendSubscribe(sub);
      if (this._subs.get(sub.topic) !== sub) return; // let go meanwhile: its close said it
      const was = sub.refused;
      sub.refused = null;
      if (was || attempt > 0) this._sayRefusals();
    } catch (error) {
      if (!(error instanceof RequestError) || this._closed || this._subs.get(sub.topic) !== sub) return;
      const delay = backoff(attempt, 250, this.maxDelay);
      sub.refused = { topic: sub.topic, error, delay };
      this.onStatus("refused", sub.refused);
      clearTimeout(sub.retry); // one pending attempt, however many refusals came
      sub.retry = setTimeout(() => this._resubscribe(sub, attempt + 1), delay);
    }
  }

  /** A refused topic was followed again or let go: say a refusal still standing (another
   * topic's), else "open". */
  _sayRefusals() {
    const standing = [...this._subs.values()].find((s) => s.refused);
    if (standing) this.onStatus("refused", standing.refused);
    else this.onStatus("open", { role: this.role });
  }

  _unsubscribe(sub) {
    if (this._subs.get(sub.topic) !== sub) return;
    this._subs.delete(sub.topic);
    if (!this._ws) return;
    this._call({ op: "unsubscribe", to: sub.topic }, 5000).catch(() => {});
    if (sub.refused) this._sayRefusals();
  }

  _failPending(error) {
    for (const pending of this._pending.values()) pending.reject(error);
    this._pending.clear();
  }
}
