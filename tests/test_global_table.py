"""KStream-GlobalKTable joins: the reference engine's rules, each pinned against the real library.

The era tests run Kafka Streams itself (``kafka_oracle/oracle_check.py``'s harness, TopologyTestDriver) on both sides of
every boundary the join has: KAFKA-10277 (2.7), KIP-962 (3.7) and KAFKA-19208 (4.0.1). Without Java, Maven or the
jars they fail, they never skip. The random comparison of ``stream-globaltable`` scenarios runs with every other
join in ``tests/test_kafka_oracle.py`` and ``make kafka-check``.
"""

from __future__ import annotations

import pytest

import kjoin
from kjoin.fates import Fate, Reason
from kjoin.joins.global_table import key_selector, possible_partners
from kjoin.stores.global_table import GLOBAL_TABLE, GLOBAL_TASK
from kjoin.state import StoreId
from kafka_oracle.oracle_check import Harness, kjoin_outputs

ORDERS = {
    "join": "stream-globaltable",
    "variant": "left",
    "foreign_key": "customer",
    "events": [
        {"side": "right", "key": "c1", "value": "Alice", "ts": 50},  # bootstrap: before the first order
        {"side": "left", "key": "o1", "value": {"customer": "c1", "v": 1}, "ts": 5},
        {"side": "left", "key": "o2", "value": {"customer": "c2", "v": 2}, "ts": 6},
        {"side": "right", "key": "c2", "value": "Bob", "ts": 1},  # applied when it comes, whatever its ts
        {"side": "left", "key": "o3", "value": {"customer": "c2", "v": 3}, "ts": 7},
        {"side": "left", "key": "o4", "value": {"v": 4}, "ts": 8},  # no customer: the key selector gives null
        {"side": "left", "key": None, "value": {"customer": "c1", "v": 5}, "ts": 9},  # null stream key
        {"side": "left", "key": "o6", "value": None, "ts": 10},
        {"side": "right", "key": "c1", "value": None, "ts": 11},  # delete
        {"side": "left", "key": "o7", "value": {"customer": "c1", "v": 7}, "ts": 12},
    ],
}


def run(variant: str = "left", semantics: str | None = None, **changes) -> kjoin.Trace:
    data = {**ORDERS, **changes, "variant": variant}
    if semantics is not None:
        data["semantics"] = semantics
    return kjoin.run(kjoin.Scenario.from_dict(data))


def rendered(trace: kjoin.Trace) -> list[list[str]]:
    return [[f"{o.key}:{o.value}@{o.ts}" for o in step.outputs] for step in trace.steps]


def test_a_left_join_looks_up_the_global_table_by_the_key_selector_and_keeps_the_stream_key() -> None:
    trace = run("left")
    assert rendered(trace) == [
        [],
        ['o1:{"customer":"c1","v":1}-Alice@5'],  # the table's ts (50) is later: a global table has no time
        ['o2:{"customer":"c2","v":2}-null@6'],
        [],
        ['o3:{"customer":"c2","v":3}-Bob@7'],
        ['o4:{"v":4}-null@8'],  # 4.0.1+ (KAFKA-19208): joined with null
        ['None:{"customer":"c1","v":5}-Alice@9'],  # 2.7+: a null key is looked up by its selected key
        [],
        [],
        ['o7:{"customer":"c1","v":7}-null@12'],
    ]
    fates = [(step.fate, step.reason) for step in trace.steps]
    assert fates[0] == fates[3] == fates[8] == (Fate.STORED, Reason.TABLE_UPDATE)
    assert fates[7] == (Fate.DROPPED, Reason.NULL_VALUE)
    assert "Bootstrap" in trace.steps[0].explain and "Bootstrap" not in trace.steps[3].explain
    assert "before or after" in trace.steps[3].explain


def test_an_inner_join_emits_only_what_it_finds() -> None:
    trace = run("inner")
    assert rendered(trace) == [
        [],
        ['o1:{"customer":"c1","v":1}-Alice@5'],
        [],
        [],
        ['o3:{"customer":"c2","v":3}-Bob@7'],
        [],
        ['None:{"customer":"c1","v":5}-Alice@9'],
        [],
        [],
        [],
    ]
    assert (trace.steps[2].fate, trace.steps[2].reason) == (Fate.NO_MATCH, Reason.NO_PARTNER)
    assert (trace.steps[5].fate, trace.steps[5].reason) == (Fate.DROPPED, Reason.NULL_JOIN_KEY)


