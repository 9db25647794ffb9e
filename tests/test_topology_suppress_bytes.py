"""``suppress(max_bytes=...)`` (``Suppressed.BufferConfig.maxBytes``), judged by the real library at its boundary.

Each expected size below is worked out by hand from Kafka's ``computeRecordSize`` (kjoin/topology/suppress.py): 8 +
the key's bytes (a windowed key's + 8 for its start, a session key's + 16) + the prior, old and new values' bytes (the
old value not counted when it is the prior's array) + 8 + 8 + 4 + the characters of the full topic name. A buffer one
byte over ``max_bytes`` is full; one at it is not.
"""

from __future__ import annotations

import pytest

from kjoin.scenario.fields import ScenarioError
from kjoin.topology.builder import Topology
from kjoin.topology.document import TopologyScenario
from kjoin.topology.graph import TopologyError
from kjoin.topology.suppress import SuppressionBufferFull
from kafka_oracle import topology_oracle

CONTEXT = 8 + 8 + 4
"""A record context's timestamp, offset and partition; its topic's characters come on top."""

EVENTS = [
    {"topic": "orders", "key": "c1", "value": "v0", "ts": 0},  # c1 -> 1 (old 0), a new entry
    {"topic": "orders", "key": "c1", "value": "v1", "ts": 1},  # c1 -> 2 (old 1) replaces it
    {"topic": "orders", "key": "c2", "value": "v2", "ts": 10},  # c2 -> 1 (old 0); c1's time limit (5) passed: evicted
    {"topic": "orders", "key": "c1", "value": "v3", "ts": 11},  # c1 -> 3 (old 2), a new entry again
]
"""A count's first update of a key has the old value 0: ``KStreamAggregate`` forwards the initializer's value as the
old aggregate."""


def sizes(topic: str) -> list[int]:
    """The buffer's bytes after each event of :data:`EVENTS`, counted by hand: every value here is one character."""
    ctx = CONTEXT + len(topic)
    new_entry = 8 + 2 + 1 + 1 + ctx  # key c1 or c2; prior = the old value (counted once); new
    replaced = 8 + 2 + 1 + 1 + 1 + ctx  # prior "0" (the first update's), old "1" apart from it, new "2"
    return [new_entry, replaced, new_entry, 2 * new_entry]


def counts(suppress: dict, *, semantics: str = "4.4", grouped: str | None = None, app: str | None = None) -> dict:
    nodes = [
        {"name": "orders", "stream": "orders"},
        {"name": "g", "group_by_key": True, "input": "orders"},
        {"name": "counts", "count": True, "input": "g"},
        {"name": "limited", "suppress": {"until": "time_limit", "time_limit_ms": 5, **suppress}, "input": "counts"},
        {"name": "out", "to": "out", "input": "limited"},
    ]
    if grouped is not None:  # re-keyed (to itself) and grouped by name: through <app>-<grouped>-repartition
        nodes[1:2] = [
            {"name": "rekeyed", "select_key": {"map": {"zz": "zz"}}, "input": "orders"},
            {"name": "g", "group_by_key": True, "as": grouped, "input": "rekeyed"},
        ]
    document = {"semantics": semantics, "topology": nodes, "events": EVENTS}
    if app is not None:
        document["application_id"] = app
    return document


def stopped_at(document: dict) -> int | None:
    """The event on which kjoin's run stops with a full buffer (``None``: it runs them all)."""
    for count in range(1, len(document["events"]) + 1):
        try:
            TopologyScenario.from_dict({**document, "events": document["events"][:count]}).run()
        except SuppressionBufferFull:
            return count - 1
    return None


def judge(version: str, documents: list[dict]) -> None:
    batch = [TopologyScenario.from_dict(d) for d in documents]
    answers = topology_oracle.run_batch(version, batch)
    assert [topology_oracle.difference(s, a, version) for s, a in zip(batch, answers)] == [None] * len(batch)


def test_the_hand_counted_sizes_are_what_the_events_make():
    assert sizes("orders") == [38, 39, 38, 76]


@pytest.mark.parametrize("version, semantics", [("4.4.0", "4.4"), ("2.5.0", "2.5")])
def test_shut_down_at_one_byte_under_at_and_over_the_buffer_as_kafka(built, version, semantics):
    total = sizes("orders")[-1]
    cases = {total - 1: 3, total: None, total + 1: None}  # max_bytes -> the event the run stops on
    documents = []
    for max_bytes, stops in cases.items():
        document = counts({"max_bytes": max_bytes, "when_full": "shut_down"}, semantics=semantics)
        assert stopped_at(document) == stops, max_bytes
        documents.append(document)
    judge(version, documents)


