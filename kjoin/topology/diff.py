"""``kjoin diff app.yaml``: every record of the app's output topics that changes between two Kafka versions or
two configurations of a topology document, with the rule or setting that changes it.

The whole app is run (every node, every repartition and internal topic), so a rule that acts upstream of a join,
such as KIP-962's null-key records kept by a repartition that feeds a left join (``relaxed_null_keys``), shows
in the outputs it adds.

An input record is known by its event (its index in the document's events). Each output record belongs to the
event whose record, or whose consequences, the step that wrote it took (:meth:`TopologyTrace.event_of`). For one
event, the outputs equal in both runs match first (topic, key, value, timestamp); of the rest, one in the same
topic with the same key is ``changed``, others ``removed`` or ``added``; the same outputs in another order are
``reordered``. Attribution is :class:`kjoin.diff.Attribution`'s: each difference is charged to the one rule of
:mod:`kjoin.semantics` or setting that alone produces it (then the smallest sets of them).

A *setting* is a path into the document: a node's field by the node's name (``per_hour.grace_ms``,
``enriched.grace_ms``, ``customers.history_retention_ms``, ``joined.window.after_ms``) or a document field
(``partitions``, ``schedule``). A field of a node's operation mapping is reached through the node
(``per_hour.grace_ms`` is ``per_hour``'s ``windowed_by: {grace_ms}``); an aggregate's window through the
aggregate (``counts.grace_ms`` is the ``windowed_by`` node it counts).
"""

from __future__ import annotations

import copy
import dataclasses
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Mapping

from ..diff import Attribution, Diff, Difference, Outputs, after_text, compare_outputs, head_and_foot, rules_text
from ..diff import _setting_text, switches_of
from ..diff import diff as join_diff
from ..scenario.inputs import read_document
from ..records import render_value
from ..scenario.fields import ScenarioError
from ..semantics import Semantics
from .document import DOCUMENT_FIELDS, OPERATIONS, TopologyScenario

__all__ = [
    "TopologyDiff",
    "diff_topology",
    "setting_location",
    "outputs_per_event",
    "apply_settings",
    "retuned",
    "settings_of_node",
]

_DOCUMENT_SETTINGS = ("partitions", "schedule", "key_serde")
"""The document's own fields that ``--set`` turns (the others are what a diff compares, or change no output)."""
_WINDOW_FIELDS = ("size_ms", "advance_ms", "grace_ms", "inactivity_gap_ms", "time_difference_ms")
_JOIN_WINDOW_FIELDS = ("before_ms", "after_ms", "grace_ms")
_NODE_SETTINGS = {
    "table": ("history_retention_ms", "partitions"),
    "stream": ("partitions",),
    "global_table": ("partitions",),
    "repartition": ("partitions",),
    "through": ("partitions",),
    "to": ("partitions",),
}
_JOIN_SETTINGS = ("grace_ms",)
_AGGREGATES = ("count", "reduce", "aggregate")


class TopologyDiff(Diff):
    """The differences between two runs of a topology document, in the second run's order; each output shown
    with its topic (``enriched-orders: o1-null@5``)."""

    def table(self) -> str:
        from ..render import format_table

        head, foot = head_and_foot(self.title, self.before, self.after, self.differences, self.switches)
        if not self.differences:
            return "\n".join([head, "no output changes", *foot])
        rows = []
        for d in self.differences:
            rules = rules_text(d)
            rows.append([str(d.event), d.input.describe(), d.change, _text(d.before), _text(d.after), rules])
        table = format_table(["event", "input", "change", "before", "after", "rules"], rows)
        return "\n".join([head, table, *foot])


def _text(outputs: Any) -> str:
    if outputs is None:
        return "-"
    if isinstance(outputs, list):
        return ", ".join(_text(o) for o in outputs)
    value = render_value(outputs["value"])
    return f"{outputs['topic']}: {render_value(outputs['key'])}:{value}@{outputs['ts']}"


