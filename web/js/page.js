// Small helpers every page shares (the protocol client is /js/client.js).

/** What the status says while a followed world refuses the client (`onStatus("refused",
 * info)`, a Client's report) and the client subscribes again. */
const refusal = (info) => `${info.error.message}; trying again`;

/** The page's #status line as it follows the connection: `say(state, text)` shows (and keeps)
 * the page's own word; `onStatus`, a Client's option, shows the connection's state while it
 * is away ("reconnecting", "closed"), a followed world's refusal (`refusal`, an "error") while
 * the client subscribes again, and the page's last word again once it is open. `note(text)`
 * shows the page's secondary note (a reading that failed) beside whichever of them is shown,
 * never in its place, until the page notes another or clears it (`note(null)`, on success). */
export function statusLine() {
  const el = document.getElementById("status");
  let said = [el?.dataset.state ?? "", el?.textContent ?? ""]; // the page's, before any word
  let shown = said; // the page's word or the connection's
  let noted = null; // the note beside it
  const show = (state, text) => {
    shown = [state, text];
    if (!el) return;
    el.dataset.state = state;
    if (noted === null) el.textContent = text;
    else el.replaceChildren(text, Object.assign(document.createElement("span"),
      { className: "note", textContent: noted }));
  };
  const say = (state, text) => {
    said = [state, text];
    show(state, text);
  };
  const onStatus = (state, info) => show(...(state === "open" ? said
    : state === "refused" ? ["error", refusal(info)] : [state, state]));
  const note = (text) => {
    if ((text || null) === noted) return; // unchanged: nothing repainted
    noted = text || null;
    show(...shown);
  };
  return { say, onStatus, note };
}

/** `task` (async, no arguments) run one at a time. A call while a run is in flight starts
 * none: it has one more run start once that one settles, shared by every call meanwhile, and
 * settles with it. A page reading on a timer through an outage so waits on one request, not
 * on one per tick. */
export function oneAtATime(task) {
  let running = null; // the run in flight
  let next = null; // the run after it
  const run = () => {
    if (running) return (next ??= running.then(again, again));
    running = task().finally(() => { running = null; });
    return running;
  };
  const again = () => {
    next = null;
    return run();
  };
  return run;
}

/** `s` as text safe inside HTML (elements and attribute values). */
export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// What would end an isolate around a text early, letting an override in it reverse the text
// after: the isolate controls (its PDI closes the isolate; an LRI, RLI or FSI takes the
// isolate's own PDI) and the paragraph separators (which close every isolate).
const ISOLATES = /[\u2066-\u2069]/g;
const PARAGRAPHS = /[\u001c-\u001e\u0085\u2029]/g;

/** `s` (anyone's text) fit to sit in a direction isolate: its isolate controls dropped, its
 * paragraph separators made spaces (embeddings and overrides end with the isolate). */
export function contained(s) {
  return String(s).replace(ISOLATES, "").replace(PARAGRAPHS, " ");
}

/** `s` (anyone's name) as a direction isolate inside a line of text: a right-to-left mark or
 * override in it cannot reorder the text around it. */
export function isolated(s) {
  return `\u2068${contained(s)}\u2069`;
}

/** `s` (anyone's name) as the HTML of a `<bdi>` element, the isolate of markup. */
export function bdi(s) {
  return `<bdi>${escapeHtml(contained(s))}</bdi>`;
}
