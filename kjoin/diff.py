"""``kjoin diff``: every output that changes between two Kafka versions or two configurations, with
the rules that change it.

Two runs of one scenario are compared input record by input record. An input record is known by
its event (its index in the scenario's events; a windowed-table scenario's by ``(side, partition,
offset)``), not by its step: with ``arrival`` a change can reorder the steps, and ``partitions``
moves records to other partitions. Each output belongs to the input record whose step emitted it
(a foreign-key join's delivery counts with the input record that set its chain off). For one input
record, outputs equal in both runs match first (what the output topic shows: key, value, ts,
tombstone, old value, window); of the rest, one of the same key sharing a joined value is
``changed``, others ``removed`` or ``added``; the same outputs in another order are ``reordered``.

Attribution is exact. The *switches* are the rules of :mod:`kjoin.semantics` whose values differ
between the two semantics, and the settings given (``window.grace_ms``, …). A difference is
charged to a switch when turning that switch alone (from the first run's configuration) produces
the very same difference: same input record, change, before and after. A rule that requires
another is turned with it (``with``) and charged only for what the requirement alone does not
produce. Differences no single switch produces are tried against pairs, then triples, …: each is
charged to the smallest sets of switches that produce it, all of whose names it carries. Past
:data:`MAX_RUNS` runs, what is left is charged to every switch together (``together``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from difflib import get_close_matches
from itertools import combinations
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .engine import run
from .records import Record, render_value
from .scenario import AGGREGATE_JOINS, AggregateSpec, Scenario, ScenarioError
from .scenario.aggregate import AGGREGATE_FIELDS
from .scenario.inputs import read_document
from .scenario.model import DOCUMENT_FIELDS
from .semantics import Semantics, parse_semantics
from .trace import output_to_dict

__all__ = [
    "Attribution",
    "Difference",
    "Diff",
    "diff",
    "MAX_RUNS",
    "parse_setting",
    "compare_outputs",
    "Outputs",
    "upstream_notes",
]

MAX_RUNS = 400
"""How many runs the attribution may make before it charges what is left to every switch together."""

_JOIN_WINDOW = ("before_ms", "after_ms", "grace_ms", "spurious_result_fix")
_TIME_WINDOWS = ("size_ms", "advance_ms", "grace_ms")
_TABLE = ("versioned", "history_retention_ms")
_SIDE_LAG = {"lag_ms": None}
_NESTED: dict[str, Any] = {
    "window": dict.fromkeys(_JOIN_WINDOW),
    "right_window": dict.fromkeys(_TIME_WINDOWS),
    "left": dict.fromkeys(_TABLE),
    "right": dict.fromkeys(_TABLE),
    "arrival": {"left": _SIDE_LAG, "right": _SIDE_LAG},
    "delivery": dict.fromkeys(("mode", "seed", "wait_for_row")),
}
"""The settings below the top level that ``--set`` reaches (a leaf: ``None``)."""
_NOT_SETTINGS = {
    "join": "a diff compares one join; run kjoin diff on each scenario",
    "semantics": "give the versions with --from and --to",
    "events": "a diff compares configurations of the same events; edit the events in the file",
    "name": "a name changes no output",
    "description": "a description changes no output",
}
_OBSERVED = ("key", "window", "value", "ts", "tombstone", "old")
"""What an output topic shows of an output (not which rule emitted it, nor whose step it came from, nor the task
that emitted it: the output topic places a record by its key)."""


# -- the result -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    """One output that appears (``added``), disappears (``removed``) or changes (``changed``) in the
    second run, or the outputs of one input record in another order (``reordered``).

    ``step`` is the input record's step in the second run (``from_step`` in the first); ``before`` and
    ``after`` are outputs as dicts (a list of them for ``reordered``); ``rules`` the switches charged
    with it: :class:`~kjoin.Semantics` rule names or setting paths. ``with_rules`` are rules turned
    along with them because they require them. ``together``: no set of switches smaller than all of
    them was found that produces it. ``event``: the input record's index in the scenario's events
    (what identifies it when a setting such as ``partitions`` moves it to another partition)."""

    change: str
    step: int
    from_step: int
    input: Record
    key: Any
    before: Any
    after: Any
    rules: tuple[str, ...] = ()
    with_rules: tuple[str, ...] = ()
    together: bool = False
    event: int | None = None

    @property
    def identity(self) -> tuple[Any, ...]:
        """What makes two runs' differences the same difference: the input record, the change, before and after."""
        record = _identity(self.input) if self.event is None else ("event", self.event)
        return (record, self.change, _canon(self.before), _canon(self.after))

    def to_dict(self) -> dict[str, Any]:
        data = {
            "change": self.change,
            "step": self.step,
            "from_step": self.from_step,
            "input": self.input.to_dict(),
            **({} if self.event is None else {"event": self.event}),
            "key": self.key,
            "before": self.before,
            "after": self.after,
            "rules": list(self.rules),
        }
        if self.with_rules:
            data["with"] = list(self.with_rules)
        if self.together:
            data["together"] = True
        return data