# -- the API ----------------------------------------------------------------------------------
def diff(
    scenario: Any,
    from_: "str | Semantics | None" = None,
    to: "str | Semantics | None" = None,
    set: Mapping[str, Any] | None = None,  # named as the CLI's --set
) -> Diff:
    """``kjoin.diff``: a topology (a :class:`~kjoin.topology.document.TopologyScenario`, or a document or file whose
    ``topology:`` has no ``join:``) diffed whole by :func:`diff_topology`, ``set`` naming its nodes
    (``per_hour.grace_ms``); a single join by :func:`kjoin.diff.diff`."""
    if isinstance(scenario, TopologyScenario):
        return diff_topology(scenario.to_dict(), from_, to, set, scenario.name)
    if isinstance(scenario, (str, Path)):
        document = read_document(Path(scenario))
        if isinstance(document, Mapping) and "topology" in document and "join" not in document:
            return diff_topology(document, from_, to, set, str(scenario))
    elif isinstance(scenario, Mapping) and "topology" in scenario and "join" not in scenario:
        return diff_topology(scenario, from_, to, set, None)
    return join_diff(scenario, from_, to, set)


def diff_topology(
    document: Mapping[str, Any],
    from_: "str | Semantics | None" = None,
    to: "str | Semantics | None" = None,
    set: Mapping[str, Any] | None = None,  # named as the CLI's --set
    source: str | None = None,
) -> TopologyDiff:
    """Every output record of the topology ``document`` that changes from ``from_`` (default: its own semantics) to
    ``to`` (default: ``from_``) with the settings ``set`` (``{"per_hour.grace_ms": 0}``), each charged to the rule or
    setting that alone changes it."""
    document = copy.deepcopy(dict(document))
    first, second, settings, switches = switches_of(
        document, from_, to, set, source, lambda path, at, named: setting_location(at, path, named)
    )
    base = _run(document, first, {}, source, "--from")
    outputs = outputs_per_event(base)
    target = _run(document, second, settings, source, "--set" if settings else "--to")
    differences = compare_events(outputs, outputs_per_event(target))

    def differences_of(semantics: Semantics, turned: Mapping[str, Any]) -> list[Difference] | None:
        try:
            trace = _scenario(apply_settings(document, turned, semantics), None).run()
        except (ScenarioError, ValueError):
            return None  # that combination is not a topology kjoin can run
        return compare_events(outputs, outputs_per_event(trace))

    attribution = Attribution(first, switches, differences_of)
    charged = attribution.charge(differences)
    title = f"topology {document.get('name') or source or 'app'}"
    after = after_text(second, settings)
    names = tuple(name for name, _ in switches)
    return TopologyDiff(title, str(first), after, charged, names, attribution.runs, settings)


# -- settings ---------------------------------------------------------------------------------
def setting_location(document: Mapping[str, Any], path: str, source: str | None = None) -> tuple[Any, ...]:
    """Where ``path`` (``per_hour.grace_ms``, ``partitions``) lives in ``document``: the keys from its top (``
    ("topology", 3, "windowed_by", "grace_ms")``), or kjoin's error naming the settings there are."""
    parts = path.split(".")
    if len(parts) == 1:
        if parts[0] in _DOCUMENT_SETTINGS:
            return (parts[0],)
        if parts[0] in ("semantics",):
            raise ScenarioError(f"--set {path}: give the versions with --from and --to", source)
        if parts[0] in DOCUMENT_FIELDS:
            raise ScenarioError(f"--set {path}: not a setting to compare; edit the document", source)
    nodes = document.get("topology") or []
    names = [node.get("name") for node in nodes if isinstance(node, Mapping)]
    if parts[0] not in names:
        near = get_close_matches(parts[0], [str(n) for n in names] + list(_DOCUMENT_SETTINGS), n=1)
        hint = f"; did you mean {near[0]}?" if near else ""
        raise ScenarioError(
            f"--set {path}: {parts[0]} is neither a node of the topology nor a document setting{hint} (a setting is "
            f"NODE.FIELD, e.g. a windowed count's NODE.grace_ms, or one of {', '.join(_DOCUMENT_SETTINGS)})",
            source,
        )
    index = names.index(parts[0])
    found = _node_setting(nodes, index, parts[1:])
    if found is None:
        choices = ", ".join(f"{parts[0]}.{name}" for name in _settings_of(nodes, index)) or "none"
        raise ScenarioError(f"--set {path}: not a setting of node {parts[0]}; its settings are {choices}", source)
    return ("topology", *found)


