"""A dead-letter record written after a sink of the same record has sent: null key and value, as Kafka writes it
(``RecordCollectorImpl.send`` frees the raw source record from the current record context, read in the 4.4.0 jar:
``freeRawInputRecordFromContext`` -> ``ProcessorRecordContext.freeRawRecord``); before any sink, the source record's key
and value. The freeing reaches only the record context the sink sent in: ``ProcessorContextImpl.forward`` gives a
forward's children a copy when the record's timestamp or headers object differs, which every node that forwards a new
record (``withKey``/``withValue``, or a ``FixedKeyRecord``: a filter, a ``map_values``) does, so a sink below a
``flat_map``, a ``map_values`` or a table's ``to_stream`` leaves its parent's other children their raw record; a sink
below a merge does not. A sink of ``Windowed<K>`` keys writes each key's text, which the application maps before the
sink: the sink sends in the map's copy, so it frees no sibling's raw record either. Judged by the real library
(``kafka_oracle/``) on 4.4.0 and on every release with a dead-letter queue (4.2.0 to 4.3.1,
``oracle_check.HANDLER_JUDGES``): each frees the raw record the same way."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from kafka_oracle import oracle_check, topology_oracle

EVENTS = [{"topic": "in", "key": "k", "value": "1", "ts": 5}, {"topic": "in", "key": "k2", "value": "2", "ts": 6}]


def scenario(source: str, sink_first: bool, handler: str = "continue", semantics: str = "4.4") -> TopologyScenario:
    """``in`` (a stream, or a table read as a stream) -> ``a``, and -> a mapper that throws on ``1`` -> ``b``; the
    sink to ``a`` is the source's first child or its last."""
    nodes = [{"name": "s", source: "in"}]
    read = "s"
    if source == "table":
        nodes.append({"name": "changes", "to_stream": True, "input": "s"})
        read = "changes"
    sink = [{"name": "a", "to": "a", "input": read}]
    failing = [{"name": "m", "map_values": {"fail_on": "1"}, "input": read}, {"name": "b", "to": "b", "input": "m"}]
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": handler,
            "dead_letter_queue": "dlq",
            "topology": nodes + (sink + failing if sink_first else failing + sink),
            "events": EVENTS,
        }
    )


def dead_letters(case: TopologyScenario) -> list[tuple[object, object]]:
    return [(r.key, r.value) for r in case.run().outputs_by_event()[0] if r.topic == "dlq"]


@pytest.mark.parametrize("source", ["stream", "table"])
def test_after_a_sink_the_dead_letter_record_has_no_key_and_no_value(source):
    assert dead_letters(scenario(source, sink_first=True)) == [(None, None)]
    assert dead_letters(scenario(source, sink_first=False)) == [("k", "1")]


