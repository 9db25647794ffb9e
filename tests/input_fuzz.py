"""A fuzzer of kjoin's input boundary: valid scenarios of every documented kind, each with one
perturbation, through ``Scenario.from_dict``/``load_scenario`` + ``kjoin.run`` and ``kjoin run``.

Each case ends in one of:

* ``refused``: a :class:`~kjoin.ScenarioError` (kjoin's own words);
* ``ran``: a trace with one step per input record (every record accounted for);
* ``crash``: any other exception (a traceback from inside kjoin);
* ``hang``: more than the time bound;
* ``coercion``: accepted where Kafka would not take it as written (see :data:`COERCION_PROBES`).

``python -m tests.input_fuzz N`` prints the counts of N random cases plus the coercion probes
(``make fuzz-inputs``); :mod:`tests.test_input_fuzz` runs the same cases under hypothesis. Every
fifth case goes through ``kjoin run``, one in ten through ``kjoin export --junit``.
"""

from __future__ import annotations

import copy
import json
import random
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import kjoin
from kjoin.scenario import ScenarioError, load_scenario

WINDOW = {"before_ms": 10, "after_ms": 10, "grace_ms": 5}


def _events(rng: random.Random, n: int = 6, structured: bool = False) -> list[dict[str, Any]]:
    events = []
    for i in range(n):
        side = rng.choice(["left", "right"])
        value: Any = f"{side[0].upper()}{i}"
        if structured and side == "left":
            value = {"fk": rng.choice(["X", "Y"]), "v": i}
        events.append({"side": side, "key": rng.choice(["k1", "k2", 7]), "value": value, "ts": rng.randint(0, 40)})
    return events


def base_scenarios(rng: random.Random) -> list[dict[str, Any]]:
    """One valid document of each documented kind."""
    return [
        {"join": "stream-stream", "variant": "outer", "window": dict(WINDOW), "events": _events(rng)},
        {"join": "stream-stream", "variant": "left", "window": dict(WINDOW), "partitions": 2, "events": _events(rng)},
        {"join": "stream-table", "variant": "left", "events": _events(rng), "arrival": {"right": {"lag_ms": 5}}},
        {
            "join": "stream-table",
            "variant": "inner",
            "right": {"versioned": True, "history_retention_ms": 100},
            "grace_ms": 5,
            "events": _events(rng),
        },
        {"join": "table-table", "variant": "outer", "materialized": True, "caching": True, "events": _events(rng)},
        {
            "join": "fk",
            "variant": "left",
            "foreign_key": "fk",
            "partitions": 2,
            "events": _events(rng, structured=True),
        },
        {"join": "window-aggregate", "window": {"size_ms": 10, "advance_ms": 5}, "events": _events(rng)},
        {"join": "table-aggregate", "group_by": "g", "events": [{"key": "a", "value": {"g": "x"}, "ts": 1}]},
        {"join": "wtable-wtable", "variant": "outer", "window": {"size_ms": 10}, "events": _events(rng)},
        {"join": "wtable-table", "window": {"size_ms": 10}, "partitions": 2, "events": _events(rng)},
        {"join": "stream-wtable", "window": {"size_ms": 10}, "selector": "timestamp", "events": _events(rng)},
        # GlobalKTable joins, session and sliding windows,
        # suppress and emit-final; and topology documents
        {"join": "stream-globaltable", "variant": "left", "partitions": 2, "events": _events(rng)},
        {
            "join": "stream-globaltable",
            "variant": "inner",
            "foreign_key": "fk",
            "events": _events(rng, structured=True),
        },
        {"join": "window-aggregate", "window": {"inactivity_gap_ms": 5, "grace_ms": 2}, "events": _events(rng)},
        {"join": "window-aggregate", "window": {"time_difference_ms": 5}, "emit": "final", "events": _events(rng)},
        {
            "join": "window-aggregate",
            "window": {"size_ms": 10},
            "suppress": "until-window-closes",
            "aggregate": {"sum": "v"},
            "events": _events(rng, structured=True),
        },
        _topology(rng),
        _word_count(rng),
    ]


def _topology(rng: random.Random) -> dict[str, Any]:
    """A topology's document form: orders re-keyed by customer, joined with customers, left-joined with addresses."""
    events = []
    for i in range(6):
        topic = rng.choice(["orders", "customers", "addresses"])
        value: Any = {"customer": rng.choice(["c1", "c2"])} if topic == "orders" else f"{topic[0].upper()}{i}"
        events.append({"topic": topic, "key": rng.choice(["c1", "c2", "o1"]), "value": value, "ts": rng.randint(0, 40)})
    return {
        "partitions": 2,
        "topology": [
            {"name": "orders", "stream": "orders"},
            {"name": "customers", "table": "customers"},
            {"name": "addresses", "table": "addresses"},
            {"name": "by-customer", "select_key": {"field": "customer"}, "input": "orders"},
            {"name": "with-customer", "join": ["by-customer", "customers"]},
            {"name": "with-address", "left_join": ["with-customer", "addresses"]},
            {"name": "out", "to": "out", "input": "with-address"},
        ],
        "events": events,
    }