def _operation(node: Mapping[str, Any]) -> str | None:
    return next((op for op in OPERATIONS if op in node), None)


def _settings_of(nodes: list[Any], index: int) -> list[str]:
    node = nodes[index]
    op = _operation(node)
    if op is None:
        return []
    if op == "windowed_by":
        return list(_WINDOW_FIELDS)
    if op.endswith("join"):
        window = [f"window.{name}" for name in _JOIN_WINDOW_FIELDS] if "window" in node else []
        return window + [name for name in _JOIN_SETTINGS if "window" not in node]
    if op in _AGGREGATES:
        windowed = _windowed_input(nodes, node)
        return [] if windowed is None else _settings_of(nodes, windowed)
    return list(_NODE_SETTINGS.get(op, ()))


def _windowed_input(nodes: list[Any], node: Mapping[str, Any]) -> int | None:
    for index, other in enumerate(nodes):
        if isinstance(other, Mapping) and other.get("name") == node.get("input") and "windowed_by" in other:
            return index
    return None


def _node_setting(nodes: list[Any], index: int, fields: list[str]) -> tuple[Any, ...] | None:
    node = nodes[index]
    op = _operation(node)
    if op is None or not fields:
        return None
    if op == "windowed_by":
        return (index, "windowed_by", fields[0]) if len(fields) == 1 and fields[0] in _WINDOW_FIELDS else None
    if op in _AGGREGATES:
        windowed = _windowed_input(nodes, node)
        return None if windowed is None else _node_setting(nodes, windowed, fields)
    if op.endswith("join") and "window" in node:
        if fields[0] == "window":
            fields = fields[1:]
        return (index, "window", fields[0]) if len(fields) == 1 and fields[0] in _JOIN_WINDOW_FIELDS else None
    if len(fields) == 1 and fields[0] in _settings_of(nodes, index):
        return (index, fields[0])
    return None


def apply_settings(
    document: Mapping[str, Any], settings: Mapping[str, Any], semantics: Semantics | None = None
) -> dict[str, Any]:
    """``document`` with ``settings`` (``{"per_hour.grace_ms": 0}``) written where they live, and ``semantics``."""
    data = copy.deepcopy(dict(document))
    if semantics is not None:
        data["semantics"] = str(semantics)
    for path, value in settings.items():
        *parents, leaf = setting_location(data, path)
        place: Any = data
        for part in parents:
            place = place[part]
        place[leaf] = value
    return data


# -- runs and their outputs -------------------------------------------------------------------
def _scenario(data: Mapping[str, Any], source: str | None) -> TopologyScenario:
    return TopologyScenario.from_dict(dict(data), source)


def _run(document: Mapping[str, Any], semantics: Semantics, settings: Mapping[str, Any], source: Any, flag: str):
    try:
        return _scenario(apply_settings(document, settings, semantics), None).run()
    except (ScenarioError, ValueError) as error:
        given = " ".join(f"{path}={_setting_text(value)}" for path, value in settings.items())
        what = f"with {given} " if given else ""
        prefix = f"{source}: " if source else ""
        raise ScenarioError(f"{prefix}{flag}: the topology {what}under semantics {semantics} cannot run: {error}")


def outputs_per_event(trace: Any) -> dict[tuple[Any, ...], Outputs]:
    """Each input event's output records (topic, key, value, ts), by ``("event", index)``."""
    per_event: dict[tuple[Any, ...], Outputs] = {}
    inputs = {step.record.event: step for step in trace.steps if step.record.written_at is None}
    for event, written in enumerate(trace.outputs_by_event()):
        step = inputs.get(event)
        if step is None:
            continue  # an event no task took (a record of a topic the topology does not read)
        outputs = [_observed(record) for record in written]
        results = [(render_value([o["topic"], o["key"]]), None) for o in outputs]
        per_event[("event", event)] = Outputs(step.index, step.record, outputs, results, event)  # type: ignore[arg-type]
    return per_event


def _observed(record: Any) -> dict[str, Any]:
    return {"topic": record.topic, "key": record.key, "value": record.value, "ts": record.ts}


