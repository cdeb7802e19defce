"""Panel organisms without a model: a style genome rendering the contract's fixed data block.

A `PanelGenome` holds layout, palette, typography and border genes; `render_panel`
writes one `<style>` element plus markup under a single `.pd-panel` root, with every
selector scoped under it, system or generic fonts only, no references of any kind,
and the 520 x 400 frame on a dark ground. Only the data block's own values appear.
"""

from __future__ import annotations

import html

import attrs
import numpy as np

from actors.lab.contract import PANEL_DATA, PanelData
from actors.lab.gene_groups import cross_groups, draw_groups

LAYOUTS = ("grid", "list", "split", "strip")
FAMILIES = ("system-ui", "sans-serif", "serif", "monospace", "ui-monospace", "ui-rounded")
BORDER_STYLES = ("solid", "dashed", "dotted", "double")
_GROUPS = {
    "layout": ("layout", "gap"),
    "palette": ("hue", "saturation", "ground", "accent_shift", "warn_hue"),
    "typography": ("family", "size", "weight", "uppercase", "tracking"),
    "borders": ("radius", "border_width", "border_style"),
}


@attrs.frozen
class PanelGenome:
    """One panel organism's style genes."""

    layout: str
    gap: int  # 4 .. 14 px
    hue: int  # 0 .. 359
    saturation: int  # 20 .. 80 %
    ground: int  # 5 .. 13 % lightness: always a dark ground
    accent_shift: int  # 90 .. 270 degrees from the hue
    warn_hue: int  # 0 .. 45: reds to ambers
    family: str
    size: int  # 12 .. 15 px
    weight: int  # 500 .. 800
    uppercase: bool
    tracking: float  # 0 .. 0.12 em on labels
    radius: int  # 0 .. 14 px
    border_width: int  # 0 .. 2 px
    border_style: str


def _draw_group(group: str, rng: np.random.Generator) -> dict:
    if group == "layout":
        return {"layout": str(rng.choice(LAYOUTS)), "gap": int(rng.integers(4, 15))}
    if group == "palette":
        return {
            "hue": int(rng.integers(0, 360)),
            "saturation": int(rng.integers(20, 81)),
            "ground": int(rng.integers(5, 14)),
            "accent_shift": int(rng.integers(90, 271)),
            "warn_hue": int(rng.integers(0, 46)),
        }
    if group == "typography":
        return {
            "family": str(rng.choice(FAMILIES)),
            "size": int(rng.integers(12, 16)),
            "weight": int(rng.choice([500, 600, 700, 800])),
            "uppercase": bool(rng.random() < 0.5),
            "tracking": round(float(rng.uniform(0.0, 0.12)), 3),
        }
    return {
        "radius": int(rng.integers(0, 15)),
        "border_width": int(rng.integers(0, 3)),
        "border_style": str(rng.choice(BORDER_STYLES)),
    }


def random_panel_genome(rng: np.random.Generator) -> PanelGenome:
    """A fresh style genome."""
    return PanelGenome(**draw_groups(_GROUPS, _draw_group, rng))


def crossover_panel(a: PanelGenome, b: PanelGenome, rng: np.random.Generator) -> PanelGenome:
    """A child taking each whole style group from one parent or the other."""
    return PanelGenome(**cross_groups(a, b, _GROUPS, rng))


def mutate_panel(g: PanelGenome, rng: np.random.Generator) -> PanelGenome:
    """A copy with one style group redrawn."""
    names = list(_GROUPS)
    return attrs.evolve(g, **_draw_group(names[int(rng.integers(len(names)))], rng))


# Readings grid per layout: columns of the readings block and the panel's flow.
_READING_COLUMNS = {"grid": 3, "list": 1, "split": 1, "strip": 5}
# Value font size by column count: narrower cells get smaller numbers.
_VALUE_SIZE = {1: 15, 3: 20, 5: 15}


