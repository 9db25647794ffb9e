"""A foreign-key join of a windowed table: each window's row subscribes by the foreign key of its value, and the result
keeps the ``Windowed<K>`` keys (``KTableImpl.doJoinOnForeignKey`` with the left table's key serde, a
``TimeWindowedSerde`` or ``SessionWindowedSerde``).

* The subscription store orders a foreign key's subscribers by ``[fk][pk]`` bytes, the primary key through the
  windowed serde (the key's bytes, then the window's start; a session's end and start, big-endian longs): a right
  update reaches a key's windows in the order of their start, not of their text (``[k@5/15]`` before ``[k@10/20]``).
* A response is resolved against the windowed table's value getter, which finds nothing for a window behind the window
  store's retention: the response is stale and dropped, though the join's own copy holds the row.
* A window-close suppression of the result is refused, by Kafka and kjoin: the grace search walks every parent, and
  the result also descends from the right table, which has no window.
* Before 3.3 a response is routed by its windowed key's bytes, not to its row's partition (KAFKA-13769): kjoin refuses
  the join on several partitions there.

Judged by the real library on pinned and random cases on 4.4.0, 3.3.2, 3.2.3 and 2.4.1 (one JVM each)."""

from __future__ import annotations

import json
import random
import struct

import pytest

import kjoin
from kjoin.topology import WindowedKey
from kjoin.semantics import parse_semantics
from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

JUDGES = ("4.4.0", "3.3.2", "3.2.3", "2.4.1")

_WINDOWS = {
    "tumbling": {"size_ms": 10, "grace_ms": 5},
    "hopping": {"size_ms": 10, "advance_ms": 5, "grace_ms": 0},
    "session": {"inactivity_gap_ms": 5, "grace_ms": 3},
    "sliding": {"time_difference_ms": 5, "grace_ms": 2},
}


def _windowed_join(semantics: str, window: dict, aggregation: dict, variant: str, events: list[dict], **fk) -> dict:
    return {
        "semantics": semantics,
        "topology": [
            {"name": "s", "stream": "s"},
            {"name": "g", "group_by_key": True, "input": "s"},
            {"name": "w", "windowed_by": window, "input": "g"},
            {"name": "agg", **aggregation, "input": "w"},
            {"name": "r", "table": "r"},
            {"name": "j", variant: ["agg", "r"], "foreign_key": "f", **fk},
            {"name": "out", "to": "out", "input": "j"},
        ],
        "events": events,
    }


def hopping_windows_in_start_order(semantics: str = "4.4") -> TopologyScenario:
    """One record in two hopping windows, then a right update: the windows answer in the order of their start."""
    events = [
        {"topic": "r", "key": "y", "value": "X", "ts": 3},
        {"topic": "s", "key": "ab", "value": {"f": "y"}, "ts": 11},  # windows [5, 15) and [10, 20)
        {"topic": "r", "key": "y", "value": "Y", "ts": 27},  # [ab@5/15] first: its start's bytes sort first
    ]
    return TopologyScenario.from_dict(
        _windowed_join(semantics, _WINDOWS["hopping"], {"reduce": "concat"}, "join", events)
    )


def sessions_in_end_order(semantics: str = "4.4") -> TopologyScenario:
    """Two sessions of a key, [5, 5] and [10, 10], then a right update: by their end's bytes, not their text."""
    events = [
        {"topic": "s", "key": "a", "value": {"f": "y"}, "ts": 10},
        {"topic": "s", "key": "a", "value": {"f": "y"}, "ts": 4},  # its own session: 10 - 4 > the gap
        {"topic": "r", "key": "y", "value": "Y", "ts": 12},
    ]
    window = {"inactivity_gap_ms": 5, "grace_ms": 20}
    return TopologyScenario.from_dict(_windowed_join(semantics, window, {"reduce": "concat"}, "join", events))


def expired_session_answers_stale(semantics: str = "4.4") -> TopologyScenario:
    """A new session behind the store's retention (gap + grace) once stream time has moved on: the session aggregate
    forwards it, but the value getter the response is resolved against finds nothing, so the result is dropped."""
    events = [
        {"topic": "r", "key": "x", "value": "X", "ts": 0},
        {"topic": "s", "key": "b", "value": {"f": "x"}, "ts": 30},
        {"topic": "s", "key": "ab", "value": {"f": "x"}, "ts": 44},  # stream time 44
        {"topic": "s", "key": "b", "value": {"f": "x"}, "ts": 36},  # session [36, 36]: retained until 36 + 8 < 44
    ]
    return TopologyScenario.from_dict(
        _windowed_join(semantics, _WINDOWS["session"], {"reduce": "concat"}, "join", events)
    )