@pytest.mark.parametrize(
    "semantics, selector_null, null_key",
    [
        ("2.6", (Fate.JOINED, None), (Fate.DROPPED, Reason.NULL_KEY)),  # before KAFKA-10277
        ("3.6", (Fate.DROPPED, Reason.NULL_JOIN_KEY), (Fate.JOINED, None)),
        ("4.0.0", (Fate.DROPPED, Reason.NULL_JOIN_KEY), (Fate.JOINED, None)),  # before KAFKA-19208
        ("4.0.1", (Fate.JOINED, None), (Fate.JOINED, None)),
    ],
)
def test_the_left_joins_null_rules_by_era(semantics, selector_null, null_key) -> None:
    trace = run("left", semantics)
    assert (trace.steps[5].fate, trace.steps[5].reason) == selector_null
    assert (trace.steps[6].fate, trace.steps[6].reason) == null_key


def test_a_null_key_record_whose_selector_gives_null_is_joined_by_a_3_7_left_join_and_dropped_before() -> None:
    events = [{"side": "left", "key": None, "value": {"v": 1}, "ts": 1}]
    assert [len(s.outputs) for s in run("left", "3.7", events=events).steps] == [1]
    assert [s.reason for s in run("left", "3.6", events=events).steps] == [Reason.NULL_JOIN_KEY]
    assert [s.reason for s in run("inner", "3.7", events=events).steps] == [Reason.NULL_JOIN_KEY]


def test_without_a_key_selector_the_stream_key_is_the_table_key() -> None:
    data = {
        "events": [
            {"side": "right", "key": "k", "value": "a", "ts": 1},
            {"side": "left", "key": "k", "value": "A", "ts": 2},
            {"side": "left", "key": None, "value": "B", "ts": 3},
        ]
    }
    trace = kjoin.run(kjoin.Scenario.from_dict({"join": "stream-globaltable", "variant": "inner", **data}))
    assert rendered(trace) == [[], ["k:A-a@2"], []]
    assert trace.steps[2].reason is Reason.NULL_KEY


def test_every_task_reads_the_one_global_store() -> None:
    """Four partitions: the orders land on several tasks, and each finds the customer the global thread stored once."""
    events = [{"side": "right", "key": "c", "value": "C", "ts": 0}] + [
        {"side": "left", "key": f"o{i}", "value": {"customer": "c"}, "ts": i} for i in range(8)
    ]
    trace = run("inner", events=events, partitions=4)
    assert len({step.task for step in trace.steps[1:]}) > 1
    assert all(step.outputs and step.outputs[0].value == '{"customer":"c"}-C' for step in trace.steps[1:])
    stores = trace.state_at(-1).stores
    assert [store for store in stores if store.name == GLOBAL_TABLE] == [StoreId(GLOBAL_TASK, GLOBAL_TABLE)]
    assert trace.steps[0].task == GLOBAL_TASK


def test_possible_partners_lists_what_a_running_application_could_find() -> None:
    """After the bootstrap, any later update may land before or after a stream record: o2 may meet Bob (the global
    thread ran ahead), o7 may still see Alice (it lagged behind the delete)."""
    scenario = kjoin.Scenario.from_dict(ORDERS)
    answers = possible_partners(scenario.records(), "customer")
    assert answers[0] is None and answers[3] is None
    assert answers[1] == ["Alice", None]  # the bootstrap is sure; the later delete of c1 may come first
    assert answers[2] == [None, "Bob"]
    assert answers[9] == ["Alice", None]


def test_the_key_selector_reads_a_field_path() -> None:
    select = key_selector("a.b")
    assert select("k", {"a": {"b": "X"}}) == "X"
    assert select("k", {"a": None}) is None
    assert select("k", "text") is None
    assert select("k", None) is None
    assert key_selector(None)("k", None) == "k"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"semantics": "0.10.1"}, "GlobalKTables exist since Kafka 0.10.2 (KIP-99)"),
        ({"right": {"versioned": True, "history_retention_ms": 5}}, "right.versioned"),
        ({"arrival": {"right": {"lag_ms": 5}}}, "arrival: a global table is read by the global thread"),
        ({"window": {"before_ms": 1, "after_ms": 1, "grace_ms": 0}}, "has no window"),
        (
            {"events": [{"side": "left", "key": "o", "value": {"customer": {"id": 1}}, "ts": 1}]},
            "events[0].value: the key selector's field 'customer'",
        ),
    ],
)
def test_bad_scenarios_are_refused_with_the_field_named(change, message) -> None:
    with pytest.raises(kjoin.ScenarioError, match=__import__("re").escape(message)):
        kjoin.Scenario.from_dict({**ORDERS, **change})