def compare_events(first: Mapping[Any, Outputs], second: Mapping[Any, Outputs]) -> list[Difference]:
    """The differences from ``first`` to ``second``, event by event in the events' order."""
    found: list[Difference] = []
    for identity in sorted(set(first) | set(second), key=lambda identity: identity[1]):
        old, new = first.get(identity), second.get(identity)
        record = (new or old).record  # type: ignore[union-attr]
        step = (new or old).step  # type: ignore[union-attr]
        from_step = (old or new).step  # type: ignore[union-attr]
        empty = Outputs(step, record, [], [], identity[1])
        found += compare_outputs(old or empty, new or empty, step, from_step)
    return found


# -- a built topology with rules and settings turned ----------------------------------------------
def retuned(topology: Any, semantics: Semantics, settings: Mapping[str, Any]) -> Any:
    """A copy of the built ``topology`` (a :class:`kjoin.Topology`, from Python or a document) under ``semantics``
    with ``settings`` turned: ``{"per_hour.grace_ms": 0}`` (a windowed aggregate's window field),
    ``{"enriched.grace_ms": 5}`` (a stream-table join's grace), ``{"joined.window.after_ms": 10}`` (a stream-stream
    join's window), ``{"customers.history_retention_ms": 100}`` (a table). What ``build()`` decides from the
    semantics (a repartition that keeps null keys, KIP-962) is decided again. A path that names no such setting:
    kjoin's error naming the node's settings."""
    other = copy.deepcopy(topology)
    other.semantics = semantics
    for path, value in settings.items():
        node_name, *fields = path.split(".")
        node = other.graph.nodes.get(node_name)
        if node is None:
            near = get_close_matches(node_name, list(other.graph.nodes), n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise ScenarioError(
                f"set {path}: the topology has no node {node_name}{hint} (a setting is NODE.FIELD, with the name the "
                "node was given, e.g. a windowed count's NODE.grace_ms)"
            )
        _turn(node, path, fields, value)
    for node in other.graph.nodes.values():
        table = node.params.get("table") if node.op == "stream-table" else None
        if node.params.get("grace_ms") is not None and table is not None:
            if table.params.get("history_retention_ms") is None:
                raise ScenarioError(
                    f"set: {node.name}.grace_ms needs a versioned table (Kafka: KTable must be versioned to use a "
                    f"grace period in a stream table join); set {table.name}.history_retention_ms too"
                )
    other._built = False  # decided again under the new semantics
    for node in other.graph.nodes.values():
        node.params.pop("keeps_null_keys", None)
    return other.build()


def settings_of_node(node: Any) -> list[str]:
    """The fields ``set`` reaches on a built node: its millisecond parameters and its window's fields."""
    windows = _windows(node.params)
    found = [name for name, value in node.params.items() if name.endswith("_ms") and not isinstance(value, bool)]
    for name in windows:
        fields = [f.name for f in dataclasses.fields(node.params[name]) if f.name.endswith("_ms")]
        found += fields if len(windows) == 1 else [f"{name}.{field}" for field in fields]
    return found


def _windows(params: Mapping[str, Any]) -> list[str]:
    """The node's window parameters: dataclasses with millisecond fields (a join's or an aggregate's window)."""
    return [
        name
        for name, held in params.items()
        if dataclasses.is_dataclass(held)
        and not isinstance(held, type)
        and any(f.name.endswith("_ms") for f in dataclasses.fields(held))
    ]


def _turn(node: Any, path: str, fields: list[str], value: Any) -> None:
    params = node.params
    windows = _windows(params)
    if len(fields) == 1 and fields[0] in params and fields[0].endswith("_ms"):
        params[fields[0]] = value
        return
    if len(fields) == 1 and len(windows) == 1:  # per_hour.grace_ms: the one window the node has
        fields = [windows[0], fields[0]]
    if len(fields) == 2 and fields[0] in windows:
        held = params[fields[0]]
        if fields[1] in {f.name for f in dataclasses.fields(held)} and fields[1].endswith("_ms"):
            try:
                params[fields[0]] = dataclasses.replace(held, **{fields[1]: value})
            except (TypeError, ValueError) as error:
                raise ScenarioError(f"set {path}={value!r}: {error}") from None
            return
    choices = ", ".join(f"{node.name}.{name}" for name in settings_of_node(node)) or "none"
    raise ScenarioError(f"set {path}: not a setting of node {node.name} ({node.op}); its settings are {choices}")
