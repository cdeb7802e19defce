// Small helpers every page shares (the protocol client is /js/client.js).

/** Show the connection's state in the page's #status element (none: nothing). */
export function setStatus(state, text) {
  const el = document.getElementById("status");
  if (!el) return;
  el.dataset.state = state;
  el.textContent = text;
}

/** `s` as text safe inside HTML (elements and attribute values). */
export function escapeHtml(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

/** `s` (anyone's name) as a direction isolate inside a line of text: a right-to-left mark or
 * override in it cannot reorder the text around it. */
export function isolated(s) {
  return `\u2068${s}\u2069`;
}