def _word_count(rng: random.Random) -> dict[str, Any]:
    """The DSL's other operations in the document form: a stream's flat_map_values and flat_map (a re-key), a count,
    a table's filter (stored) and map_values, as Kafka's WordCount."""
    lines = ["a b a", "B c", "", "x", " a  b ", None]
    events = [
        {"topic": "lines", "key": rng.choice([None, "k1", "k2"]), "value": rng.choice(lines), "ts": rng.randint(0, 40)}
        for _ in range(6)
    ]
    return {
        "partitions": rng.choice([1, 2]),
        "topology": [
            {"name": "lines", "stream": "lines"},
            {"name": "lower", "flat_map_values": {"split": " ", "lower": True}, "input": "lines"},
            {"name": "words", "flat_map": {"split": " "}, "input": "lower"},
            {"name": "g", "group_by_key": True, "input": "words"},
            {"name": "counts", "count": True, "input": "g"},
            {"name": "big", "filter": {"key_not_in": ["a"]}, "input": "counts", "materialized": True},
            {"name": "shown", "map_values": {"append": "!"}, "input": "big"},
            {"name": "out", "to": "out", "input": "shown"},
        ],
        "events": events,
    }


WEIRD_VALUES: list[Any] = [
    None,
    True,
    "false",
    "",
    "0",
    -1,
    0,
    1.5,
    2**63,
    2**64 + 1,
    -(2**63) - 1,
    10**5000,
    float("nan"),
    float("inf"),
    [],
    ["x"],
    {},
    {"x": 1},
    {1: "a"},
    "\ud800",
    b"bytes",
    {"a": [[[[[[[[[[1]]]]]]]]]]},
    "k" * 10_000,
    1000000,
    10**7,
]


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    paths = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            paths.extend(_paths(value, prefix + (key,)))
    elif isinstance(data, list):
        for index, value in enumerate(data[:3]):
            paths.extend(_paths(value, prefix + (index,)))
    return paths


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def perturb(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """``doc`` with one change: a value replaced, a field removed, misspelled or added."""
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    parent: Any = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    action = rng.randrange(5)
    if action == 0:
        parent[last] = rng.choice(WEIRD_VALUES + [_nested(2000)])
    elif action == 1 and isinstance(parent, dict):
        del parent[last]
    elif action == 2 and isinstance(parent, dict) and isinstance(last, str) and len(last) > 1:
        parent[last[:-1] + last[-1] * 2] = parent.pop(last)  # a misspelled field
    elif action == 3 and isinstance(parent, dict):
        parent[rng.choice(["extra", 5, ("t",)])] = 1
    else:
        parent[last] = rng.choice(WEIRD_VALUES)
    return doc


class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang()


def run_case(call: Callable[[], Any], seconds: float = 10.0) -> tuple[str, str]:
    """``(outcome, detail)`` of one case (see the module docstring)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        result = call()
        return "ran", _accounted(result)
    except ScenarioError as error:
        return "refused", str(error)[:200]
    except Hang:
        return "hang", ""
    except SystemExit as error:  # the CLI
        return ("refused" if error.code == 2 else "crash"), str(error.code)
    except Exception as error:  # noqa: BLE001 - a crash is what this counts
        return "crash", f"{type(error).__name__}: {str(error)[:200]}"
    except RecursionError as error:  # pragma: no cover
        return "crash", f"RecursionError: {error}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _accounted(result: Any) -> str:
    """Every input record is a step of the trace."""
    if isinstance(result, int):  # a CLI exit code
        if result != 0:
            raise AssertionError(f"the CLI exited {result} without a kjoin error")
        return ""
    from kjoin.trace import DeliveryStep

    from kjoin.topology import TopologyTrace

    if isinstance(result, TopologyTrace):  # one step per record a task took, from a source or a repartition topic
        taken = sorted(step.record.event for step in result.steps if step.record.written_at is None)
        if taken != list(range(len(result.events))):
            raise AssertionError(f"{len(result.events)} input records but the steps took {taken}")
        return ""
    steps = [s for s in result.steps if not isinstance(s, DeliveryStep)]
    scenario = result.scenario
    expected = len(scenario.records()) if isinstance(scenario, kjoin.Scenario) else None
    if expected is not None and len(steps) != expected:
        raise AssertionError(f"{expected} records but {len(steps)} steps")
    return ""


def through_api(doc: Any) -> Callable[[], Any]:
    def call() -> Any:
        from kjoin.scenario import AGGREGATE_JOINS, AggregateSpec

        if isinstance(doc, dict) and doc.get("join") in AGGREGATE_JOINS:
            return kjoin.run(AggregateSpec.from_dict(doc))
        if isinstance(doc, dict) and "topology" in doc and "join" not in doc:
            from kjoin.topology.document import TopologyScenario

            return kjoin.run(TopologyScenario.from_dict(doc))
        return kjoin.run(kjoin.Scenario.from_dict(doc))

    return call


def through_file(text: bytes, suffix: str, cli: bool = False, command: str = "run") -> Callable[[], Any]:
    def call() -> Any:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"scenario{suffix}"
            path.write_bytes(text)
            if cli:
                from kjoin.cli import main

                import contextlib
                import io

                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    code = main([command, str(path)] + (["--junit"] if command == "export" else []))
                return 0 if code in (0, 2) else code
            return kjoin.run(load_scenario(path))

    return call


def dump(doc: Any, suffix: str) -> bytes | None:
    try:
        if suffix == ".json":
            return json.dumps(doc).encode("utf-8", "surrogatepass")
        import yaml

        return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError, Exception):  # noqa: BLE001 - not every perturbation has a text
        return None


def cases(n: int, seed: int = 0) -> list[tuple[str, Callable[[], Any]]]:
    rng = random.Random(seed)
    result = []
    for index in range(n):
        doc = perturb(rng.choice(base_scenarios(rng)), rng)
        route = index % 5
        if route == 0:
            suffix = rng.choice([".yaml", ".json"])
            text = dump(doc, suffix)
            if text is not None:
                result.append((f"cli {suffix}", through_file(text, suffix, cli=True)))
                continue
        if route == 1:
            suffix = rng.choice([".yaml", ".json"])
            text = dump(doc, suffix)
            if text is not None:
                result.append((f"file {suffix}", through_file(text, suffix)))
                continue
        if route == 2 and index % 10 == 2:
            text = dump(doc, ".yaml")
            if text is not None:
                result.append(("export --junit", through_file(text, ".yaml", cli=True, command="export")))
                continue
        result.append(("api", through_api(doc)))
    result += [(f"bytes {i}", through_file(text, suffix)) for i, (text, suffix) in enumerate(BYTE_CASES)]
    result += [(f"big {i}", through_api(doc)) for i, doc in enumerate(BIG_CASES)]
    result.append(("fifo", _through_fifo))
    return result


BIG_CASES: list[dict[str, Any]] = [
    {"join": "window-aggregate", "window": {"size_ms": 10}, "partitions": 2**31, "events": []},
    {
        "join": "window-aggregate",
        "window": {"size_ms": 10**7, "advance_ms": 1},
        "events": [{"key": "k", "value": 1, "ts": 1}],
    },
    {"join": "stream-stream", "variant": "inner", "window": WINDOW, "partitions": 2**40, "events": []},
]


def _through_fifo() -> Any:
    import os

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scenario.yaml"
        os.mkfifo(path)
        return kjoin.run(load_scenario(path))


BYTE_CASES: list[tuple[bytes, str]] = [
    (b"\xff\xfe\x00join: x", ".yaml"),
    (b"[" * 100_000 + b"]" * 100_000, ".json"),
    (b"a: " + b"[" * 5000 + b"]" * 5000, ".yaml"),
    (b'{"join": ' + b"9" * 5000 + b"}", ".json"),
    (b"join: stream-stream\nts: 2020-01-01\n", ".yaml"),
    (b"join: !!binary aGVsbG8=\n", ".yaml"),
    (
        b"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
        b"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
        b"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n",
        ".yaml",
    ),
    (b"", ".yaml"),
    (b"\x00\x01\x02", ".json"),
    (b"{1: a, unknwn: 2}", ".yaml"),
]


def _ss(events: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    return {"join": "stream-table", "variant": "inner", "events": events, **more}


COERCION_PROBES: list[tuple[str, bytes, str]] = [
    # (name, YAML text, what kjoin must do: "refuse" or a check name)
    (
        "yaml no/off",
        b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: no, ts: 1}\n",
        "value=no",
    ),
    (
        "yaml 1:30",
        b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: 1:30, ts: 1}\n",
        "value=1:30",
    ),
    (
        "yaml octal ts",
        b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: A, ts: 010}\n",
        "refuse",
    ),
    ("yaml 012", b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: 012, ts: 1}\n", "refuse"),
    ("duplicate field", b"join: stream-table\nvariant: left\nvariant: inner\nevents: []\n", "refuse"),
    (
        "seed-000 unknown event field",
        b"join: window-aggregate\nwindow: {size_ms: 10}\nevents:\n- {key: k, vale: 1, ts: 1}\n",
        "refuse",
    ),
    (
        "seed-000 missing value",
        b"join: window-aggregate\nwindow: {size_ms: 10}\nevents:\n- {key: k, ts: 1}\n",
        "refuse",
    ),
    (
        "seed-000 ts >= 2^63",
        b"join: window-aggregate\nwindow: {size_ms: 10}\nevents:\n- {key: k, value: 1, ts: 9223372036854775808}\n",
        "refuse",
    ),
    (
        "seed-000 partition: true",
        b"join: window-aggregate\nwindow: {size_ms: 10}\npartitions: 2\nevents:\n"
        b"- {key: k, value: 1, ts: 1, partition: true}\n",
        "refuse",
    ),
    ("seed-000 group_by ''", b"join: table-aggregate\ngroup_by: ''\nevents: []\n", "refuse"),
    (
        "seed-000 self_join 'false'",
        b"join: wtable-wtable\nwindow: {size_ms: 10}\nself_join: 'false'\nwindow_shift_ms: -10\nevents: []\n",
        "refuse",
    ),
    (
        "window beyond 64-bit",
        b"join: stream-stream\nvariant: inner\nwindow: {before_ms: 9223372036854775808, after_ms: 1, grace_ms: 0}\n"
        b"events: []\n",
        "refuse",
    ),
    (
        "lag beyond 64-bit",
        b"join: stream-table\nvariant: left\narrival: {right: {lag_ms: 18446744073709551616}}\nevents: []\n",
        "refuse",
    ),
    (
        "duplicate offsets",
        b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: A, ts: 1, offset: 3}\n"
        b"- {side: left, key: k, value: B, ts: 2, offset: 3}\n",
        "refuse",
    ),
    (
        "decreasing offsets",
        b"join: stream-table\nvariant: left\nevents:\n- {side: left, key: k, value: A, ts: 1, offset: 3}\n"
        b"- {side: left, key: k, value: B, ts: 2, offset: 1}\n",
        "refuse",
    ),
    ("semantics 0.10", b'join: stream-table\nvariant: left\nsemantics: "0.10"\nevents: []\n', "refuse"),
    (
        "keys 1, 1.0, true (1 partition)",
        b"join: stream-table\nvariant: inner\nevents:\n- {side: right, key: 1, value: a, ts: 1}\n"
        b"- {side: left, key: true, value: A, ts: 2}\n- {side: left, key: 1.0, value: B, ts: 3}\n",
        "no-output",
    ),
    (
        "foreign keys 1.0 and true against the customer 1",
        b"join: fk\nvariant: inner\nforeign_key: c\nevents:\n- {side: right, key: 1, value: a, ts: 1}\n"
        b"- {side: left, key: o1, value: {c: 1.0}, ts: 2}\n- {side: left, key: o2, value: {c: true}, ts: 3}\n",
        "no-output",
    ),
]


def probe(name: str, text: bytes, expect: str) -> str:
    """``ok`` or ``coercion`` (or ``crash``) for one probe."""
    outcome, detail = run_case(through_file(text, ".yaml"))
    if outcome in ("crash", "hang"):
        return outcome
    if expect == "refuse":
        return "ok" if outcome == "refused" else "coercion"
    if outcome == "refused":
        return "coercion"  # a valid input refused
    scenario = load_scenario(_write(text))
    if expect.startswith("value="):
        return "ok" if scenario.events[0].value == expect[6:] else "coercion"
    if expect == "no-output":
        return "ok" if not kjoin.run(scenario).outputs else "coercion"
    raise ValueError(expect)


def _write(text: bytes) -> Path:
    folder = Path(tempfile.mkdtemp())
    path = folder / "probe.yaml"
    path.write_bytes(text)
    return path


def main(argv: list[str]) -> int:
    n = int(argv[0]) if argv else 300
    seed = int(argv[1]) if len(argv) > 1 else 0
    counts: dict[str, int] = {}
    examples: dict[str, list[str]] = {}
    started = time.monotonic()
    for label, call in cases(n, seed):
        outcome, detail = run_case(call)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome in ("crash", "hang"):
            examples.setdefault(outcome, []).append(f"{label}: {detail}")
    for name, text, expect in COERCION_PROBES:
        result = probe(name, text, expect)
        counts[result if result != "ok" else "probe-ok"] = counts.get(result if result != "ok" else "probe-ok", 0) + 1
        if result != "ok":
            examples.setdefault(result, []).append(name)
    print(json.dumps(counts, sort_keys=True), f"{time.monotonic() - started:.1f} s")
    for outcome, lines in examples.items():
        for line in sorted(set(lines))[:15]:
            print(f"  {outcome}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
