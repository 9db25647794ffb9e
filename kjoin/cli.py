"""The ``kjoin`` command: ``kjoin run SCENARIO``, ``kjoin table …``, ``kjoin export SCENARIO --junit``,
``kjoin diff SCENARIO --from 3.0 --to 4.3 [--set window.grace_ms=500]`` (a topology document too, its settings by
node: ``--set per_hour.grace_ms=0``), and a whole app over its topics, as dumps or live on a broker: ``kjoin debug APP
--topic NAME=PATH … [--bootstrap-servers HOST:PORT --topic NAME …] --out RUN`` and ``kjoin why RUN --topic T
--partition P --offset N`` (:mod:`kjoin.topology.debug_cli`)."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .documents import load_scenario, run
from .render import seed_table, spec_jsonl, spec_table, trace_jsonl, trace_table
from .scenario import VARIANTS, Scenario, ScenarioError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.command(args)
    except ScenarioError as error:
        print(f"kjoin: {error}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as error:  # a last resort: the input boundary bounds depth and size
        what = "nested too deeply" if isinstance(error, RecursionError) else "too large for this machine's memory"
        print(f"kjoin: {getattr(args, 'scenario', 'the input')}: {what} for kjoin; make it smaller", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    trace = run(scenario)
    if hasattr(trace, "jsonl") and hasattr(trace, "table"):  # a topology (kjoin.topology.TopologyTrace)
        for line in trace.jsonl() if args.format == "jsonl" else [trace.table()]:
            print(line)
        return 0
    if not isinstance(scenario, Scenario):  # an aggregate or windowed-table scenario
        lines = spec_jsonl(trace) if args.format == "jsonl" else [spec_table(trace)]
        for line in lines:
            print(line)
        return 0
    if args.format == "jsonl":
        for line in trace_jsonl(trace):
            print(line)
    else:
        print(trace_table(trace))
    return 0


def _export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .export import class_name, export_junit

    if not args.junit:
        raise ScenarioError("kjoin export: name the format: --junit (a JUnit 5 test for Kafka Streams)")
    scenario = load_scenario(args.scenario)
    path = Path(args.scenario)
    name = args.class_name or class_name(getattr(scenario, "name", None) or path.stem)
    if not name.isidentifier():
        raise ScenarioError(f"--class-name {name!r} is not a Java class name")
    try:
        java = export_junit(scenario, name, source=path.name)
    except ScenarioError as error:
        raise ScenarioError(str(error), str(path)) from None
    sys.stdout.write(java)
    return 0


def _diff(args: argparse.Namespace) -> int:
    from .diff import parse_setting
    from .topology.diff import diff

    settings = dict(parse_setting(text) for text in args.set or [])
    if args.from_ is None and args.to is None and not settings:
        raise ScenarioError("kjoin diff: name what changes: --from VERSION --to VERSION and/or --set PATH=VALUE")
    result = diff(args.scenario, from_=args.from_, to=args.to, set=settings)
    if args.format == "jsonl":
        for line in result.jsonl():
            print(line)
    else:
        print(result.table())
    return 0


def _table(args: argparse.Namespace) -> int:
    window = None
    if args.join == "stream-stream":
        before = args.before if args.before is not None else args.window
        after = args.after if args.after is not None else args.window
        if before is None or after is None:
            raise ScenarioError("--window (or --before and --after) is needed for a stream-stream join")
        grace = None if args.grace.lower() in ("none", "null") else _non_negative(args.grace, "--grace")
        window = {"before_ms": before, "after_ms": after, "grace_ms": grace}
    try:
        # Every join has a left variant in every era; the others are derived from it.
        base = Scenario.from_notation(
            args.join, "left", left=args.left, right=args.right, key=args.key, semantics=args.semantics, window=window
        )
    except ValueError as error:
        raise ScenarioError(str(error)) from None
    variants = [
        v
        for v in VARIANTS[args.join]
        if not (args.join == "stream-table" and v == "inner" and not base.semantics.kip77)
    ]
    print(seed_table({variant: run(base.with_variant(variant)) for variant in variants}))
    return 0


def _non_negative(text: str, flag: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ScenarioError(f"{flag}: expected a non-negative integer or none, got {text!r}") from None
    if value < 0:
        raise ScenarioError(f"{flag}: expected a non-negative integer or none, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kjoin", description="Kafka Streams joins, record by record.")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run_parser = commands.add_parser("run", help="run a scenario file and print its trace")
    run_parser.add_argument("scenario", help="a YAML or JSON scenario file")
    run_parser.add_argument(
        "--format", choices=("table", "jsonl"), default="table", help="table (default) or one JSON object per step"
    )
    run_parser.set_defaults(command=_run)

    export = commands.add_parser(
        "export", help="write a scenario as a test: --junit, a JUnit 5 test against Kafka Streams' TopologyTestDriver"
    )
    export.add_argument("scenario", help="a YAML or JSON scenario file")
    export.add_argument("--junit", action="store_true", help="a JUnit 5 test (the only format); Java on stdout")
    export.add_argument("--class-name", help="the test class's name (default: the file's name in CamelCase + Test)")
    export.set_defaults(command=_export)

    differ = commands.add_parser(
        "diff",
        help="every output that changes between two Kafka versions or configurations, with the rules that change it",
    )
    differ.add_argument("scenario", help="a YAML or JSON scenario file")
    differ.add_argument(
        "--from",
        dest="from_",
        help="the Kafka version to compare from (default: the scenario's semantics); rules may follow: "
        "3.0+spurious_result_fix, 4.3-relaxed_null_keys",
    )
    differ.add_argument("--to", help="the Kafka version to compare to (default: the --from version)")
    differ.add_argument(
        "--set",
        action="append",
        metavar="PATH=VALUE",
        help="a setting changed in the second run, e.g. window.grace_ms=500, right.versioned=true, "
        "arrival.right.lag_ms=2000; of a topology document, NODE.FIELD: per_hour.grace_ms=0 (repeat for several)",
    )
    differ.add_argument(
        "--format",
        choices=("table", "jsonl"),
        default="table",
        help="table (default) or one JSON object per difference",
    )
    differ.set_defaults(command=_diff)

    table = commands.add_parser("table", help="the seeds' kind of table for two streams in ts:value notation")
    # The ts:value notation has one key and plain values: primary-key joins only (a
    # foreign-key join needs structured left values; write a scenario file for it).
    table.add_argument("--join", choices=("stream-stream", "stream-table", "table-table"), required=True)
    table.add_argument("--left", default="", help='left records, e.g. "1:null, 3:A, 5:B"')
    table.add_argument("--right", default="", help='right records, e.g. "2:null, 4:a"')
    table.add_argument("--key", default="k", help="the key of every record (default k)")
    table.add_argument("--window", type=int, help="before and after of a stream-stream window, in ms")
    table.add_argument("--before", type=int, help="the window's before_ms (overrides --window)")
    table.add_argument("--after", type=int, help="the window's after_ms (overrides --window)")
    table.add_argument(
        "--grace", default="0", help="grace in ms (default 0), or none for the deprecated JoinWindows.of API"
    )
    table.add_argument("--semantics", default=None, help="Kafka version, e.g. 0.10.0, 0.10.2, 3.1 (default: latest)")
    table.set_defaults(command=_table)

    from .topology.debug_cli import add_commands  # kjoin debug, kjoin why: a whole app over its topics

    add_commands(commands)
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