def _markup(data: PanelData) -> str:
    e = html.escape
    rows = []
    for r in data.readings:
        extras = "".join(
            f'<span class="pd-{kind}">{e(value)}</span>'
            for kind, value in (("unit", r.unit), ("delta", r.delta), ("state", r.state))
            if value is not None
        )
        rows.append(
            f'    <div class="pd-reading"><span class="pd-label">{e(r.label)}</span>'
            f'<span class="pd-value">{e(r.value)}</span>{extras}</div>'
        )
    s = data.strain
    return (
        f'<div class="pd-panel">\n  <h1 class="pd-title">{e(data.name)}</h1>\n'
        f'  <div class="pd-body">\n  <div class="pd-readings">\n'
        + "\n".join(rows)
        + f'\n  </div>\n  <div class="pd-side">\n'
        f'  <section class="pd-strain"><span class="pd-label">strain</span>'
        f'<strong class="pd-value">{e(s.name)}</strong>'
        f'<span class="pd-gen">generation {e(s.generation)}</span>'
        f'<span class="pd-gen">value {e(s.value)}</span></section>\n'
        f'  <button class="pd-action" type="button">{e(data.action)}</button>\n'
        f'  </div>\n  </div>\n  <p class="pd-warning">{e(data.warning)}</p>\n</div>\n'
    )


def _rule(selector: str, **declarations: object) -> str:
    """One CSS rule; keyword names use `_` for `-`."""
    body = ";".join(f"{k.replace('_', '-')}:{v}" for k, v in declarations.items())
    return f"{selector}{{{body}}}"


def render_panel(g: PanelGenome, data: PanelData = PANEL_DATA) -> str:
    """The panel's source: one `<style>` element plus markup under `.pd-panel`."""
    accent = f"hsl({(g.hue + g.accent_shift) % 360} {g.saturation}% 62%)"
    border = (f"{g.border_width}px {g.border_style} hsl({g.hue} {g.saturation}% 30%)"
              if g.border_width else "none")
    cols = _READING_COLUMNS[g.layout]
    root = ".pd-panel"
    rules = [
        _rule(root, box_sizing="border-box", width="520px", height="400px", overflow="hidden",
              padding="14px", display="flex", flex_direction="column", gap=f"{g.gap}px",
              background=f"hsl({g.hue} {g.saturation // 2}% {g.ground}%)",
              color=f"hsl({g.hue} 20% 88%)", font_family=g.family, font_size=f"{g.size}px",
              line_height=1.25),
        _rule(f"{root} *", box_sizing="border-box", margin=0),
        _rule(f"{root} .pd-title", font_size=f"{g.size + 5}px", font_weight=g.weight,
              color=accent, letter_spacing=f"{g.tracking}em"),
        _rule(f"{root} .pd-body", display="grid", gap=f"{g.gap}px", flex=1, min_height=0,
              grid_template_columns="1fr 170px" if g.layout == "split" else "1fr"),
        _rule(f"{root} .pd-readings", display="grid", align_content="start",
              grid_template_columns=f"repeat({cols},1fr)", gap=f"{max(3, g.gap // 2)}px"),
        _rule(f"{root} .pd-reading", display="flex", flex_wrap="wrap", align_items="baseline",
              gap="2px 6px", padding=f"{3 if cols == 1 else 6}px 8px", border=border, min_width=0,
              border_radius=f"{g.radius}px",
              background=f"hsl({g.hue} {g.saturation // 2}% {g.ground + 6}%)"),
        # one line per reading in a single column (label beside value); stacked otherwise
        _rule(f"{root} .pd-label", flex_basis="7.5em" if cols == 1 else "100%",
              overflow_wrap="anywhere", font_size=f"{g.size - 2}px",
              text_transform="uppercase" if g.uppercase else "none",
              letter_spacing=f"{g.tracking}em", opacity=0.75),
        _rule(f"{root} .pd-value", font_size=f"{_VALUE_SIZE[cols]}px", font_weight=g.weight),
        _rule(",".join(f"{root} .pd-{k}" for k in ("delta", "state", "unit", "gen")),
              font_size=f"{g.size - 1}px", color=accent),
        _rule(f"{root} .pd-side", display="flex", flex_direction="column", gap=f"{g.gap}px"),
        _rule(f"{root} .pd-strain", display="flex", flex_wrap="wrap", gap="2px 10px",
              align_items="baseline", padding="8px", border=border,
              border_radius=f"{g.radius}px"),
        _rule(f"{root} .pd-action", align_self="flex-start", padding="6px 14px", font="inherit",
              font_weight=g.weight, color=f"hsl({g.hue} 30% 10%)", background=accent, border=0,
              border_radius=f"{g.radius}px"),
        _rule(f"{root} .pd-warning", padding="6px 10px",
              border_left=f"4px solid hsl({g.warn_hue} 85% 55%)",
              color=f"hsl({g.warn_hue} 90% 72%)", background=f"hsl({g.warn_hue} 60% 12%)"),
    ]
    return "<style>\n" + "\n".join(rules) + "\n</style>\n" + _markup(data)
