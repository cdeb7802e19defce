"""`petridish lab ...`: validate one file, breed organisms without a model, import a
catalogue written before the event stream, remake the judging page's voice track, or run
the headless gate over a lab's unproven backlog.

This is the command line's edge: `import` writes the server's event store (trio and
`server.storage`) and `gate` drives Chromium (`server/lab_gate.py`, Playwright), each
imported in its handler only, so `petridish --help` loads neither.
"""

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
    i = sub.add_parser("import", help="turn a SQLite catalogue of the lab (before the event "
                       "stream) into the stream of lab:NAME in a data directory's event store")
    i.add_argument("catalogue", type=Path)
    i.add_argument("--data", type=Path, required=True, help="the server's data directory")
    i.add_argument("--world", default="main", help="the lab's name (default: main)")
    i.set_defaults(func=_import)
    w = sub.add_parser("voice", help="remake web/lab/voice.ogg with espeak-ng and opusenc")
    w.add_argument("--out", type=Path, default=None, help="default: web/lab/voice.ogg")
    w.set_defaults(func=_voice)
    g = sub.add_parser("gate", help="headless Chromium proves the lab's unproven backlog "
                       "through the owner's arena page (needs the [gate] extra: Playwright)")
    g.add_argument("--url", default="http://127.0.0.1:8000", help="the running server")
    g.add_argument("--data", type=Path, default=Path("data"),
                   help="the server's data directory, for its owner.token (default ./data)")
    g.add_argument("--token-file", type=Path, default=None,
                   help="a file holding the owner token (else $PETRIDISH_OWNER_TOKEN, else "
                   "DATA/owner.token)")
    g.add_argument("--world", default="main", help="the lab's name (default: main)")
    g.add_argument("--track", choices=("shader", "panel", "all"), default="all")
    g.add_argument("--cap", type=_positive, default=5.0,
                   help="seconds one organism may take before the browser is relaunched")
    g.add_argument("--limit", type=int, default=0, help="organisms to judge, taking "
                   "newborns as they come (default 0: the backlog as it stands at the start)")
    g.add_argument("--chromium", default=None, help="the Chromium binary (default: chromium)")
    g.set_defaults(func=_gate)


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _gate(args: argparse.Namespace) -> int:
    from server.lab_gate import main

    return main(args)


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


def _import(args: argparse.Namespace) -> int:
    import sqlite3

    from actors.lab.catalogue_import import ImportMismatch, import_events

    if not args.catalogue.is_file():
        print(f"no catalogue at {args.catalogue}", file=sys.stderr)
        return 2
    try:
        imported = import_events(args.catalogue, args.world)
    except (ImportMismatch, sqlite3.Error) as exc:
        print(f"cannot import {args.catalogue}: {exc}", file=sys.stderr)
        return 1
    stream = f"lab:{args.world}"
    written = _append(args.data, stream, imported.events)
    if isinstance(written, str):
        print(written, file=sys.stderr)
        return 1
    s = imported.state
    print(f"imported {len(s.organisms)} organisms, {len(s.directives)} directives, "
          f"{s.rejected} rejections and {s.votes} votes into {stream} at revision {written} "
          f"in {args.data} ({imported.benched} benched flags not imported: benching is kept "
          "in memory)")
    return 0


def _append(data: Path, stream: str, events: list) -> int | str:
    """Append the events to an empty stream of the data directory's store (the edge: the
    server's SQLite store, run the way the server runs it); a message when it is not empty."""
    import trio

    from actors.lab.events import encode
    from actors.store import ConflictError
    from server.storage import SqliteEventStore

    async def write() -> int | str:
        async with SqliteEventStore.in_directory(data) as store:
            try:
                return await store.append(stream, 0, [encode(e) for e in events])
            except ConflictError as exc:
                return f"{stream} already has events ({exc}); nothing imported"

    return trio.run(write)


def _voice(args: argparse.Namespace) -> int:
    from actors.lab.voice import VoiceError, make_voice

    try:
        out = make_voice(args.out)
    except VoiceError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0
