"""Static checks of a panel organism: the seed's table, then parser-and-allowlist hardening.

The seed's rules are text patterns over the raw source. The hardening parses the
source as an HTML5 fragment (selectolax/lexbor, which decodes entities the way the
browser will) and tokenizes every piece of CSS with tinycss2 (which resolves CSS
escapes), then admits only allowlisted tags, attributes, CSS functions and at-rules,
and selectors scoped under the panel's single root element. A regex denylist alone let
backslashed, entity-encoded and relative references through; the allowlist does not.
"""

from __future__ import annotations

import itertools
import re

import tinycss2
from selectolax.lexbor import LexborHTMLParser, LexborNode

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
        re.compile(r"(?:[=(,:]\s*[\"']?|[\"'])\s*//[a-z0-9-]+(?:\.[a-z0-9-]+)+", re.IGNORECASE),
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
ALLOWED_FUNCTIONS = frozenset({
    "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color-mix", "calc",
    "min", "max", "clamp", "var", "linear-gradient", "radial-gradient", "conic-gradient",
    "repeating-linear-gradient", "repeating-radial-gradient", "repeating-conic-gradient",
    "translate", "translatex", "translatey", "rotate", "scale", "scalex", "scaley", "skew",
    "skewx", "skewy", "matrix", "cubic-bezier", "steps", "minmax", "repeat", "fit-content",
    "drop-shadow", "blur", "brightness", "contrast", "saturate", "hue-rotate", "opacity",
    "grayscale", "invert", "sepia",
})
# Pseudo-class functions of selectors: they only match elements and cannot load anything
# (scoping is still judged on the selector's first compound, outside any of them).
SELECTOR_FUNCTIONS = frozenset({
    "not", "is", "where", "has", "nth-child", "nth-last-child", "nth-of-type",
    "nth-last-of-type", "lang", "dir",
})
ALLOWED_AT_RULES = frozenset({"media", "keyframes", "supports"})
# "System or generic font families only": CSS generic families plus fonts that ship with
# common operating systems. Nothing else can load anyway (no @font-face, no url()).
ALLOWED_FONT_FAMILIES = frozenset({
    "serif", "sans-serif", "monospace", "cursive", "fantasy", "system-ui", "ui-serif",
    "ui-sans-serif", "ui-monospace", "ui-rounded", "math", "emoji", "fangsong", "inherit",
    "initial", "unset", "revert", "-apple-system", "blinkmacsystemfont", "segoe ui", "roboto",
    "helvetica", "helvetica neue", "arial", "verdana", "tahoma", "trebuchet ms", "georgia",
    "times", "times new roman", "courier", "courier new", "menlo", "monaco", "consolas",
    "sf mono", "ubuntu", "ubuntu mono", "cantarell", "dejavu sans", "dejavu sans mono",
    "dejavu serif", "liberation sans", "liberation serif", "liberation mono", "noto sans",
    "noto serif", "noto sans mono", "lucida grande", "lucida console", "palatino",
})
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


def _walk_tokens(tokens, functions: frozenset[str] = ALLOWED_FUNCTIONS) -> str | None:
    """Reject resource-loading tokens anywhere in a component-value list (recursively):
    url tokens, and functions outside `functions`."""
    for tok in tokens:
        kind = tok.type
        if kind == "url":
            return "css function not allowed"
        if kind == "function":
            if tok.lower_name not in functions:
                return "css function not allowed"
            reason = _walk_tokens(tok.arguments, functions)
        elif kind in ("() block", "[] block", "{} block"):
            reason = _walk_tokens(tok.content, functions)
        elif kind == "error":
            return "css parse error"
        else:
            reason = None
        if reason:
            return reason
    return None


def _font_family_reason(value) -> str | None:
    """Every comma-separated family must be generic or a common system font."""
    families: list[list[str]] = [[]]
    for tok in value:
        if tok.type == "literal" and tok.value == ",":
            families.append([])
        elif tok.type in ("ident", "string"):
            families[-1].append(tok.value.lower())
        elif tok.type not in ("whitespace", "comment"):
            return "font family not allowed"
    if any(" ".join(f) not in ALLOWED_FONT_FAMILIES for f in families):
        return "font family not allowed"
    return None


# `font` shorthand: the size keywords that end the style/weight part, and the values
# that stand alone (system fonts and CSS-wide keywords), naming no family at all.
_FONT_SIZE_WORDS = frozenset({
    "xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large",
    "larger", "smaller",
})
_FONT_ALONE = frozenset({
    "caption", "icon", "menu", "message-box", "small-caption", "status-bar", "inherit",
    "initial", "unset", "revert", "revert-layer",
})


def _font_shorthand_reason(value) -> str | None:
    """The `font` shorthand's families (after the size and any `/ line-height`) obey
    the same allowlist as `font-family`, so the shorthand is no way around it."""
    toks = [t for t in value if t.type not in ("whitespace", "comment")]
    if len(toks) == 1 and toks[0].type == "ident" and toks[0].lower_value in _FONT_ALONE:
        return None
    for k, tok in enumerate(toks):
        if tok.type in ("dimension", "percentage", "function") or (
            tok.type == "ident" and tok.lower_value in _FONT_SIZE_WORDS
        ):
            families = toks[k + 1 :]
            if families and families[0].type == "literal" and families[0].value == "/":
                families = families[2:]
            return _font_family_reason(families) if families else "font family not allowed"
    return "font family not allowed"


