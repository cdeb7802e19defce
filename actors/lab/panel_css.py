"""The CSS of a panel as the browser reads it: tinycss2 tokens (escapes resolved, comments
dropped), checked against allowlists of functions, at-rules and font families, with
every selector scoped under the panel's root element, nested rules (CSS nesting)
included: a nested selector is judged as the selector it resolves to.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import tinycss2

Token = Any  # a tinycss2 node
Selector = list[Token]

# fmt: off
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
# fmt: on


@attrs.frozen
class Root:
    """The panel's single root element, which every selector must name: classes and id."""

    classes: frozenset[str]
    id: str | None


MAX_DEPTH = 32  # blocks and functions nested in one another (the checks recurse per level)
_BLOCKS = {"() block": "()", "[] block": "[]", "{} block": "{}"}


def depth_reason(tokens: Iterable[Token]) -> str | None:
    """`css nested over 32 deep` when blocks and functions (nested rules and at-rules
    included) nest deeper than MAX_DEPTH: the other checks recurse per level, so this
    one runs first, and without recursing."""
    stack = [iter(tokens)]
    while stack:
        tok = next(stack[-1], None)
        if tok is None:
            stack.pop()
        elif tok.type == "function" or tok.type in _BLOCKS:
            if len(stack) > MAX_DEPTH:  # the new level: len(stack) brackets deep
                return f"css nested over {MAX_DEPTH} deep"
            stack.append(iter(tok.arguments if tok.type == "function" else tok.content))
    return None


def walk_tokens(tokens: Iterable[Token], functions: frozenset[str] = ALLOWED_FUNCTIONS
                ) -> str | None:
    """Reject resource-loading tokens anywhere in a component-value list (recursively):
    url tokens, and functions outside `functions`."""
    for tok in tokens:
        kind = tok.type
        if kind == "url":
            return "css function not allowed"
        if kind == "function":
            if tok.lower_name not in functions:
                return "css function not allowed"
            reason = walk_tokens(tok.arguments, functions)
        elif kind in ("() block", "[] block", "{} block"):
            reason = walk_tokens(tok.content, functions)
        elif kind == "error":
            return "css parse error"
        else:
            reason = None
        if reason:
            return reason
    return None


def _font_family_reason(value: Sequence[Token]) -> str | None:
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


def _font_shorthand_reason(value: Sequence[Token]) -> str | None:
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


def declarations_reason(content: Sequence[Token], root: Root,
                        selectors: list[Selector] | None) -> str | None:
    """Check a declaration block; `selectors` are those of the rule it belongs to (the
    parents of its nested rules), None for a `style` attribute, which nests nothing."""
    for item in tinycss2.parse_blocks_contents(content, skip_whitespace=True, skip_comments=True):
        if item.type == "error":
            return "css parse error"
        if item.type == "at-rule":
            return "css at-rule not allowed"
        if item.type == "declaration":
            reason = walk_tokens(item.value)
            if reason is None and item.lower_name == "font-family":
                reason = _font_family_reason(item.value)
            elif reason is None and item.lower_name == "font":
                reason = _font_shorthand_reason(item.value)
        elif selectors is None:
            reason = "unscoped selector"
        else:  # a nested rule: judged as the selectors it resolves to
            nested = [_nest(parent, own) for parent in selectors
                      for own in _split_selectors(item.prelude)]
            reason = walk_tokens(item.prelude, SELECTOR_FUNCTIONS)
            if reason is None and not all(_scoped(sel, root) for sel in nested):
                reason = "unscoped selector"
            reason = reason or declarations_reason(item.content or [], root, nested)
        if reason:
            return reason
    return None


def _has_nesting(tokens: Sequence[Token]) -> bool:
    """True when `&` stands anywhere in a selector, inside pseudo-class functions too."""
    return any(t.type == "literal" and t.value == "&"
               or t.type == "function" and _has_nesting(t.arguments) for t in tokens)


def _nest(parent: Selector, own: Selector) -> Selector:
    """The selector a nested one resolves to: each top-level `&` is the parent; with no
    `&` anywhere (as Chromium reads it, one inside `:is(&)` counts), the nested selector
    is relative to the parent (`+ p` is `parent + p`)."""
    if _has_nesting(own):
        out: Selector = []
        for tok in own:
            out.extend(parent if tok.type == "literal" and tok.value == "&" else [tok])
        return out
    return [*parent, tinycss2.ast.WhitespaceToken(0, 0, " "), *own]


def _split_selectors(prelude: Sequence[Token]) -> list[Selector]:
    groups: list[Selector] = [[]]
    for tok in prelude:
        if tok.type == "literal" and tok.value == ",":
            groups.append([])
        else:
            groups[-1].append(tok)
    return groups


def _scoped(selector: Selector, root: Root) -> bool:
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
        a.type == "literal" and a.value == "." and b.type == "ident" and b.value in root.classes
        for a, b in itertools.pairwise(compound)
    )
    return names_class or any(t.type == "hash" and t.value == root.id for t in compound
                              if root.id)


def _combinator(tok: Token) -> bool:
    return tok.type == "literal" and tok.value in (">", "+", "~")


def rules_reason(rules: Iterable[Token], root: Root, in_keyframes: bool = False
                 ) -> str | None:
    """Check a list of rules (a stylesheet, or the inside of an at-rule)."""
    for rule in rules:
        if rule.type == "error":
            return "css parse error"
        if rule.type == "at-rule":
            if rule.lower_at_keyword not in ALLOWED_AT_RULES:
                return "css at-rule not allowed"
            reason = walk_tokens(rule.prelude)
            if reason is None and rule.content is not None:
                inner = tinycss2.parse_rule_list(
                    rule.content, skip_whitespace=True, skip_comments=True
                )
                reason = rules_reason(inner, root, rule.lower_at_keyword == "keyframes")
        else:
            selectors = _split_selectors(rule.prelude)
            reason = walk_tokens(rule.prelude, SELECTOR_FUNCTIONS)
            if reason is None and not in_keyframes and not all(
                _scoped(sel, root) for sel in selectors
            ):
                reason = "unscoped selector"
            reason = reason or declarations_reason(rule.content, root, selectors)
        if reason:
            return reason
    return None


def resolved_text(tokens: Iterable[Token]) -> str:
    """CSS tokens as the browser reads their values: escapes resolved, comments dropped,
    strings quoted, so the seed's text rules can read what a stylesheet really says."""
    out = []
    for tok in tokens:
        kind = tok.type
        if kind == "ident":
            out.append(tok.value)
        elif kind == "function":
            out.append(f"{tok.name}({resolved_text(tok.arguments)})")
        elif kind == "url":
            out.append(f"url({tok.value})")
        elif kind == "string":
            out.append(f'"{tok.value}"')
        elif kind == "at-keyword":
            out.append("@" + tok.value)
        elif kind == "hash":
            out.append("#" + tok.value)
        elif kind in _BLOCKS:
            out.append(_BLOCKS[kind][0] + resolved_text(tok.content) + _BLOCKS[kind][1])
        elif kind != "comment":
            out.append(tok.serialize())
    return "".join(out)