@dataclass
class Diff:
    """The differences between two runs of a scenario, in the second run's step order."""

    title: str
    before: str
    after: str
    differences: list[Difference]
    switches: tuple[str, ...]
    runs: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """What the diff cannot see (:func:`upstream_notes`), printed under the table."""

    def __iter__(self) -> Iterator[Difference]:
        return iter(self.differences)

    def __len__(self) -> int:
        return len(self.differences)

    def __getitem__(self, index: int) -> Difference:
        return self.differences[index]

    def by_rule(self) -> dict[str, list[Difference]]:
        """The differences charged to each switch (a difference charged to several is under each)."""
        return charged_by_rule(self.switches, self.differences)

    def jsonl(self) -> Iterator[str]:
        """One JSON object per difference (``kjoin diff --format jsonl``)."""
        for difference in self.differences:
            yield json.dumps(difference.to_dict(), separators=(", ", ": "), default=render_value)

    def table(self, rows: int | None = None) -> str:
        """The differences as ``kjoin diff`` prints them. ``rows``: only the first ``rows`` differences, in columns
        as wide as they need, then how many more there are; the last lines count them all."""
        from .render import format_table

        if rows is not None and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 1):
            raise ValueError(f"table(rows=...): rows is a whole number of at least 1, or None for all, got {rows!r}")
        head, foot = head_and_foot(self.title, self.before, self.after, self.differences, self.switches)
        foot += self.notes
        if not self.differences:
            return "\n".join([head, "no output changes", *foot])
        shown = self.differences if rows is None else self.differences[:rows]
        more = [f"... and {len(self.differences) - len(shown)} more"] if len(shown) < len(self.differences) else []
        table_rows = []
        for d in shown:
            record = d.input
            rules = rules_text(d)
            step = str(d.step) if d.step == d.from_step else f"{d.from_step} -> {d.step}"
            table_rows.append(
                [step, record.describe(), d.change, render_value(d.key), _text(d.before), _text(d.after), rules]
            )
        table = format_table(["step", "input", "change", "key", "before", "after", "rules"], table_rows)
        return "\n".join([head, table, *more, *foot])


def _text(outputs: Any) -> str:
    if outputs is None:
        return "-"
    if isinstance(outputs, list):
        return ", ".join(_text(o) for o in outputs)
    text = "null" if outputs.get("tombstone") else render_value(outputs.get("value"))
    window = outputs.get("window")
    where = f" [{window['start_ms']}, {window['end_ms']})" if window else ""
    old = f" (old {render_value(outputs['old'])})" if "old" in outputs else ""
    return f"{text}@{outputs['ts']}{where}{old}"


def charged_by_rule(switches: Iterable[str], differences: Iterable[Difference]) -> dict[str, list[Difference]]:
    """Each switch's differences (every switch, a difference charged to several under each)."""
    charged: dict[str, list[Difference]] = {name: [] for name in switches}
    for difference in differences:
        for name in difference.rules:
            charged[name].append(difference)
    return charged


def head_and_foot(
    title: str, before: str, after: str, differences: list[Difference], switches: Iterable[str]
) -> tuple[str, list[str]]:
    """A diff's first line (``title: before -> after: N differences``) and its last ones: the switches charged, with
    their counts, and those that changed nothing."""
    switches = list(switches)
    changes = f"{len(differences)} difference{'' if len(differences) == 1 else 's'}"
    charged = {name: len(found) for name, found in charged_by_rule(switches, differences).items() if found}
    idle = [name for name in switches if name not in charged]
    foot = ["charged: " + ", ".join(f"{name} ({count})" for name, count in charged.items())] if charged else []
    if idle:
        foot.append("no difference charged to: " + ", ".join(idle))
    return f"{title}: {before} -> {after}: {changes}", foot


