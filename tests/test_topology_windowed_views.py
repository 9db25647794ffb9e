"""Views of windowed tables (a ``KTable<Windowed<K>, V>``): a filter or filterNot whose predicate reads the windowed
key's text (``[key@start/end]``, Kafka's ``Windowed.toString``), a mapValues, each now and then kept in a store of its
own (``materialized``, or named: ``Materialized.as``), and a named store of the join of two windowed tables that
reads such a view. Kafka keeps these stores as ``KeyValueStore``s of ``Windowed`` keys; a view's store needs the
windowed serde named in its ``Materialized`` (``KTableImpl`` builds the store from the ``Materialized``'s own key
serde), a join's takes the left table's (see ``TopologyOracle.view`` and ``windowedJoinStore``).

The outputs, named stores and describe() texts are the real library's (``tests/topology_windowed_views.json``,
written by ``python -m tests.test_topology_windowed_views``): kjoin gives them without a JVM (and imports the texts
with ``from_describe``), the oracle tests have each judge give them again, every case in one JVM per version, and
Spark runs three of them as the reference engine does. They differ by version where kjoin's rules say so: before 2.7
a filter forwards a tombstone for every row it drops (KAFKA-10077), and 2.8's sliding windows emit less."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kjoin
from kjoin.topology.describe import parse_describe
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

JUDGES = ("4.4.0", "3.3.2", "2.8.2", "2.5.1")
"""The judges the answers were recorded on: the latest, KIP-825's emit strategy (3.3), and two eras before it (2.8
with sliding windows; 2.5, before KAFKA-10077)."""

RECORDED = Path(__file__).with_name("topology_windowed_views.json")


def _counted(prefix: str, topic: str, window: dict[str, int]) -> list[dict[str, Any]]:
    """``topic``'s records counted per key in ``window``: the windowed table ``<prefix>-count``."""
    return [
        {"name": topic, "stream": topic},
        {"name": f"{prefix}-grouped", "group_by_key": True, "input": topic},
        {"name": f"{prefix}-windows", "windowed_by": window, "input": f"{prefix}-grouped"},
        {"name": f"{prefix}-count", "count": True, "input": f"{prefix}-windows"},
    ]


TUMBLING = {"size_ms": 10, "grace_ms": 0}
SESSION = {"inactivity_gap_ms": 5, "grace_ms": 0}
SLIDING = {"time_difference_ms": 5, "grace_ms": 0}
EVENTS = [
    {"topic": "orders", "key": "k1", "value": "a", "ts": 1},
    {"topic": "orders", "key": "k2", "value": "b", "ts": 2},
    {"topic": "payments", "key": "k1", "value": "p", "ts": 3},
    {"topic": "orders", "key": "k1", "value": "c", "ts": 4},
    {"topic": "payments", "key": "k2", "value": "q", "ts": 5},
    {"topic": "orders", "key": "k1", "value": "d", "ts": 12},
    {"topic": "payments", "key": "k1", "value": "r", "ts": 13},
]
ORDERS = [event for event in EVENTS if event["topic"] == "orders"]

