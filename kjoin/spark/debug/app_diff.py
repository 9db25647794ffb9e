"""``run_topology(...).diff(semantics=..., set={...})``: ``kjoin diff`` of a whole app on Spark.

The same input topics run again through the same topology under another Kafka version (``semantics="4.4"``), with
node settings turned (``set={"per_hour.grace_ms": 0}``: the node's name, then its field, as
:func:`kjoin.topology.diff.retuned` reads them), and the two runs' output topics compared record by record: a
record of an output topic (topic, partition, key, value, timestamp; not its offset, which every record before it
moves) that only the first run wrote is ``removed``, one only the second wrote ``added`` (a record whose value
changed is one of each). The comparison runs in Spark (``exceptAll`` both ways); the differences, not the topics,
come to the driver.

Attribution is :class:`kjoin.diff.Attribution`'s, as for a join: each difference is charged to the one rule of
:mod:`kjoin.semantics` or setting that alone produces it (the topics run again with that switch alone turned), then
to the smallest sets of them. Every run is a run of the whole app, so :data:`MAX_APP_RUNS` bounds them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...diff import Attribution, Difference, charged_by_rule, head_and_foot, rules_text
from ...records import render_value
from ...scenario import ScenarioError
from ...semantics import Semantics, parse_semantics
from ...topology.diff import retuned
from ...topology.graph import TopologyError
from ...topology.trace import TopicRecord
from ..io.topic import SparkInputError

if TYPE_CHECKING:  # pragma: no cover
    from ..topology_run import TopologyRun

__all__ = ["AppDiff", "app_diff", "MAX_APP_RUNS"]

MAX_APP_RUNS = 16
"""How many runs of the whole app the attribution may make before it charges what is left to every switch
together."""

_COLUMNS = ("topic", "partition", "key", "value", "ts")


@dataclass
class AppDiff:
    """The output records of a topology run on Spark that change under other semantics or settings, each charged to
    the rules and settings that change it (:attr:`differences`: :class:`kjoin.diff.Difference`, ``before``/``after``
    the output record as a dict, ``input`` the output record itself)."""

    before: str
    after: str
    differences: list[Difference]
    switches: tuple[str, ...]
    runs: int
    settings: dict[str, Any]

    def __iter__(self):
        return iter(self.differences)

    def __len__(self) -> int:
        return len(self.differences)

    def by_rule(self) -> dict[str, list[Difference]]:
        """The differences charged to each switch (a difference charged to several is under each)."""
        return charged_by_rule(self.switches, self.differences)

    def counts(self) -> dict[str, int]:
        """Differences charged to each switch (every switch, 0 where none)."""
        return {name: len(found) for name, found in self.by_rule().items()}

    def table(self) -> str:
        from ...render import format_table

        head, foot = head_and_foot("topology (Spark)", self.before, self.after, self.differences, self.switches)
        if not self.differences:
            return "\n".join([head, "no output changes", *foot])
        rows = []
        for d in self.differences:
            record = d.before or d.after
            rules = rules_text(d)
            shown = f"{render_value(record['key'])}:{render_value(record['value'])}@{record['ts']}"
            rows.append([record["topic"], str(record["partition"]), d.change, shown, rules])
        return "\n".join([head, format_table(["topic", "partition", "change", "record", "rules"], rows), *foot])

    def __str__(self) -> str:
        return self.table()


def app_diff(run: "TopologyRun", semantics: Any = None, settings: Mapping[str, Any] | None = None) -> AppDiff:
    """The differences from ``run`` to the same topics run through its topology under ``semantics`` (default: the
    run's own) with ``settings`` (``{"per_hour.grace_ms": 0}``), each charged to the switches that change it."""
    if run.rerun is None:
        raise SparkInputError("diff: only a run_topology result knows its topics to run them again")
    first = run.topology.semantics
    try:
        second = first if semantics is None else parse_semantics(semantics)
    except ValueError as error:
        raise SparkInputError(f"semantics: {error}") from None
    settings = dict(settings or {})
    try:
        retuned(run.topology, second, settings)  # a setting the topology does not have is named before any run
    except (ScenarioError, TopologyError) as error:
        raise SparkInputError(str(error)) from None
    switches = [(name, getattr(second, name)) for name in first.switched(second)] + list(settings.items())
    if not switches:
        raise SparkInputError(
            f"diff: nothing to compare: no rule kjoin models differs between {first} (the run's semantics) and "
            f"{second}, and no setting is given; e.g. diff(semantics='3.6') or diff(set={{'NODE.grace_ms': 0}})"
        )
    base = run.outputs.select(*_columns(run.outputs))

    def differences_of(semantics: Semantics, turned: Mapping[str, Any]) -> list[Difference] | None:
        try:
            other = run.rerun(retuned(run.topology, semantics, turned))
            return _differences(base, other.outputs.select(*_columns(other.outputs)))
        except (ScenarioError, TopologyError, SparkInputError):
            return None  # that combination is not a topology kjoin can run

    found = differences_of(second, settings)
    if found is None:
        given = "".join(f" {path}={json.dumps(value)}" for path, value in settings.items())
        raise SparkInputError(f"diff: the topology cannot run under {second}{given}")
    attribution = _Bounded(first, switches, differences_of)
    charged = attribution.charge(found)
    after = str(second) + "".join(f" {path}={json.dumps(value)}" for path, value in settings.items())
    names = tuple(name for name, _ in switches)
    return AppDiff(str(first), after, charged, names, attribution.runs, settings)


class _Bounded(Attribution):
    """:class:`kjoin.diff.Attribution` with at most :data:`MAX_APP_RUNS` runs (each a run of the whole app)."""

    def produced(self, names: frozenset[str]) -> frozenset[Any]:
        if self.runs >= MAX_APP_RUNS and names not in self._produced:
            return frozenset()
        return super().produced(names)


def _columns(frame: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return [F.col(name).cast("string").alias(name) if name in ("key", "value") else F.col(name) for name in _COLUMNS]


def _differences(first: Any, second: Any) -> list[Difference]:
    """The output records only ``first`` has (``removed``) and only ``second`` has (``added``), each numbered among
    its equals so that two equal records are two differences."""
    differences = []
    for change, rows in (("removed", first.exceptAll(second)), ("added", second.exceptAll(first))):
        seen: dict[tuple[Any, ...], int] = {}
        for row in sorted(rows.collect(), key=lambda r: tuple("" if r[c] is None else str(r[c]) for c in _COLUMNS)):
            record = {name: row[name] for name in _COLUMNS}
            place = tuple(record.values())
            seen[place] = seen.get(place, -1) + 1
            output = TopicRecord(record["topic"], record["partition"], -1, record["key"], record["value"], record["ts"])
            before, after = (record, None) if change == "removed" else (None, record)
            differences.append(
                Difference(change, 0, 0, output, record["key"], before, after, event=(*place, seen[place]))  # type: ignore[arg-type]
            )
    return differences