def rules_text(difference: Difference) -> str:
    """The rules a difference is charged to, as a table's cell: ``a, b (together) (with c)``."""
    text = ", ".join(difference.rules) + (" (together)" if difference.together else "")
    if difference.with_rules:
        text += f" (with {', '.join(difference.with_rules)})"
    return text


# -- the API ----------------------------------------------------------------------------------
def diff(
    scenario: Any,
    from_: "str | Semantics | None" = None,
    to: "str | Semantics | None" = None,
    set: Mapping[str, Any] | None = None,  # named as the CLI's --set
) -> Diff:
    """Every output that changes from ``scenario`` under ``from_`` to ``scenario`` with the settings
    ``set`` (``{"window.grace_ms": 500}``) under ``to``, each charged to the rules and settings that
    change it. ``scenario``: a :class:`~kjoin.Scenario`, a windowed-table spec, a document or a file path;
    ``from_`` defaults to its own semantics, ``to`` to ``from_``. (``kjoin.diff``, the package's function, takes a
    topology document too: :func:`kjoin.topology.diff.diff`.)"""
    document, source = _document(scenario)
    first, second, settings, switches = switches_of(document, from_, to, set, source, _check_path)
    base = _load(document, first, {}, source, "--from")
    target = _load(document, second, settings, source, "--set" if settings else "--to")
    outputs = _per_input(base)
    differences = _compare(outputs, _per_input(target))

    def differences_of(semantics: Semantics, turned: Mapping[str, Any]) -> list[Difference] | None:

        try:
            trace = run(_build(_apply(document, turned, semantics), None))
        except (ScenarioError, ValueError):
            return None  # that combination is not a scenario kjoin can run
        return _compare(outputs, _per_input(trace))

    attribution = Attribution(first, switches, differences_of)
    charged = attribution.charge(differences)
    title = _title(base)
    names = tuple(name for name, _ in switches)
    after = after_text(second, settings)
    return Diff(title, str(first), after, charged, names, attribution.runs, settings, upstream_notes(names))


def switches_of(
    document: Mapping[str, Any],
    from_: "str | Semantics | None",
    to: "str | Semantics | None",
    set: Mapping[str, Any] | None,
    source: str | None,
    check_path: Callable[[str, Any, str | None], Any],
) -> tuple[Semantics, Semantics, dict[str, Any], list[tuple[str, Any]]]:
    """A diff's two semantics (``from_`` defaults to the document's own, ``to`` to ``from_``), its settings, each
    path checked by ``check_path(path, document, source)``, and the switches it charges differences to: every rule
    the two versions set apart, then every setting."""
    try:
        first = parse_semantics(document.get("semantics") if from_ is None else from_)
        second = first if to is None else parse_semantics(to)
    except ValueError as error:
        raise ScenarioError(f"semantics: {error}", source) from None
    settings = dict(set or {})
    for path in settings:
        check_path(path, document, source)
    switches: list[tuple[str, Any]] = [(name, getattr(second, name)) for name in first.switched(second)]
    return first, second, settings, switches + list(settings.items())


def after_text(second: Semantics, settings: Mapping[str, Any]) -> str:
    """The second side of a diff's title: its version and the settings turned (``4.4 per_hour.grace_ms=0``)."""
    return str(second) + "".join(f" {path}={_setting_text(value)}" for path, value in settings.items())


UPSTREAM_RULES = {
    "relaxed_null_keys": "from 3.7 (KIP-962) a repartition topic that feeds a left join keeps the null-key records "
    "earlier releases dropped before writing it",
}
"""The rules that also change what a node upstream of a join writes to the topics the join reads."""


def upstream_notes(switches: Any) -> tuple[str, ...]:
    """What a diff of one join cannot see: a switched rule that also acts upstream of the join (a repartition)
    changes the join's input topics, which this diff reads unchanged."""
    notes = []
    for name in switches:
        if name in UPSTREAM_RULES:
            notes.append(
                f"not seen by this diff of one join: {name} also acts upstream ({UPSTREAM_RULES[name]}); this diff "
                "joins the same input records again, so if they are an app's repartition topic, diff the whole app: "
                "kjoin diff app.yaml --from ... --to ..., or run_topology(...).diff(semantics=...)"
            )
    return tuple(notes)


