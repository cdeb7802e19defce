"""Static checks of a panel organism: the seed's table, parser-and-allowlist hardening,
then the seed's reference rows again over the panel as the browser parses it.

The seed's rules are text patterns over the raw source. The hardening parses the
source as an HTML5 fragment (selectolax/lexbor, which decodes entities the way the
browser will) and tokenizes every piece of CSS with tinycss2 (which resolves CSS
escapes), then admits only allowlisted tags, attributes, CSS functions and at-rules,
and selectors scoped under the panel's single root element (`panel_css`). A regex
denylist alone let backslashed, entity-encoded and relative references through; the
allowlist does not. What the allowlist admits (free text in allowed attributes, text,
CSS strings) is read once more, decoded, by the seed's reference rows.
"""

from __future__ import annotations

import re

import attrs
import tinycss2
from selectolax.lexbor import LexborHTMLParser, LexborNode

from actors.lab.panel_css import (
    Root,
    Token,
    declarations_reason,
    depth_reason,
    resolved_text,
    rules_reason,
)

# --- the seed's table, in the seed's order --------------------------------------------

# fmt: off
_FORBIDDEN_TAGS = ("html", "head", "body", "iframe", "object", "embed", "link", "meta", "base",
                   "form", "svg", "video", "audio", "source", "track")
# fmt: on

SEED_RULES = (
    ("contains script", re.compile(r"</?script", re.IGNORECASE), True),
    ("forbidden tag", re.compile(rf"</?(?:{'|'.join(_FORBIDDEN_TAGS)})\b", re.IGNORECASE), True),
    ("no style block", re.compile(r"<style", re.IGNORECASE), False),
    ("event handler attribute", re.compile(r"(?:^|[\s/\"'])on[a-z]+\s*=", re.IGNORECASE), True),
    ("external reference", re.compile(r"https?://", re.IGNORECASE), True),
    (
        "protocol-relative reference",
        # possessive `\s*+`: a run of spaces after `=` is not split every way between the two
        re.compile(r"(?:[=(,:]\s*+[\"']?|[\"'])\s*+//[a-z0-9-]+(?:\.[a-z0-9-]+)+",
                   re.IGNORECASE),
        True,
    ),
    (
        "forbidden url scheme",
        re.compile(r"\b(?:javascript|data|blob|file|vbscript):", re.IGNORECASE),
        True,
    ),
    ("css import", re.compile(r"@import", re.IGNORECASE), True),
    ("css url()", re.compile(r"url\(", re.IGNORECASE), True),
)

# --- allowlists ------------------------------------------------------------------------

# fmt: off
ALLOWED_TAGS = frozenset({
    "style", "div", "span", "p", "h1", "h2", "h3", "h4", "h5", "h6", "section", "header",
    "footer", "main", "article", "aside", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead",
    "tbody", "tfoot", "tr", "th", "td", "caption", "strong", "em", "b", "i", "u", "s", "small",
    "sub", "sup", "br", "hr", "code", "pre", "kbd", "samp", "var", "abbr", "mark", "figure",
    "figcaption", "label", "meter", "progress", "time", "output", "blockquote", "q", "cite",
    "del", "ins", "button",
})
ALLOWED_ATTRS = frozenset({
    "class", "id", "title", "role", "style", "lang", "dir", "hidden", "colspan", "rowspan",
    "scope", "value", "min", "max", "low", "high", "optimum", "datetime", "disabled", "type",
})
ALLOWED_ATTR_PREFIXES = ("aria-", "data-")
# Attribute values that are not free text: a `type` may only name a plain button.
ALLOWED_TYPES = frozenset({"button"})
# fmt: on
_HTML_DIRECT = frozenset({"style", "-text", "-comment"})


def _tags_reason(elements: list[LexborNode]) -> str | None:
    for node in elements:
        if node.tag not in ALLOWED_TAGS:
            return "tag not allowed"
    return None