SIBLINGS = {
    # a table's to(a) (a to_stream and a sink) beside a table's own failing map_values: a context of its own
    "table-to-beside-map-values": ([{"name": "a", "to": "a", "input": "s"},
                                    {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"}], ("k", "1")),
    "table-to-beside-to-stream": ([{"name": "a", "to": "a", "input": "s"},
                                   {"name": "changes", "to_stream": True, "input": "s"},
                                   {"name": "m", "map_values": {"fail_on": "1"}, "input": "changes"}], ("k", "1")),
}  # fmt: skip


STREAM_SIBLINGS = {
    # a sink under a node that forwards a new record (withKey/withValue: a new headers object) frees the copy its
    # children ran in; the source's other children keep their raw record
    "stream-flat-map-to-beside-map-values": ([{"name": "f", "flat_map": {"split": " "}, "input": "s"},
                                              {"name": "a", "to": "a", "input": "f"},
                                              {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"}], ("k", "1")),
    "stream-map-values-to-beside-map-values": ([{"name": "v", "map_values": {"append": "!"}, "input": "s"},
                                                {"name": "a", "to": "a", "input": "v"},
                                                {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"}],
                                               ("k", "1")),
    # a filter is a FixedKeyProcessor: the FixedKeyRecord it takes has headers of its own, so it forwards a copy too
    "stream-filter-to-beside-map-values": ([{"name": "f", "filter": {"key_in": ["k", "k2"]}, "input": "s"},
                                            {"name": "a", "to": "a", "input": "f"},
                                            {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"}],
                                           ("k", "1")),
    # a merge (PassThrough) forwards the record it took: its sink frees the record context its siblings share
    "stream-merge-to-beside-map-values": ([{"name": "t", "stream": "other"},
                                           {"name": "u", "merge": ["s", "t"]},
                                           {"name": "a", "to": "a", "input": "u"},
                                           {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"}],
                                          (None, None)),
}  # fmt: skip


def sibling(name: str, semantics: str = "4.4") -> TopologyScenario:
    source, (nodes, _) = ("stream", STREAM_SIBLINGS[name]) if name in STREAM_SIBLINGS else ("table", SIBLINGS[name])
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [{"name": "s", source: "in"}, *nodes, {"name": "b", "to": "b", "input": "m"}],
            "events": EVENTS,
        }
    )


@pytest.mark.parametrize("name", SIBLINGS)
def test_a_sink_below_a_tables_to_stream_leaves_the_tables_other_children_their_raw_record(name):
    assert dead_letters(sibling(name)) == [SIBLINGS[name][1]]


@pytest.mark.parametrize("name", STREAM_SIBLINGS)
def test_only_a_sink_in_the_same_record_context_frees_a_stream_siblings_raw_record(name):
    assert dead_letters(sibling(name)) == [STREAM_SIBLINGS[name][1]]


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, *oracle_check.HANDLER_JUDGES])
def test_the_real_library_writes_the_same_dead_letter_records(built, version):
    cases = [scenario(source, first, semantics=version) for source in ("stream", "table") for first in (True, False)]
    cases += [sibling(name, version) for name in (*SIBLINGS, *STREAM_SIBLINGS)]
    answers = topology_oracle.run_batch(version, cases)
    nulls = [any(row[0] == "dlq" and row[1] is None for row in answer["outputs"][0]) for answer in answers]
    # the rules hold in Kafka: the comparison can fail
    assert nulls == [True, False, True, False, False, False, False, False, False, True]
    for case, answer in zip(cases, answers):
        assert topology_oracle.difference(case, answer, version) is None


def test_spark_writes_the_same_dead_letter_records(spark):
    from tests.topology_spark_check import difference  # Spark's modules only where a session runs

    cases = [scenario("stream", sink_first=True), scenario("table", sink_first=False), sibling(next(iter(SIBLINGS)))]
    cases += [windowed_sibling(*WINDOWED["window-close"]), suppressed_beside_a_sink("window_closes", sink_first=True)]
    cases += [through_a_grace_buffer(10)]
    for case in cases:
        assert difference(spark, case) is None


def held_then_failing() -> TopologyScenario:
    """``in`` held for 5 ms, its changes through a mapper that throws on ``1``: ``1`` fails when ``2`` evicts it."""
    return TopologyScenario.from_dict(
        {
            "semantics": "4.4",
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [
                {"name": "t", "table": "in"},
                {"name": "held", "suppress": {"until": "time_limit", "time_limit_ms": 5}, "input": "t"},
                {"name": "changes", "to_stream": True, "input": "held"},
                {"name": "m", "map_values": {"fail_on": "1"}, "input": "changes"},
                {"name": "b", "to": "b", "input": "m"},
            ],
            "events": [{**EVENTS[0], "ts": 1}, {**EVENTS[1], "ts": 10}],
        }
    )


def test_an_evicted_record_fails_in_the_record_context_it_was_buffered_in():
    """``KTableSuppressProcessor.emit`` sets the entry's record context before it forwards: the dead-letter record
    is the buffered record's (key, value, offset 0), not the one whose arrival evicted it."""
    (dead,) = [r for r in held_then_failing().run().outputs_by_event()[1] if r.topic == "dlq"]
    assert (dead.key, dead.value, dict(dead.headers)["__streams.errors.offset"]) == ("k", "1", "0")


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, oracle_check.HANDLER_JUDGES[-1]])
def test_the_real_library_dead_letters_an_evicted_record_as_buffered(built, version):
    case = held_then_failing()
    (answer,) = topology_oracle.run_batch(version, [case])
    assert [row[:3] for row in answer["outputs"][1]] == [["dlq", "k", "1"]]
    assert topology_oracle.difference(case, answer, version) is None


def windowed_sibling(windowed: bool, emit_on_window_close: bool = False, semantics: str = "4.4") -> TopologyScenario:
    """``in`` counted per key (in 50 ms windows with a 10 ms grace, or not windowed), its changes to ``a`` and through
    a mapper that throws on ``1``; under window-close emission the second record closes the first one's window."""
    aggregate: list[dict] = [{"name": "g", "group_by_key": True, "input": "s"}]
    if windowed:
        window = {"name": "w", "windowed_by": {"size_ms": 50, "grace_ms": 10}, "input": "g"}
        if emit_on_window_close:
            window["emit_strategy"] = "on_window_close"
        aggregate.append(window)
    aggregate.append({"name": "n", "aggregate": "concat", "input": aggregate[-1]["name"]})
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [
                {"name": "s", "stream": "in"},
                *aggregate,
                {"name": "changes", "to_stream": True, "input": "n"},
                {"name": "a", "to": "a", "input": "changes"},
                {"name": "m", "map_values": {"fail_on": "1"}, "input": "changes"},
            ],
            "events": [EVENTS[0], {**EVENTS[1], "ts": 70}],
        }
    )


WINDOWED = {"plain": (False, False), "windowed": (True, False), "window-close": (True, True)}
WINDOWED_DEAD_LETTERS = {
    # the sink of a plain key sends in the record context its siblings share: it frees their raw record
    "plain": [[(None, None, "0")], []],
    # a Windowed<K> key is written as its text: the application maps it before the sink, whose send frees the map's
    # copy of the record context, so the sink's siblings keep the raw record
    "windowed": [[("k", "1", "0")], []],
    # the window's final result is forwarded when the second record (offset 1) closes it, in that record's context
    "window-close": [[], [("k2", "2", "1")]],
}


def windowed_dead_letters(case: TopologyScenario) -> list[list[tuple[object, object, str]]]:
    return [
        [(r.key, r.value, dict(r.headers)["__streams.errors.offset"]) for r in event if r.topic == "dlq"]
        for event in case.run().outputs_by_event()
    ]


@pytest.mark.parametrize("name", WINDOWED)
def test_a_sink_of_windowed_keys_leaves_its_siblings_their_raw_record(name):
    assert windowed_dead_letters(windowed_sibling(*WINDOWED[name])) == WINDOWED_DEAD_LETTERS[name]


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, oracle_check.HANDLER_JUDGES[-1]])
def test_the_real_library_leaves_a_windowed_sinks_siblings_their_raw_record(built, version):
    cases = [windowed_sibling(*WINDOWED[name], semantics=version) for name in WINDOWED]
    answers = topology_oracle.run_batch(version, cases)
    for name, case, answer in zip(WINDOWED, cases, answers):
        dead = [[tuple(row[1:3]) + (dict(row[4])["__streams.errors.offset"],) for row in event if row[0] == "dlq"]
                for event in answer["outputs"]]  # fmt: skip
        assert dead == WINDOWED_DEAD_LETTERS[name], name
        assert topology_oracle.difference(case, answer, version) is None


def suppressed_beside_a_sink(until: str, sink_first: bool, semantics: str = "4.4") -> TopologyScenario:
    """``in`` to ``a``, and counted in 50 ms windows (or read as a table) then suppressed until the window closes (or
    for 5 ms), its changes through a mapper that throws on ``1``: the second record evicts the first."""
    sink = [{"name": "a", "to": "a", "input": "s"}]
    if until == "window_closes":
        table = [{"name": "g", "group_by_key": True, "input": "s"},
                 {"name": "w", "windowed_by": {"size_ms": 50, "grace_ms": 0}, "input": "g"},
                 {"name": "t", "aggregate": "concat", "input": "w"}]  # fmt: skip
        suppress = {"until": "window_closes"}
    else:
        table, suppress = [{"name": "t", "to_table": True, "input": "s"}], {"until": "time_limit", "time_limit_ms": 5}
    held = [
        *table,
        {"name": "held", "suppress": suppress, "input": "t"},
        {"name": "changes", "to_stream": True, "input": "held"},
        {"name": "m", "map_values": {"fail_on": "1"}, "input": "changes"},
    ]
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [{"name": "s", "stream": "in"}, *(sink + held if sink_first else held + sink)],
            "events": [EVENTS[0], {**EVENTS[1], "ts": 60}],
        }
    )