def test_an_old_value_equal_to_the_prior_one_counts_once(built):
    """``BufferValue`` keeps one array when the prior and old values' bytes are equal: a source table's update that
    made an entry without changing the value (old a, new a), then one that does (old a again, new b)."""
    events = [
        {"topic": "prices", "key": "c1", "value": "a", "ts": 0},
        {"topic": "prices", "key": "c2", "value": "z", "ts": 10},  # c1's time limit (5) passed: evicted
        {"topic": "prices", "key": "c1", "value": "a", "ts": 11},  # a new entry: prior a = old a, new a
        {"topic": "prices", "key": "c1", "value": "b", "ts": 12},  # replaced: prior a, old a (equal: once), new b
    ]
    c2 = 8 + 2 + 1 + CONTEXT + len("prices")
    c1 = 8 + 2 + 1 + 1 + CONTEXT + len("prices")
    assert c2 + c1 == 75
    documents = []
    for max_bytes, stops in ((74, 2), (75, None)):
        documents.append({
            "topology": [
                {"name": "prices", "table": "prices"},
                {"name": "limited", "suppress": {"until": "time_limit", "time_limit_ms": 5, "max_bytes": max_bytes,
                                                 "when_full": "shut_down"}, "input": "prices"},
                {"name": "out", "to": "out", "input": "limited"},
            ],
            "events": events,
        })  # fmt: skip
        assert stopped_at(documents[-1]) == stops, max_bytes
    judge("4.4.0", documents)
    judge("2.5.0", [{**d, "semantics": "2.5"} for d in documents])


def test_emit_early_evicts_the_oldest_entry_until_the_buffer_is_under_its_bytes(built):
    over = counts({"max_bytes": 75})  # when_full defaults to emit_early for a time limit
    at = counts({"max_bytes": 76})
    rows = [[r[1:3] for r in event] for event in topology_oracle.kjoin_outputs(TopologyScenario.from_dict(over))]
    assert rows == [[], [], [["c1", "2"]], [["c2", "1"]]]  # c1 by its time limit, then c2 early: the oldest
    rows = [[r[1:3] for r in event] for event in topology_oracle.kjoin_outputs(TopologyScenario.from_dict(at))]
    assert rows == [[], [], [["c1", "2"]], []]
    with_records = counts({"max_bytes": 1000, "max_records": 1})  # both bounds: records fill it first
    rows = [[r[1:3] for r in e] for e in topology_oracle.kjoin_outputs(TopologyScenario.from_dict(with_records))]
    assert rows == [[], [], [["c1", "2"]], [["c2", "1"]]]
    judge("4.4.0", [over, at, with_records])
    judge("3.3.2", [{**d, "semantics": "3.3"} for d in (over, at, with_records)])


def test_a_repartition_topics_full_name_counts_with_the_application_id(built):
    """Behind ``Grouped.as("bycust")`` the records come from ``<application.id>-bycust-repartition``."""
    documents = []
    for app in (None, "app"):
        topic = f"{app or 'kjoin-topology-oracle'}-bycust-repartition"
        total = sizes(topic)[-1]
        for max_bytes, stops in ((total - 1, 3), (total, None)):
            document = counts({"max_bytes": max_bytes, "when_full": "shut_down"}, grouped="bycust", app=app)
            assert stopped_at(document) == stops, (app, max_bytes)
            documents.append(document)
    judge("4.4.0", documents)


@pytest.mark.parametrize(
    "window, key_bytes",
    # a window's count has the old value 0 (the initializer's); a new session has none
    [({"size_ms": 100, "grace_ms": 100}, 2 + 8 + 1), ({"inactivity_gap_ms": 100, "grace_ms": 100}, 2 + 16)],
)
def test_a_windowed_key_counts_its_window_as_kafka_serializes_it(built, window, key_bytes):
    size = 8 + key_bytes + 1 + CONTEXT + len("orders")  # one count "1" of c1 in its window, and its prior value
    documents = []
    for max_bytes, stops in ((size - 1, 0), (size, None)):
        document = {
            "topology": [
                {"name": "orders", "stream": "orders"},
                {"name": "g", "group_by_key": True, "input": "orders"},
                {"name": "w", "windowed_by": window, "input": "g"},
                {"name": "agg", "count": True, "input": "w"},
                {"name": "final", "suppress": {"until": "window_closes", "max_bytes": max_bytes}, "input": "agg"},
                {"name": "out", "to": "out", "input": "final"},
            ],
            "events": EVENTS[:1],
        }
        assert stopped_at(document) == stops, max_bytes
        documents.append(document)
    judge("4.4.0", documents)
    judge("3.3.2", documents)


