"""`python -m bench lab [--count N]`: lab validation and generation throughput.

Figures: validations per second per track (shader both with the glslang compile step
and static rules only), model-free organisms generated (drawn and rendered) per second,
and the seconds the static rules take on hostile sizes that were once quadratic
(`hostile_seconds`: 600 structs and 750 constants; 5,990 `for(` in a row; `=` and 23,000
spaces in a panel).
"""

from __future__ import annotations

import argparse
import string
import sys
import time


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 1) if seconds > 0 else float("inf")


def main(argv: list[str]) -> dict:
    """Run the lab benchmark and return its figures."""
    from actors.lab.breed import generate
    from actors.lab.validate_shader import glslang_path
    from actors.lab.validation import static_reason, validate

    parser = argparse.ArgumentParser(prog="python -m bench lab")
    parser.add_argument("--count", type=int, default=300, help="organisms per measurement")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    figures: dict = {"count": args.count, "glslang": glslang_path() is not None}
    sources = {}
    for track in ("shader", "panel"):
        start = time.perf_counter()
        sources[track] = [code for _, code in generate(track, args.seed, args.count)]
        figures[f"{track}_generated_per_s"] = _rate(args.count, time.perf_counter() - start)
        print(f"generated {args.count} {track} organisms", file=sys.stderr)
    for label, fn, track in (
        ("shader_validations_per_s", validate, "shader"),
        ("shader_static_validations_per_s", static_reason, "shader"),
        ("panel_validations_per_s", validate, "panel"),
    ):
        start = time.perf_counter()
        failures = sum(fn(track, code) is not None for code in sources[track])
        figures[label] = _rate(args.count, time.perf_counter() - start)
        figures[f"{label.removesuffix('_per_s')}_failures"] = failures
        print(f"{label}: {figures[label]}", file=sys.stderr)
    names = [a + b for a in string.ascii_letters for b in string.ascii_letters]
    hostile = {
        "shader_structs_and_constants": ("shader", "".join(
            f"struct S{v}{{int x;}};" for v in names[:600]) + "".join(
            f"const int {v}=1;" for v in names[:750]) + "void main(){fragColor=vec4(u_time);}"),
        "shader_run_of_for_headers": ("shader", "void main(){" + "for(" * 5_990 + "}"),
        "panel_run_of_spaces": ("panel", '<div class="p"><style>.p{color:red}</style><p title="='
                                + " " * 23_000 + '">x</p></div>'),
    }
    figures["hostile_seconds"] = {}
    for label, (track, code) in hostile.items():
        start = time.perf_counter()
        static_reason(track, code)
        figures["hostile_seconds"][label] = round(time.perf_counter() - start, 3)
    return figures
