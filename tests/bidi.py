"""Names that would reorder a page's line around them, and a check, in the browser, that the
text after such a name is shown in order after it."""

from __future__ import annotations

from typing import Any

# Each gets out of a direction isolate drawn around it as it is: a PDI closes the isolate
# early and a paragraph separator closes every isolate, so the override after it reverses
# the rest of the line; an LRI takes the isolate's own PDI, so the rest of the line joins
# the right-to-left name's isolate and is shown before it.
ESCAPES = ("pdi\u2069\u202eoverride", "para\u2029\u202eoverride", "\u05e9\u05dc\u05d5\u05dd\u2066lri")

# Per element of `selector`: whether the last occurrence of `text` in its text reads left to
# right, each of its characters right of everything before it (null: no such text).
_IN_ORDER = """([selector, text]) => [...document.querySelectorAll(selector)].map((el) => {
  const chars = [];
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
  }
  const at = chars.map(([node, i]) => node.data[i]).join("").lastIndexOf(text);
  if (at < 0) return null;
  const box = ([node, i]) => {
    const range = document.createRange();
    range.setStart(node, i);
    range.setEnd(node, i + 1);
    return range.getBoundingClientRect();
  };
  const before = chars.slice(0, at).map(box).filter((b) => b.width > 0);
  const after = chars.slice(at, at + text.length).map(box).filter((b) => b.width > 0);
  const edge = Math.max(...before.map((b) => b.right));
  return after.every((b, k) => b.left >= edge - 0.5 && (k === 0 || b.left > after[k - 1].left));
})"""


def in_order(page: Any, selector: str, text: str) -> list[bool | None]:
    """For each element of `selector`: whether the last `text` in it is shown in reading
    order after everything before it on its line (the line must not wrap), None where the
    element holds no such text."""
    return page.evaluate(_IN_ORDER, [selector, text])