def test_a_full_buffer_names_kafkas_message_and_both_bounds():
    document = counts({"max_bytes": 37, "when_full": "shut_down"})
    with pytest.raises(SuppressionBufferFull) as failed:
        TopologyScenario.from_dict(document).run()
    message = str(failed.value)
    assert "holds 38 bytes, more than max_bytes 37" in message
    assert "limited buffer exceeded its max capacity. Currently [1/9223372036854775807] records and [38/37]" in message


def test_max_bytes_behind_a_repartition_topic_kafka_names_is_refused():
    b = Topology()
    rekeyed = b.stream("orders").select_key(lambda k, v: v)
    counts = rekeyed.group_by_key().count()
    with pytest.raises(TopologyError, match="max_bytes counts the name of the topic .* Kafka names with its counter"):
        counts.suppress("time_limit", time_limit_ms=5, max_bytes=100)
    counts.suppress("time_limit", time_limit_ms=5, max_records=10)  # a record bound needs no topic name


def test_the_application_id_and_max_bytes_are_written_and_read_back():
    document = counts({"max_bytes": 75, "when_full": "shut_down"}, grouped="g1", app="my.app")
    written = TopologyScenario.from_dict(document).topology.to_dict()
    assert written["application_id"] == "my.app"
    (suppress,) = [n["suppress"] for n in written["topology"] if "suppress" in n]
    assert suppress == {"until": "time_limit", "time_limit_ms": 5, "max_bytes": 75, "when_full": "shut_down"}
    assert "application_id" not in TopologyScenario.from_dict(counts({})).topology.to_dict()
    with pytest.raises(ScenarioError, match="application_id: the topic 'a b' is illegal"):
        TopologyScenario.from_dict({**document, "application_id": "a b"})


def test_a_buffer_that_shuts_down_under_the_continue_handler_is_refused():
    """From 3.9 the handler catches the suppression's StreamsException: ``continue`` goes on with the buffer over its
    bound (the record stays buffered), which kjoin does not model."""
    with pytest.raises(ScenarioError, match="the continue handler .* which kjoin does not model"):
        TopologyScenario.from_dict(
            {**counts({"max_bytes": 80, "when_full": "shut_down"}), "processing_exception_handler": "continue"}
        )
    emits_early = {**counts({"max_bytes": 80}), "processing_exception_handler": "continue"}
    assert stopped_at(emits_early) is None


@pytest.mark.parametrize("named", [False, True])
def test_a_documents_unnamed_repartition_is_named_by_kafkas_counter(named):
    """A document's ``repartition`` node without ``as`` is Kafka's unnamed ``repartition()``: its topic is
    ``KSTREAM-REPARTITION-<n>-repartition`` (the harness builds it so), not the node's name, so a byte bound below it
    is refused; with ``as`` the topic is ``<as>-repartition`` and the bound is counted (found by the walk on 3.1.0)."""
    nodes = [
        {"name": "s", "stream": "s"},
        {"name": "r", "repartition": True, "input": "s"} | ({"as": "r"} if named else {}),
        {"name": "g", "group_by_key": True, "input": "r"},
        {"name": "n", "reduce": "concat", "input": "g"},
        {"name": "h", "suppress": {"until": "time_limit", "time_limit_ms": 5, "max_bytes": 200}, "input": "n"},
        {"name": "out", "to": "out", "input": "h"},
    ]
    document = {"semantics": "3.1.0", "topology": nodes, "events": [{"topic": "s", "key": "k", "value": "A", "ts": 1}]}
    if named:
        assert TopologyScenario.from_dict(document).run().outputs("out") == []
    else:
        with pytest.raises(
            ScenarioError, match="the repartition topic r-repartition, which Kafka names with its counter"
        ):
            TopologyScenario.from_dict(document)