def key_or_field_reads_the_window(semantics: str = "4.4") -> TopologyScenario:
    """A ``BiFunction`` extractor (KIP-1104) that falls back to the key reads the windowed key (its text here), and a
    named result store keeps the windowed keys."""
    events = [
        {"topic": "r", "key": "[b@30/40]", "value": "R", "ts": 1},
        {"topic": "s", "key": "b", "value": {"f": "x"}, "ts": 30},
        {"topic": "s", "key": "b", "value": "x", "ts": 31},  # concat: no field f, so the key: [b@30/40]
        {"topic": "s", "key": "b", "value": "x", "ts": 50},
    ]
    window = {"size_ms": 10, "grace_ms": 0}
    doc = _windowed_join(semantics, window, {"reduce": "concat"}, "left_join", events, store="joined")
    doc["topology"][5]["foreign_key"] = {"key_or_field": "f"}
    return TopologyScenario.from_dict(doc)


PINNED = (hopping_windows_in_start_order, sessions_in_end_order, expired_session_answers_stale)


def test_a_windowed_key_is_serialized_as_kafkas_windowed_serdes_write_it():
    key = WindowedKey("ab", 5, 15)
    assert key.serialized(session=False) == b"ab" + struct.pack(">q", 5)
    assert key.serialized(session=True) == b"ab" + struct.pack(">q", 15) + struct.pack(">q", 5)
    assert WindowedKey("ab", 5, 15).serialized(False) < WindowedKey("ab", 10, 20).serialized(False)
    assert str(WindowedKey("ab", 10, 20)) < str(WindowedKey("ab", 5, 15))  # the text's order is another


def test_the_windows_of_a_key_answer_in_the_order_of_their_bytes():
    outputs = topology_oracle.kjoin_outputs(hopping_windows_in_start_order())
    assert [row[1] for row in outputs[2]] == ["[ab@5/15]", "[ab@10/20]"]
    outputs = topology_oracle.kjoin_outputs(sessions_in_end_order())
    assert [row[1] for row in outputs[2]] == ["[a@4/4]", "[a@10/10]"]


def test_a_response_for_a_session_behind_retention_is_stale():
    case = expired_session_answers_stale()
    assert [len(rows) for rows in topology_oracle.kjoin_outputs(case)] == [0, 1, 1, 0]
    last = case.topology.run(case.events).steps[-1]
    assert [(visit.node, visit.reason) for visit in last.drops] == [("j", kjoin.Reason.STALE_RESPONSE)]


def test_a_window_close_suppression_of_the_result_is_refused_as_kafka_refuses_it():
    b = kjoin.Topology()
    counts = b.stream("s").group_by_key().windowed_by({"size_ms": 10}).count()
    joined = counts.left_join(b.table("r"), foreign_key="f")
    with pytest.raises(kjoin.TopologyError, match="through a foreign-key join.*Window close time is only defined"):
        joined.suppress(until="window_closes")
    joined.suppress(until="time_limit", time_limit_ms=5).to("out")  # a time limit is no window's


@pytest.mark.parametrize("semantics, partitions, refused", [("3.2", 3, True), ("3.2", 1, False), ("3.3", 3, False)])
def test_before_3_3_a_windowed_foreign_key_join_runs_on_one_partition_only(semantics, partitions, refused):
    b = kjoin.Topology(semantics=semantics, partitions=partitions)
    counts = b.stream("s").group_by_key().windowed_by({"size_ms": 10}).count()
    counts.join(b.table("r"), foreign_key="f").to("out")
    if refused:
        with pytest.raises(kjoin.TopologyError, match="KAFKA-13769.*on one partition, or on Kafka 3.3 or later"):
            b.build()
    else:
        b.build()


