"""`petridish ecosystem setup | validate-graph | run | replay`.

Successful output is JSON on stdout; a refused input prints its exact contract message
(and the path of the field it names) on stderr and exits 1 (2 for bad options or a replay
whose digests differ, 3 for a setup the model's fidelity review blocked). `setup --model-url URL --model NAME [--model-key-file FILE]`
interprets through an OpenAI-compatible endpoint (key: the file, else
`$PETRIDISH_MODEL_KEY`), falling back to the labelled deterministic setup on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from actors.ecosystem.model_options import add_model_options

if TYPE_CHECKING:
    from actors.ecosystem.errors import EcosystemError

BAD_OPTIONS = 2  # as argparse exits on a bad option
BLOCKED_EXIT = 3  # setup: the model's fidelity review did not approve (no config)


def register(subparsers: Any) -> None:
    """Add the `ecosystem` command group."""
    group = subparsers.add_parser("ecosystem", help="LifePot: setup, rule graphs, runs, replay")
    sub = group.add_subparsers(dest="ecosystem_command", required=True)

    setup = sub.add_parser("setup", help="config and graph from setup answers: through a model "
                                          "with --model-url, else the deterministic setup")
    setup.add_argument("--answers", required=True, help='JSON {"world","threat","reward"}')
    add_model_options(setup)
    setup.set_defaults(func=_setup)

    check = sub.add_parser("validate-graph", help="validate a rule graph JSON file")
    check.add_argument("file", type=Path)
    check.set_defaults(func=_validate_graph)

    run = sub.add_parser("run", help="simulate a world and print its frames and record")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--answers", help="setup answers JSON (deterministic setup)")
    source.add_argument("--config", type=Path, help="LifeConfig JSON file")
    run.add_argument("--graph", type=Path, help="rule graph JSON file (default: config's)")
    run.add_argument("--decisions", type=Path, help="JSON file: list of accepted decisions")
    run.add_argument("--seed", type=int, required=True)
    run.add_argument("--generations", type=int, required=True)
    run.add_argument("--size", type=int, default=64, help="grid side (default 64)")
    run.add_argument("--json", action="store_true", help="print the full JSON object")
    run.set_defaults(func=_run)

    again = sub.add_parser("replay", help="re-run a record or a run's export (JSON lines); "
                                          "nonzero exit on a digest mismatch")
    again.add_argument("record", type=Path)
    again.set_defaults(func=_replay)


def _fail(message: str, code: int = 1) -> int:
    print(message, file=sys.stderr)
    return code


def _refused(err: EcosystemError) -> int:
    """A refused input: its contract message, with the field's path unless it names it."""
    where = f" (at {err.path})" if err.path and err.path not in err.message else ""
    return _fail(err.message + where)


def _load(path: Path) -> Any:
    """Parse a JSON file (errors surface as ValueError/OSError for the caller)."""
    return json.loads(path.read_text(encoding="utf-8"))


def _setup(args: argparse.Namespace) -> int:
    from actors.chat_completions import pause
    from actors.ecosystem.endpoint import EndpointError, endpoint_from_args
    from actors.ecosystem.errors import EcosystemError
    from actors.ecosystem.interpret import DeterministicInterpreter, ModelInterpreter
    from actors.ecosystem.model_client import ChatClient

    try:
        answers = json.loads(args.answers)
        endpoint = endpoint_from_args(args, os.environ)
    except json.JSONDecodeError as err:
        return _fail(f"--answers is not JSON: {err.msg}", BAD_OPTIONS)
    except EndpointError as err:
        return _fail(str(err), BAD_OPTIONS)
    try:
        if endpoint is None:
            result = DeterministicInterpreter().interpret(answers)
        else:
            client = ChatClient(endpoint, pause)
            try:
                result = ModelInterpreter(client).interpret(answers)
            finally:
                client.close()
    except EcosystemError as err:
        return _refused(err)
    print(json.dumps(result.as_dict(), indent=2))
    return BLOCKED_EXIT if result.status == "blocked" else 0


def _validate_graph(args: argparse.Namespace) -> int:
    from actors.ecosystem.errors import EcosystemError
    from actors.ecosystem.graph import validate_rule_graph

    try:
        graph = validate_rule_graph(_load(args.file))
    except (OSError, ValueError) as err:
        return _refused(err) if isinstance(err, EcosystemError) else _fail(f"{args.file}: {err}")
    print(json.dumps(graph, indent=2))
    return 0


def _run(args: argparse.Namespace) -> int:
    from actors.ecosystem.errors import EcosystemError
    from actors.ecosystem.keywords import deterministic_setup
    from actors.ecosystem.run import simulate

    try:
        answers = None
        if args.answers is not None:
            answers = json.loads(args.answers)
            config = deterministic_setup(answers)["config"]
        else:
            config = _load(args.config)
        graph = _load(args.graph) if args.graph else None
        decisions = _load(args.decisions) if args.decisions else []
        if not isinstance(decisions, list):
            return _fail("--decisions must hold a JSON list of decisions")
        result = simulate(config, args.seed, args.generations, graph=graph,
                          decisions=decisions, size=args.size, answers=answers)
    except EcosystemError as err:
        return _refused(err)
    except (OSError, ValueError) as err:
        return _fail(str(err))
    if args.json:
        print(json.dumps(result))
    else:
        for frame in result["generations"]:
            totals = " ".join(f"{k}={v:.1f}" for k, v in frame["biomass"].items())
            print(f"{frame['generation']:4d} {totals} resource={frame['resource']:.3f} "
                  f"score={frame['score']['total']:.3f} {frame['digest'][:12]}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    from actors.ecosystem.errors import EcosystemError
    from actors.ecosystem.export import is_export, parse_export, record_of_export
    from actors.ecosystem.replay import replay

    try:
        text = args.record.read_text(encoding="utf-8")
        if is_export(text):
            record = record_of_export(parse_export(text))
        else:
            record = json.loads(text)
            record = record.get("record", record) if isinstance(record, dict) else record
        report = replay(record)
    except EcosystemError as err:
        return _refused(err)
    except (OSError, ValueError) as err:
        return _fail(f"{args.record}: {err}")
    if not report.ok:
        print(f"digest differs at generation {report.mismatch}: expected {report.expected}, "
              f"got {report.got}", file=sys.stderr)
        return 2
    print(json.dumps({"ok": True, "digests": report.checked}))
    return 0
