"""`petridish lab ...`: validate one file, or breed organisms without a model."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_SUFFIX = {"shader": ".frag", "panel": ".html"}


def register(subparsers) -> None:
    """Add the `lab` command group to the `petridish` parser."""
    lab = subparsers.add_parser("lab", help="the lab: static validation and model-free breeding")
    sub = lab.add_subparsers(dest="lab_command", required=True)
    v = sub.add_parser("validate", help="print `ok` (exit 0) or the rejection reason (exit 1)")
    v.add_argument("--track", choices=("shader", "panel"), required=True)
    v.add_argument("file", type=Path)
    v.set_defaults(func=_validate)
    b = sub.add_parser("breed", help="write generated organisms (no model) to a directory")
    b.add_argument("--track", choices=("shader", "panel"), required=True)
    b.add_argument("--seed", type=int, required=True)
    b.add_argument("--count", type=int, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.set_defaults(func=_breed)


def _validate(args: argparse.Namespace) -> int:
    from actors.lab.validation import validate

    try:
        code = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    reason = validate(args.track, code)
    print(reason or "ok")
    return 1 if reason else 0


def _breed(args: argparse.Namespace) -> int:
    from actors.lab.breed import generate, genome_dict
    from actors.lab.organism import organism_id
    from actors.lab.validation import validate

    if args.count < 1:
        print("--count must be at least 1", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    manifest, failures = [], 0
    for genome, code in generate(args.track, args.seed, args.count):
        reason = validate(args.track, code)
        if reason:  # valid by construction; reported rather than written if that ever breaks
            failures += 1
            print(f"generated organism rejected: {reason}", file=sys.stderr)
            continue
        oid = organism_id(args.track, code)
        (args.out / f"{oid}{_SUFFIX[args.track]}").write_text(code, encoding="utf-8")
        manifest.append({"id": oid, "genome": genome_dict(genome)})
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    print(f"wrote {len(manifest)} {args.track} organisms to {args.out}")
    return 1 if failures else 0