def _declarations_reason(content) -> str | None:
    for item in tinycss2.parse_blocks_contents(content, skip_whitespace=True, skip_comments=True):
        if item.type == "error":
            return "css parse error"
        if item.type == "at-rule":
            return "css at-rule not allowed"
        if item.type == "declaration":
            reason = _walk_tokens(item.value)
            if reason is None and item.lower_name == "font-family":
                reason = _font_family_reason(item.value)
            elif reason is None and item.lower_name == "font":
                reason = _font_shorthand_reason(item.value)
        else:  # nested qualified rule (CSS nesting): its prelude is relative to the parent
            reason = _walk_tokens(item.prelude, SELECTOR_FUNCTIONS) or _declarations_reason(
                item.content or []
            )
        if reason:
            return reason
    return None


def _split_selectors(prelude) -> list[list]:
    groups: list[list] = [[]]
    for tok in prelude:
        if tok.type == "literal" and tok.value == ",":
            groups.append([])
        else:
            groups[-1].append(tok)
    return groups


def _scoped(selector: list, root_classes: set[str], root_id: str | None) -> bool:
    """True when the selector's first compound names the root by class or id and the
    selector goes no further than the root itself or its descendants (no `+` or `~`)."""
    toks = [t for t in selector if t.type != "comment"]
    while toks and toks[0].type == "whitespace":
        toks.pop(0)
    n = 0
    while n < len(toks) and toks[n].type != "whitespace" and not _combinator(toks[n]):
        n += 1
    compound, rest = toks[:n], [t for t in toks[n:] if t.type != "whitespace"]
    if rest and _combinator(rest[0]) and rest[0].value in "+~":
        return False
    names_class = any(
        a.type == "literal" and a.value == "." and b.type == "ident" and b.value in root_classes
        for a, b in itertools.pairwise(compound)
    )
    return names_class or any(t.type == "hash" and t.value == root_id for t in compound if root_id)


def _combinator(tok) -> bool:
    return tok.type == "literal" and tok.value in (">", "+", "~")


def _rules_reason(
    rules, root_classes: set[str], root_id: str | None, in_keyframes: bool = False
) -> str | None:
    for rule in rules:
        if rule.type == "error":
            return "css parse error"
        if rule.type == "at-rule":
            if rule.lower_at_keyword not in ALLOWED_AT_RULES:
                return "css at-rule not allowed"
            reason = _walk_tokens(rule.prelude)
            if reason is None and rule.content is not None:
                inner = tinycss2.parse_rule_list(
                    rule.content, skip_whitespace=True, skip_comments=True
                )
                reason = _rules_reason(
                    inner, root_classes, root_id, rule.lower_at_keyword == "keyframes"
                )
        else:
            reason = _walk_tokens(rule.prelude, SELECTOR_FUNCTIONS)
            if (
                reason is None
                and not in_keyframes
                and not all(
                    _scoped(sel, root_classes, root_id) for sel in _split_selectors(rule.prelude)
                )
            ):
                reason = "unscoped selector"
            reason = reason or _declarations_reason(rule.content)
        if reason:
            return reason
    return None


def hardening_reason(code: str) -> str | None:
    """The first parser/allowlist rule the (seed-clean) panel breaks, or None."""
    parser = LexborHTMLParser(code, is_fragment=True)
    top = list(parser.root.iter(include_text=True)) if parser.root is not None else []
    elements = [n for t in top for n in t.traverse(include_text=False) if not n.tag.startswith("-")]
    reason = _tags_reason(elements) or _attrs_reason(elements)
    if reason:
        return reason
    styles = [n for n in elements if n.tag == "style"]
    if len(styles) != 1:
        return "multiple style blocks" if styles else "no style block"
    roots = [n for n in top if n.tag not in _HTML_DIRECT]
    stray_text = any(n.tag == "-text" and (n.text_content or "").strip() for n in top)
    if len(roots) != 1 or stray_text:
        return "no single root element"
    root = roots[0]
    root_classes = set((root.attributes.get("class") or "").split())
    root_id = root.attributes.get("id")
    if not root_classes and not root_id:
        return "root element has no class or id"
    sheet = tinycss2.parse_stylesheet(styles[0].text(), skip_whitespace=True, skip_comments=True)
    reason = _rules_reason(sheet, root_classes, root_id)
    if reason:
        return reason
    for node in elements:
        inline = node.attributes.get("style")
        if inline:
            reason = _declarations_reason(tinycss2.parse_component_value_list(inline))
            if reason:
                return reason
    return None


def panel_reason(code: str) -> str | None:
    """Seed rules then hardening rules; None when the panel passes."""
    for reason, pattern, reject_on_match in SEED_RULES:
        if (pattern.search(code) is not None) == reject_on_match:
            return reason
    return hardening_reason(code)