def parse_setting(text: str) -> tuple[str, Any]:
    """``window.grace_ms=500`` as ``("window.grace_ms", 500)``: the value read as YAML (true, null, 5, text)."""
    import yaml

    path, sep, value = text.partition("=")
    if not sep or not path.strip():
        raise ScenarioError(f"--set {text!r}: expected PATH=VALUE, e.g. --set window.grace_ms=500")
    try:
        return path.strip(), yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        return path.strip(), value


def _setting_text(value: Any) -> str:
    return json.dumps(value) if not isinstance(value, str) else value


# -- documents and runs ------------------------------------------------------------------------
def _document(scenario: Any) -> tuple[dict[str, Any], str | None]:
    if isinstance(scenario, Scenario):
        return scenario.to_dict(), scenario.name
    if isinstance(scenario, AggregateSpec):
        return copy.deepcopy(dict(scenario.data)), scenario.source
    if isinstance(scenario, (str, Path)):
        data = read_document(Path(scenario))
        if not isinstance(data, dict):
            raise ScenarioError("a scenario is a mapping with join, variant and events", str(scenario))
        return data, str(scenario)
    if isinstance(scenario, Mapping):
        return copy.deepcopy(dict(scenario)), None
    raise TypeError(f"diff: expected a Scenario, a document or a file path, got {type(scenario).__name__}")


def _check_path(path: str, document: Mapping[str, Any], source: str | None) -> None:
    """A ``--set`` path names a setting of the scenario: else an error naming it, with the nearest."""

    aggregate = document.get("join") in AGGREGATE_JOINS
    top = sorted((AGGREGATE_FIELDS if aggregate else DOCUMENT_FIELDS) - set(_NOT_SETTINGS))
    parts = path.split(".")
    if parts[0] in _NOT_SETTINGS:
        raise ScenarioError(f"--set {path}: not a setting to compare ({_NOT_SETTINGS[parts[0]]})", source)
    level: Any = dict.fromkeys(top)
    level.update({name: _NESTED[name] for name in _NESTED if name in level})
    if aggregate:
        level["window"] = dict.fromkeys(_TIME_WINDOWS)
    for depth, part in enumerate(parts):
        where = ".".join(parts[:depth])
        if not isinstance(level, Mapping):
            raise ScenarioError(f"--set {path}: {where} is a value, it has no field {part!r}", source)
        if part not in level:
            near = get_close_matches(part, list(level), n=1)
            fields = (
                f"did you mean {'.'.join([*parts[:depth], near[0]])}?" if near else f"the fields are {', '.join(level)}"
            )
            label = f"{where}.{part}" if where else part
            raise ScenarioError(f"--set {path}: {label} is not a setting of this scenario; {fields}", source)
        level = level[part]
    if isinstance(level, Mapping):
        raise ScenarioError(f"--set {path}: name one of its fields ({', '.join(f'{path}.{n}' for n in level)})", source)


def _apply(document: Mapping[str, Any], settings: Mapping[str, Any], semantics: Semantics) -> dict[str, Any]:
    data = copy.deepcopy(dict(document))
    data["semantics"] = str(semantics)
    for path, value in settings.items():
        node = data
        *parents, leaf = path.split(".")
        for part in parents:
            if node.get(part) is None:
                node[part] = {}
            node = node[part]
        node[leaf] = value
    return data


def _build(data: Mapping[str, Any], source: str | None) -> Any:
    if data.get("join") in AGGREGATE_JOINS:
        return AggregateSpec.from_dict(data, source)
    return Scenario.from_dict(data, source)


def _load(document: Mapping[str, Any], semantics: Semantics, settings: Mapping[str, Any], source: Any, flag: str):

    try:
        return run(_build(_apply(document, settings, semantics), None))
    except ScenarioError as error:
        given = " ".join(f"{path}={_setting_text(value)}" for path, value in settings.items())
        what = f"with {given} " if given else ""
        prefix = f"{source}: " if source else ""
        raise ScenarioError(f"{prefix}{flag}: the scenario {what}under semantics {semantics} cannot run: {error}")