def _random(rng: random.Random, semantics: str) -> TopologyScenario:
    """A windowed aggregate of any window kind, sometimes held for a time or until its windows close, joined by a
    foreign key (inner or left; a key-reading extractor from 4.0) with a table; its result sometimes joined by window
    with another count in the same windows."""
    kind = rng.choice(
        [kind for kind in sorted(_WINDOWS) if kind != "sliding" or parse_semantics(semantics).sliding_windows]
    )
    window = dict(_WINDOWS[kind])
    nodes: list[dict] = [
        {"name": "s", "stream": "s"},
        {"name": "g", "group_by_key": True, "input": "s"},
        {"name": "w", "windowed_by": window, "input": "g"},
        {"name": "agg", **rng.choice([{"count": True}, {"reduce": "concat"}, {"aggregate": "concat"}]), "input": "w"},
        {"name": "r", "table": "r"},
    ]
    left = "agg"
    roll = rng.random()
    if roll < 0.15:
        nodes.append({"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": rng.choice([0, 5])},
                      "input": left})  # fmt: skip
        left = "held"
    elif roll < 0.3:
        nodes.append({"name": "held", "suppress": {"until": "window_closes"}, "input": left})
        left = "held"
    join = {"name": "j", rng.choice(["join", "left_join"]): [left, "r"], "foreign_key": "f"}
    if semantics.startswith("4.") and rng.random() < 0.3:
        join["foreign_key"] = {"key_or_field": "f"}
    if rng.random() < 0.3:
        join["joiner"] = "object"
    if rng.random() < 0.2:
        join["store"] = "joined"
    nodes.append(join)
    tail = "j"
    if rng.random() < 0.3:  # joined by window with another count in the same windows
        nodes += [
            {"name": "s2", "stream": "s2"},
            {"name": "g2", "group_by_key": True, "input": "s2"},
            {"name": "w2", "windowed_by": window, "input": "g2"},
            {"name": "c2", "count": True, "input": "w2"},
            {"name": "jj", rng.choice(["join", "left_join", "outer_join"]): ["j", "c2"]},
        ]
        tail = "jj"
    nodes.append({"name": "out", "to": "out", "input": tail})
    keys = ["a", "b", "ab", "a b", ""][: rng.randint(1, 5)]
    events = []
    for _ in range(rng.randint(3, 40)):
        roll = rng.random()
        if roll < 0.55:
            value = rng.choice([{"f": rng.choice(["x", "y", "z"])}, {"f": "x"}, "x", None, {"g": 1}])
            events.append({"topic": "s", "key": rng.choice(keys), "value": value})
        elif roll < 0.9 or tail != "jj":
            events.append({"topic": "r", "key": rng.choice(["x", "y", "z"]), "value": rng.choice(["X", "Y", None, ""])})
        else:
            events.append({"topic": "s2", "key": rng.choice(keys), "value": "c"})
        events[-1]["ts"] = rng.choice([rng.randint(0, 60), rng.randint(0, 60), 1000 + rng.randint(0, 30)])
    return TopologyScenario.from_dict({"semantics": semantics, "topology": nodes, "events": events})


@pytest.mark.oracle
@pytest.mark.parametrize("version", JUDGES)
def test_the_real_library_joins_windowed_tables_by_foreign_key_as_kjoin_does(version):
    """The pinned cases and 40 random ones per version, one JVM each."""
    oracle_check.build()
    semantics = version
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    batch = [case(semantics) for case in PINNED]
    if semantics.startswith("4."):
        batch.append(key_or_field_reads_the_window(semantics))
    batch += [_random(rng, semantics) for _ in range(40)]
    assert topology_oracle.disagreements(version, batch) == [], f"seed {seed}"


@pytest.mark.oracle
def test_the_real_library_orders_the_windows_as_pinned():
    """The pinned orders are Kafka's, on the oldest and the newest judge (not only kjoin's agreement with itself)."""
    oracle_check.build()
    for version in ("2.4.1", "4.4.0"):
        cases = [hopping_windows_in_start_order(version), sessions_in_end_order(version)]
        answers = topology_oracle.run_batch(version, cases)
        assert [row[1] for row in answers[0]["outputs"][2]] == ["[ab@5/15]", "[ab@10/20]"]
        assert [row[1] for row in answers[1]["outputs"][2]] == ["[a@4/4]", "[a@10/10]"]
    expired = topology_oracle.run_batch("4.4.0", [expired_session_answers_stale("4.4.0")])[0]
    assert [len(rows) for rows in expired["outputs"]] == [0, 1, 1, 0]


def test_spark_joins_windowed_tables_by_foreign_key_as_the_reference_engine_does(spark):
    """The pinned cases, and random ones on three partitions (seeded: the same cases every run)."""
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    for case in PINNED:
        assert difference(spark, case()) is None, case.__name__
    rng = random.Random(45)
    for _ in range(4):
        scenario = topology_oracle.on_partitions(_random(rng, "4.4"), 3)
        assert difference(spark, scenario) is None, json.dumps(topology_oracle.document(scenario))