SUPPRESSED = {
    # the source's children share one record context: a sink before the aggregate frees the raw record of the copy
    # the suppression then buffers (the buffer keeps the context object, not its raw record at eviction time)
    "window-closes-after-a-sink": (("window_closes", True), (None, None)),
    "window-closes-before-a-sink": (("window_closes", False), ("k", "1")),
    "time-limit-after-a-sink": (("time_limit", True), (None, None)),
    "time-limit-before-a-sink": (("time_limit", False), ("k", "1")),
}


@pytest.mark.parametrize("name", SUPPRESSED)
def test_a_suppression_buffers_the_record_context_with_its_raw_record_as_it_was(name):
    args, expected = SUPPRESSED[name]
    (dead,) = [r for r in suppressed_beside_a_sink(*args).run().outputs_by_event()[1] if r.topic == "dlq"]
    assert (dead.key, dead.value, dict(dead.headers)["__streams.errors.offset"]) == (*expected, "0")


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, oracle_check.HANDLER_JUDGES[-1]])
def test_the_real_library_buffers_a_record_context_freed_by_a_sink(built, version):
    cases = [suppressed_beside_a_sink(*SUPPRESSED[name][0], semantics=version) for name in SUPPRESSED]
    answers = topology_oracle.run_batch(version, cases)
    for name, case, answer in zip(SUPPRESSED, cases, answers):
        assert [tuple(row[1:3]) for row in answer["outputs"][1] if row[0] == "dlq"] == [SUPPRESSED[name][1]], name
        assert topology_oracle.difference(case, answer, version) is None