def _title(trace: Any) -> str:
    scenario = trace.scenario
    if not isinstance(scenario, Scenario):  # an aggregate or a windowed-table join of the windowed-table design
        return scenario.join if scenario.join.endswith("aggregate") else f"{scenario.join} {scenario.variant} join"
    return f"{scenario.join} {scenario.variant} join"


# -- comparing two runs --------------------------------------------------------------------------
def _identity(record: Record) -> tuple[Any, ...]:
    return (record.side.value, record.partition, record.offset)


def _canon(outputs: Any) -> str:
    return json.dumps(outputs, sort_keys=True, default=render_value)


def _observed(output: Any) -> dict[str, Any]:
    data = output_to_dict(output)
    return {name: data[name] for name in _OBSERVED if name in data}


def _result_of(output: Any) -> tuple[str, tuple[str, str] | None]:
    """Which result an output is, to pair a changed one (:func:`_same_result`): its key and window, and
    the values joined (none for an aggregate's output)."""
    data = _observed(output)
    joined = (_canon(output.left), _canon(output.right)) if hasattr(output, "left") else None
    return _canon([data["key"], data.get("window")]), joined


def _same_result(one: tuple[str, Any], other: tuple[str, Any]) -> bool:
    """Two outputs are one result changed if they have the same key (and window) and, for a join, one of
    the values joined is the same and not null: ``A-a5`` and ``A-a1``, ``o1-alice`` and ``o1-null``; not
    ``null-f`` and ``E-null`` (two records' results)."""
    if one[0] != other[0]:
        return False
    if one[1] is None or other[1] is None:
        return one[1] is other[1]
    null = _canon(None)
    return any(mine == theirs != null for mine, theirs in zip(one[1], other[1]))


@dataclass
class Outputs:
    """One input record's outputs in one run (with the deliveries its change set off), and its step."""

    step: int
    record: Record
    outputs: list[dict[str, Any]]
    results: list[tuple[str, Any]]
    """Per output, which result it is (:func:`_result_of`)."""
    event: int | None = None
    """The record's index in the scenario's events, where the scenario lists them."""


def _per_input(trace: Any) -> dict[tuple[Any, ...], Outputs]:
    """Each input record's outputs (with those of the deliveries its change set off), by identity."""
    by_identity: dict[tuple[Any, ...], Outputs] = {}
    of_step: dict[int, tuple[Any, ...]] = {}
    events = _event_indexes(trace.scenario)
    for step in trace.steps:
        message = step.message
        if message is not None:
            owner = by_identity[of_step[message.origin_step]]
        else:
            event = events.get(_identity(step.record))
            identity = _identity(step.record) if event is None else ("event", event)
            while identity in by_identity:  # the same record twice (a self-join's second look): count it
                identity = (*identity, "again")
            of_step[step.index] = identity
            owner = by_identity[identity] = Outputs(step.index, step.record, [], [], event)
        owner.outputs.extend(_observed(output) for output in step.outputs)
        owner.results.extend(_result_of(output) for output in step.outputs)
    return by_identity


def _event_indexes(scenario: Any) -> dict[tuple[Any, ...], int]:
    """``(side, partition, offset)`` of each listed event's record -> its index in the events (a scenario
    of the windowed-table design has none: its records are named by their partition and offset)."""
    if not isinstance(scenario, Scenario):
        return {}
    from .scenario.builders import assign_offsets

    script = assign_offsets(scenario.events, scenario.partitions, scenario.foreign_key)
    return {_identity(item): index for index, item in enumerate(script) if isinstance(item, Record)}


def _compare(first: Mapping[Any, Outputs], second: Mapping[Any, Outputs]) -> list[Difference]:
    """The differences from ``first`` to ``second``, in the second run's step order (inputs only in the
    first run last)."""
    found: list[Difference] = []
    order = sorted(second, key=lambda identity: second[identity].step)
    order += sorted((i for i in first if i not in second), key=lambda identity: first[identity].step)
    for identity in order:
        old, new = first.get(identity), second.get(identity)
        record = (new or old).record  # type: ignore[union-attr]
        step = (new or old).step  # type: ignore[union-attr]
        from_step = (old or new).step  # type: ignore[union-attr]
        found += compare_outputs(
            old or Outputs(step, record, [], []), new or Outputs(step, record, [], []), step, from_step
        )
    return found