# -- the real library -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "version, o4, null_key",
    [
        ("2.6.3", ['o4:{"v":4}-null@8'], []),  # null stream key skipped; a null selected key joins with null
        ("2.7.1", [], ['None:{"customer":"c1","v":5}-Alice@9']),  # KAFKA-10277
        ("3.6.2", [], ['None:{"customer":"c1","v":5}-Alice@9']),
        ("3.7.2", [], ['None:{"customer":"c1","v":5}-Alice@9']),
        ("4.0.0", [], ['None:{"customer":"c1","v":5}-Alice@9']),
        ("4.0.1", ['o4:{"v":4}-null@8'], ['None:{"customer":"c1","v":5}-Alice@9']),  # KAFKA-19208
        ("4.4.0", ['o4:{"v":4}-null@8'], ['None:{"customer":"c1","v":5}-Alice@9']),
    ],
)
def test_kafka_agrees_on_each_side_of_every_boundary(built, version, o4, null_key) -> None:
    extra = [{"side": "left", "key": None, "value": {"v": 13}, "ts": 13}]  # 3.7+ left: null key, null selection
    with Harness(version) as harness:
        for variant in ("left", "inner"):
            scenario = kjoin.Scenario.from_dict(
                {**ORDERS, "variant": variant, "semantics": version, "events": ORDERS["events"] + extra}
            )
            kafka = harness.run(scenario)
            assert kafka == kjoin_outputs(scenario), (version, variant)
            if variant == "left":
                as_text = [[f"{k}:{v}@{ts}" for k, v, ts in step] for step in kafka]
                assert as_text[5] == o4 and as_text[6] == null_key, version
                relaxed = kjoin.parse_semantics(version).relaxed_null_keys
                assert as_text[10] == (['None:{"v":13}-null@13'] if relaxed else []), version


def test_kafka_runs_each_task_with_the_whole_global_topic(built) -> None:
    events = [{"side": "right", "key": "c", "value": "C", "ts": 0}] + [
        {"side": "left", "key": f"o{i}", "value": {"customer": "c" if i % 2 else "d"}, "ts": i} for i in range(6)
    ]
    events.insert(4, {"side": "right", "key": "d", "value": "D", "ts": 100})
    scenario = kjoin.Scenario.from_dict({**ORDERS, "variant": "inner", "events": events, "partitions": 3})
    with Harness("4.4.0") as harness:
        kafka = harness.run(scenario)
    assert kafka == kjoin_outputs(scenario)
    assert sum(len(step) for step in kafka) == 3 + 1  # three c orders, and o4, the one d order after D arrived


@pytest.mark.oracle
def test_kjoin_export_writes_a_global_table_join_that_kafka_passes(tmp_path) -> None:
    """``kjoin export --junit`` builds ``builder.globalTable`` and the key selector, and the real library agrees with
    kjoin's records (inner and left, by a key selector and by the stream key)."""
    from kjoin.export import export_junit
    from tests.test_export_junit import run_junit

    by_key = {
        "join": "stream-globaltable",
        "variant": "inner",
        "events": [
            {"side": "right", "key": "k", "value": "a", "ts": 1},
            {"side": "left", "key": "k", "value": "A", "ts": 2},
            {"side": "left", "key": "j", "value": "B", "ts": 3},
        ],
    }
    sources = {
        "GlobalLeftTest": export_junit(kjoin.Scenario.from_dict(ORDERS), "GlobalLeftTest"),
        "GlobalInnerTest": export_junit(kjoin.Scenario.from_dict({**ORDERS, "variant": "inner"}), "GlobalInnerTest"),
        "GlobalByKeyTest": export_junit(kjoin.Scenario.from_dict(by_key), "GlobalByKeyTest"),
    }
    assert 'builder.globalTable("right"' in sources["GlobalLeftTest"]
    assert "left.leftJoin(right, keySelector, JOINER)" in sources["GlobalLeftTest"]
    assert "(key, value) -> key; // the stream key" in sources["GlobalByKeyTest"]
    assert run_junit("4.4.0", sources, tmp_path) == {name: None for name in sources}


def test_a_per_task_processor_is_refused_rather_than_built_wrong() -> None:
    """The Spark engine builds one processor per task (kjoin.engine.new_join); a GlobalKTable join's store is shared
    by every task, so new_join refuses it with the reason instead of building a table-table join."""
    from kjoin.engine import new_join
    from kjoin.state import StateLog

    with pytest.raises(kjoin.ScenarioError, match="stream-globaltable runs in the reference engine"):
        new_join(kjoin.Scenario.from_dict(ORDERS), StateLog(), 0)