def _attrs_reason(elements: list[LexborNode]) -> str | None:
    for node in elements:
        for name, value in node.attributes.items():
            low = name.lower()
            if low not in ALLOWED_ATTRS and not low.startswith(ALLOWED_ATTR_PREFIXES):
                return "attribute not allowed"
            if low == "type" and (value or "").strip().lower() not in ALLOWED_TYPES:
                return "attribute not allowed"
    return None


@attrs.frozen
class Parsed:
    """A panel as the browser parses it: the fragment's top-level nodes, every element in
    document order, and the CSS tokens of each style element and each style attribute."""

    top: list[LexborNode]
    elements: list[LexborNode]
    sheets: list[list[Token]]
    inline: list[list[Token]]


def parse(code: str) -> Parsed:
    """Parse a panel once, markup and CSS, for every rule that reads it."""
    parser = LexborHTMLParser(code, is_fragment=True)
    top = list(parser.root.iter(include_text=True)) if parser.root is not None else []
    elements = [n for t in top for n in t.traverse(include_text=False) if not n.tag.startswith("-")]
    return Parsed(
        top, elements,
        [tinycss2.parse_component_value_list(n.text() or "") for n in elements
         if n.tag == "style"],
        [tinycss2.parse_component_value_list(v) for n in elements
         if (v := n.attributes.get("style"))])


def hardening_reason(parsed: Parsed) -> str | None:
    """The first parser/allowlist rule the (seed-clean) parsed panel breaks, or None."""
    top, elements = parsed.top, parsed.elements
    reason = _tags_reason(elements) or _attrs_reason(elements)
    if reason:
        return reason
    if len(parsed.sheets) != 1:
        return "multiple style blocks" if parsed.sheets else "no style block"
    roots = [n for n in top if n.tag not in _HTML_DIRECT]
    stray_text = any(n.tag == "-text" and (n.text_content or "").strip() for n in top)
    if len(roots) != 1 or stray_text:
        return "no single root element"
    root_node = roots[0]
    root = Root(frozenset((root_node.attributes.get("class") or "").split()),
                root_node.attributes.get("id"))
    if not root.classes and not root.id:
        return "root element has no class or id"
    reason = next(filter(None, map(depth_reason, parsed.sheets + parsed.inline)), None)
    if reason:
        return reason
    sheet = tinycss2.parse_stylesheet(parsed.sheets[0], skip_whitespace=True, skip_comments=True)
    reason = rules_reason(sheet, root)
    for tokens in parsed.inline:
        reason = reason or declarations_reason(tokens, root, None)
    return reason


# --- the seed's reference rows over the parsed panel ------------------------------------

# The rows about what a value refers to; the tag rows are the allowlist's already.
REFERENCE_RULES = SEED_RULES[4:]
_URL_STRIPPED = str.maketrans("", "", "\t\n\r")  # the URL parser drops these anywhere
_APART = "\n\0"  # between parts: no rule matches across it (the parser never yields NUL)


def parsed_view(parsed: Parsed) -> str:
    """The panel as the browser holds it: every attribute as `name="decoded value"` (tab
    and newlines dropped, as a URL parser drops them), every text node decoded, and every
    piece of CSS with its escapes resolved (`panel_css.resolved_text`)."""
    parts = []
    for node in (n for t in parsed.top for n in t.traverse(include_text=True)):
        if node.tag == "-text":
            parts.append(node.text_content or "")
            continue
        for name, value in node.attributes.items():
            parts.append(f' {name}="{(value or "").translate(_URL_STRIPPED)}"')
    parts.extend(resolved_text(tokens) for tokens in parsed.sheets + parsed.inline)
    return _APART.join(parts)


def panel_reason(code: str) -> str | None:
    """Seed rules, hardening rules, then the seed's reference rows over the parsed panel;
    None when the panel passes."""
    for reason, pattern, reject_on_match in SEED_RULES:
        if (pattern.search(code) is not None) == reject_on_match:
            return reason
    parsed = parse(code)
    reason = hardening_reason(parsed)
    if reason:
        return reason
    view = parsed_view(parsed)
    for reason, pattern, _ in REFERENCE_RULES:
        if pattern.search(view) is not None:
            return reason
    return None