def compare_outputs(old: Outputs, new: Outputs, step: int, from_step: int) -> list[Difference]:
    """One input record's outputs in two runs: equal ones match first; of the rest, the same result
    (:func:`_result_of`) is ``changed``, others are ``removed`` or ``added``."""
    record = new.record
    event = new.event if new.event is not None else old.event
    left = list(zip(old.outputs, old.results))
    right = list(zip(new.outputs, new.results))
    for item in list(left):
        if item in right:
            right.remove(item)
            left.remove(item)
    differences = []
    for output, result in list(left):
        partner = next((item for item in right if _same_result(item[1], result)), None)
        if partner is not None:
            right.remove(partner)
            left.remove((output, result))
            differences.append(
                Difference("changed", step, from_step, record, output["key"], output, partner[0], event=event)
            )
    differences += [Difference("removed", step, from_step, record, o["key"], o, None, event=event) for o, _ in left]
    differences += [Difference("added", step, from_step, record, o["key"], None, o, event=event) for o, _ in right]
    if not differences and old.outputs != new.outputs:
        differences.append(
            Difference("reordered", step, from_step, record, record.key, old.outputs, new.outputs, event=event)
        )
    return differences


# -- attribution -------------------------------------------------------------------------------
class Attribution:
    """Runs a scenario with sets of switches turned, and charges each difference to the smallest sets
    that produce it. ``differences_of(semantics, settings)`` runs the scenario with those (the first
    run's semantics with rules switched, and the settings turned) and gives its differences from the
    first run, or ``None`` if that combination cannot run; the reference engine and Spark each pass
    their own."""

    def __init__(
        self,
        first: Semantics,
        switches: list[tuple[str, Any]],
        differences_of: Callable[[Semantics, Mapping[str, Any]], list[Difference] | None],
    ) -> None:
        self.first = first
        self.switches = switches
        self.rules = {name for name, _ in switches if name in Semantics.rules()}
        self.differences_of = differences_of
        self.runs = 0
        self._produced: dict[frozenset[str], frozenset[Any]] = {}

    def _configuration(self, names: frozenset[str]) -> tuple[Semantics, dict[str, Any]]:
        values = dict(self.switches)
        rules = {name: values[name] for name in names if name in self.rules}
        settings = {name: values[name] for name in names if name not in self.rules}
        return self.first.with_rules(**rules), settings

    def _closure(self, names: frozenset[str]) -> frozenset[str]:
        """The switches turned when ``names`` are: with the rules they require (or that require them)."""
        semantics, _ = self._configuration(names)
        return names | frozenset(name for name in self.first.switched(semantics) if name in self.rules)

    def produced(self, names: frozenset[str]) -> frozenset[Any]:
        """The identities of the differences that turning exactly ``names`` makes (none if it cannot run)."""
        if not names:
            return frozenset()
        if names not in self._produced:
            self.runs += 1
            found = self.differences_of(*self._configuration(names))
            self._produced[names] = frozenset(() if found is None else (d.identity for d in found))
        return self._produced[names]

    def charge(self, differences: list[Difference]) -> list[Difference]:
        names = [name for name, _ in self.switches]
        order = {name: index for index, name in enumerate(names)}
        wanted = {d.identity for d in differences}
        self._produced.setdefault(frozenset(names), frozenset(wanted))  # every switch turned: the second run
        charged: dict[Any, tuple[set[str], set[str]]] = {}
        for size in range(1, len(names) + 1):
            if not wanted or self.runs >= MAX_RUNS:
                break
            found: dict[Any, tuple[set[str], set[str]]] = {}
            for chosen in combinations(names, size):
                if self.runs >= MAX_RUNS:
                    break
                turned = frozenset(chosen)
                closure = self._closure(turned)
                made = self.produced(closure) - self.produced(closure - turned)
                for identity in made & wanted:
                    rules, along = found.setdefault(identity, (set(), set()))
                    rules.update(turned)
                    along.update(closure - turned)
            charged.update(found)
            wanted -= set(found)
        result = []
        for d in differences:
            if d.identity in charged:
                rules, along = charged[d.identity]
                along -= rules
                result.append(_charged(d, sorted(rules, key=order.get), sorted(along, key=order.get), False))
            else:
                result.append(_charged(d, names, [], True))
        return result


def _charged(d: Difference, rules: Any, along: Any, together: bool) -> Difference:
    return replace(d, rules=tuple(rules), with_rules=tuple(along), together=together)