CASES: dict[str, dict[str, Any]] = {
    # the predicate keeps k1's first window and a k2 window no record falls in
    "filter-of-a-windowed-table-sees-the-window-key": {
        "topology": _counted("o", "orders", TUMBLING)
        + [
            {"name": "f", "filter": {"key_in": ["[k1@0/10]", "[k2@10/20]"]}, "input": "o-count"},
            {"name": "out", "to": "out", "input": "f"},
        ],
        "events": ORDERS,
    },
    "filter-not-of-a-windowed-table-in-a-named-store": {
        "topology": _counted("o", "orders", TUMBLING)
        + [
            {"name": "f", "filter_not": {"key_in": ["[k1@0/10]"]}, "input": "o-count", "store": "f-store"},
            {"name": "out", "to": "out", "input": "f"},
        ],
        "events": ORDERS,
    },
    # the join looks k2's window up in the filter's store, where the filter dropped it: 1-null
    "stored-filter-of-a-windowed-table-read-by-a-windowed-join": {
        "topology": _counted("o", "orders", TUMBLING)
        + _counted("p", "payments", TUMBLING)
        + [
            {"name": "f", "filter": {"key_not_in": ["[k2@0/10]"]}, "input": "o-count", "store": "f-store"},
            {"name": "j", "left_join": ["p-count", "f"], "store": "j-store"},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": EVENTS,
    },
    # session windows' keys carry their end: the view's store keys them by key, end and start
    "stored-view-of-session-windows-read-by-a-windowed-join": {
        "topology": _counted("o", "orders", SESSION)
        + _counted("p", "payments", SESSION)
        + [
            {"name": "m", "map_values": {"append": "!"}, "input": "o-count", "store": "m-store"},
            {"name": "j", "outer_join": ["m", "p-count"], "store": "j-store"},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": EVENTS,
    },
    # the final results read as a table through a stored filter (the suppression's value getter under the view)
    "stored-filter-of-final-results-read-by-a-windowed-join": {
        "topology": _counted("o", "orders", TUMBLING)
        + _counted("p", "payments", TUMBLING)
        + [
            {"name": "final", "suppress": {"until": "window_closes"}, "input": "o-count"},
            {"name": "f", "filter_not": {"key_in": ["[k2@0/10]"]}, "input": "final", "store": "f-store"},
            {"name": "j", "left_join": ["p-count", "f"]},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": EVENTS,
    },
    # a stream of windowed keys filtered by their text
    "filter-of-a-windowed-stream": {
        "topology": _counted("o", "orders", TUMBLING)
        + [
            {"name": "changes", "to_stream": True, "input": "o-count"},
            {"name": "f", "filter": {"key_in": ["[k1@10/20]", "[k2@0/10]"]}, "input": "changes"},
            {"name": "out", "to": "out", "input": "f"},
        ],
        "events": ORDERS,
    },
    # a sliding window's keys are time-windowed keys of the time difference's size (sliding windows: 2.7, KIP-450)
    "materialized-filter-of-sliding-windows-read-by-a-windowed-join": {
        "since": (2, 7),
        "topology": _counted("o", "orders", SLIDING)
        + _counted("p", "payments", SLIDING)
        + [
            {"name": "f", "filter": {"value_not_null": True}, "input": "o-count", "materialized": True},
            {"name": "j", "join": ["f", "p-count"]},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": EVENTS,
    },
}

GENERATED = re.compile(r"\d{10}")
"""A name Kafka generated (its counter): kjoin lists only the application's names."""


def judged(version: str) -> list[str]:
    """The cases Kafka ``version`` has every operator of."""
    numbers = tuple(int(part) for part in version.split(".")[:2])
    return [name for name, case in CASES.items() if numbers >= case.get("since", (2, 4))]


def scenario(name: str, version: str) -> TopologyScenario:
    case = CASES[name]
    return TopologyScenario.from_dict({"semantics": version, "topology": case["topology"], "events": case["events"]})


def kafka_answers(version: str) -> dict[str, dict[str, Any]]:
    """Every case run by Kafka ``version``'s harness in one JVM, with the text ``describe()`` printed: by name."""
    documents = [
        {**topology_oracle.document(scenario(name, version)), "id": name, "describe_text": True}
        for name in judged(version)
    ]
    done = subprocess.run(
        ["java", "-cp", oracle_check.classpath(version), "kjoin.oracle.TopologyOracle"],
        input="".join(json.dumps(document) + "\n" for document in documents),
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return {answer["id"]: answer for answer in answers}


def named_stores(name: str, describe_text: str) -> list[str]:
    """The stores Kafka's ``describe()`` lists under the names case ``name`` gave them: not a generated name, nor
    the node's name the harness gives the store of a view that is ``materialized`` without one (it stands for
    the name Kafka would generate, which kjoin does not print)."""
    nodes = parse_describe(describe_text).values()
    harness = {node["name"] for node in CASES[name]["topology"] if node.get("materialized") and "store" not in node}
    return sorted({s for node in nodes for s in node.stores if not GENERATED.search(s) and s not in harness})


def kjoin_named_stores(text: str) -> list[str]:
    return sorted({s for found in re.findall(r"\(stores: \[([^\]]*)\]\)", text) for s in found.split(", ")})


def record() -> None:
    """Write Kafka's answers on every judge to :data:`RECORDED`."""
    oracle_check.build()
    outputs: dict[str, dict[str, Any]] = {name: {} for name in CASES}  # by case, then judge
    stores: dict[str, list[str]] = {}
    texts: dict[str, str] = {}  # the latest judge's
    for version in JUDGES:
        for name, answer in kafka_answers(version).items():
            assert "error" not in answer, (name, version, answer["error"])
            outputs[name][version] = answer["outputs"]
            stores.setdefault(name, named_stores(name, answer["describe_text"]))
            texts.setdefault(name, answer["describe_text"])
    lines = ['{"outputs": {']
    for n, name in enumerate(CASES):  # one line per case and judge
        lines.append(f"  {json.dumps(name)}: {{")
        found = [f"    {json.dumps(version)}: {json.dumps(rows)}" for version, rows in outputs[name].items()]
        lines.append(",\n".join(found) + "\n  }" + ("," if n < len(CASES) - 1 else ""))
    lines.append(f' }},\n "stores": {json.dumps(stores)},\n "describe_text": {json.dumps(texts)}\n}}')
    RECORDED.write_text("\n".join(lines) + "\n")


def _recorded() -> dict[str, Any]:
    return json.loads(RECORDED.read_text())


@pytest.mark.parametrize("name, version", [(name, version) for version in JUDGES for name in judged(version)])
def test_kjoin_gives_what_kafka_gave_for_a_view_of_a_windowed_table(name, version):
    assert topology_oracle.kjoin_outputs(scenario(name, version)) == _recorded()["outputs"][name][version]


def test_the_predicates_keep_some_windows_and_drop_others():
    """The cases judge the predicate over windowed keys: each filter's output keeps one window of a key and drops
    another (a predicate that never matched, or always did, would judge nothing)."""
    outputs = _recorded()["outputs"]
    filters = ("filter-of-a-windowed-table-sees-the-window-key", "filter-not-of-a-windowed-table-in-a-named-store",
               "filter-of-a-windowed-stream")  # fmt: skip
    for name in filters:
        kept = {row[1] for event in outputs[name]["4.4.0"] for row in event if row[2] is not None}
        assert kept and kept < {"[k1@0/10]", "[k2@0/10]", "[k1@10/20]"}, name


@pytest.mark.parametrize("name", list(CASES))
def test_describe_lists_a_windowed_views_and_joins_stores_as_kafka_does(name):
    assert kjoin_named_stores(scenario(name, "4.4").topology.describe()) == _recorded()["stores"][name]


@pytest.mark.parametrize(
    "name",
    [
        "stored-filter-of-a-windowed-table-read-by-a-windowed-join",
        "stored-view-of-session-windows-read-by-a-windowed-join",
        "materialized-filter-of-sliding-windows-read-by-a-windowed-join",
    ],
)
def test_from_describe_keeps_a_windowed_views_and_joins_stores(name):
    """Kafka 4.4's describe() text of the case, imported with the case's functions filled in: the topology kjoin
    builds lists every store Kafka's text names (the harness's name of a ``materialized`` view's store too, which
    the text gives as the application's)."""
    from tests.test_topology_describe import fill_for

    case, text = CASES[name], _recorded()["describe_text"][name]
    topology = kjoin.Topology.from_describe(text, fill_for(case, text), semantics="4.4")
    assert not topology.described.refused
    nodes = parse_describe(text).values()
    kafka = sorted({store for node in nodes for store in node.stores if not GENERATED.search(store)})
    assert kafka and kjoin_named_stores(topology.describe()) == kafka


@pytest.mark.parametrize("version", JUDGES, ids=lambda v: f"kafka-{v}")
def test_the_real_library_gives_the_recorded_answers(built, version):
    """Each judge builds every case it has the operators of (the views' stores typed for ``Windowed`` keys) and
    gives the recorded outputs and named stores; kjoin's run agrees with it."""
    recorded = _recorded()
    answers = kafka_answers(version)
    assert sorted(answers) == sorted(judged(version))
    for name, answer in answers.items():
        assert "error" not in answer, (name, answer["error"])
        assert answer["outputs"] == recorded["outputs"][name][version], name
        assert named_stores(name, answer["describe_text"]) == recorded["stores"][name], name
        assert topology_oracle.difference(scenario(name, version), answer, version) is None, name


SPARK_CASES = (
    "stored-filter-of-a-windowed-table-read-by-a-windowed-join",
    "stored-view-of-session-windows-read-by-a-windowed-join",
    "stored-filter-of-final-results-read-by-a-windowed-join",
)
"""The cases Spark runs in CI (each takes seconds of Spark): a stored view of each kind of windowed table read by a
join. All seven agreed when they were written."""


@pytest.mark.parametrize("name", SPARK_CASES)
def test_spark_runs_a_view_of_a_windowed_table_as_the_reference_engine(spark, name):
    """A case on three partitions (each key's windows in one task): Spark's records and steps are the reference
    engine's."""
    from tests.topology_spark_check import difference

    case = CASES[name]
    three = TopologyScenario.from_dict(
        {"semantics": "4.4", "partitions": 3, "topology": case["topology"], "events": case["events"]}
    )
    assert difference(spark, three, with_partitions=False) is None


if __name__ == "__main__":
    record()