def through_a_grace_buffer(grace_ms: int | None, semantics: str = "4.4") -> TopologyScenario:
    """``in`` left-joined with a versioned table (with a grace period, or none), the results through a mapper that
    throws on ``1``: with a grace of 10 ms the second record releases the first."""
    join: dict = {"name": "j", "left_join": ["s", "t"], "joiner": "concat"}
    if grace_ms is not None:
        join["grace_ms"] = grace_ms
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [
                {"name": "s", "stream": "in"},
                {"name": "t", "table": "versions", "history_retention_ms": 100},
                join,
                {"name": "m", "map_values": {"fail_on": "1"}, "input": "j"},
                {"name": "b", "to": "b", "input": "m"},
            ],
            "events": [EVENTS[0], {**EVENTS[1], "ts": 20}],
        }
    )


GRACE_DEAD_LETTERS = {
    # no grace period: joined at once, in the record context of the record the task took
    None: [[("k", "1", "0")], []],
    # a grace period of 0 ms: the record goes through the buffer and leaves it at once, in the context it stored
    0: [[(None, None, "0")], []],
    # released by the second record, in the first one's stored context: its offset, no raw record
    10: [[], [(None, None, "0")]],
}


@pytest.mark.parametrize("grace_ms", GRACE_DEAD_LETTERS)
def test_a_record_leaving_a_grace_buffer_is_dead_lettered_without_its_raw_record(grace_ms):
    assert windowed_dead_letters(through_a_grace_buffer(grace_ms)) == GRACE_DEAD_LETTERS[grace_ms]


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, oracle_check.HANDLER_JUDGES[-1]])
def test_the_real_library_dead_letters_a_record_leaving_a_grace_buffer_without_its_raw_record(built, version):
    cases = [through_a_grace_buffer(grace_ms, semantics=version) for grace_ms in GRACE_DEAD_LETTERS]
    answers = topology_oracle.run_batch(version, cases)
    for grace_ms, case, answer in zip(GRACE_DEAD_LETTERS, cases, answers):
        dead = [[tuple(row[1:3]) + (dict(row[4])["__streams.errors.offset"],) for row in event if row[0] == "dlq"]
                for event in answer["outputs"]]  # fmt: skip
        assert dead == GRACE_DEAD_LETTERS[grace_ms], grace_ms
        assert topology_oracle.difference(case, answer, version) is None


def repartitioned_beside_a_failing_mapper(semantics: str = "4.4") -> TopologyScenario:
    """``in`` repartitioned (its first child: a repartition topic's sink) and through a mapper that throws on ``1``."""
    return TopologyScenario.from_dict(
        {
            "semantics": semantics,
            "processing_exception_handler": "continue",
            "dead_letter_queue": "dlq",
            "topology": [
                {"name": "s", "stream": "in"},
                {"name": "r", "repartition": True, "input": "s"},
                {"name": "m", "map_values": {"fail_on": "1"}, "input": "s"},
                {"name": "b", "to": "b", "input": "m"},
            ],
            "events": EVENTS,
        }
    )


def test_a_repartition_topics_sink_leaves_its_siblings_their_raw_record():
    """Kafka puts a filter before each repartition topic's sink (``-repartition-filter``, which drops null keys): the
    sink sends in the filter's copy of the record context, unlike a ``to`` that is the stream's first child."""
    assert dead_letters(repartitioned_beside_a_failing_mapper()) == [("k", "1")]


@pytest.mark.oracle
@pytest.mark.parametrize("version", [oracle_check.LATEST_JUDGE.version, oracle_check.HANDLER_JUDGES[-1]])
def test_the_real_library_leaves_a_repartition_sinks_siblings_their_raw_record(built, version):
    case = repartitioned_beside_a_failing_mapper(semantics=version)
    (answer,) = topology_oracle.run_batch(version, [case])
    assert [row[:3] for row in answer["outputs"][0] if row[0] == "dlq"] == [["dlq", "k", "1"]]
    assert topology_oracle.difference(case, answer, version) is None
