"""An emit-on-window-close aggregate's store keeps a window starting at ``observed - retention``; an emit-on-update
aggregate's store hides it (Kafka 3.4+).

``emitStrategy(onWindowClose())`` (KIP-825, 3.3) materializes a time-ordered window store
(``TimeWindowedKStreamImpl.materialize``: ``RocksDbIndexedTimeOrderedWindowBytesStoreSupplier``). From 3.4
(KAFKA-12960) ``AbstractDualSchemaRocksDBSegmentedBytesStore.get`` hides a window whose start is ``< observed -
retention`` in a time-first store and ``< observed - retention + 1`` in a key-first one, so a windowed table's value
getter (a join reading the aggregate) finds the window starting exactly at ``observed - retention`` in the first and
not in the second. Before 3.4 neither hides it while its segment lives. The store's observed time is the start of
the last window put.

The case: the topology walk's minimal case. A windowed reduce (size 50, grace 0) holds ü's window [2007550, 2007600);
k1 at ``late`` moves the reduce's store to the window starting at 2007600 (observed - retention = 2007550: the
boundary) or 2007650 (2007600: past it); then ü at 2007595 on a windowed count looks ü's window up on the reduce.
"""

from __future__ import annotations

import pytest

from kafka_oracle import topology_oracle
from kjoin.state import StateLog
from kjoin.stores.segmented_window import SegmentLayout, SegmentedWindowStore
from kjoin.topology.document import TopologyScenario

FOUND = '1-{"f":"k1","g":3}'
MISSED = "1-null"


def _document(version: str, emit: str, late: int) -> dict:
    windows = {"size_ms": 50, "grace_ms": 0}
    return {
        "semantics": version,
        "topology": [
            {"name": "s3", "stream": "s3"},
            {"name": "n5", "group_by_key": True, "input": "s3"},
            {"name": "n6", "windowed_by": windows, "input": "n5", "emit_strategy": emit},
            {"name": "n7", "reduce": "concat", "input": "n6"},
            {"name": "s9", "stream": "s9"},
            {"name": "n10", "group_by_key": True, "input": "s9"},
            {"name": "n11", "windowed_by": windows, "input": "n10"},
            {"name": "n12", "count": True, "input": "n11"},
            {"name": "n8", "left_join": ["n12", "n7"]},
            {"name": "to-out2", "to": "out2", "input": "n8"},
        ],
        "events": [
            {"topic": "s3", "key": "ü", "value": {"f": "k1", "g": 3}, "ts": 2007593},
            {"topic": "s3", "key": "k1", "value": "a b", "ts": late},
            {"topic": "s9", "key": "ü", "value": "A-B", "ts": 2007595},
        ],
    }


CASES = [
    ("on_window_close", 2007602),
    ("on_window_update", 2007602),
    ("on_window_close", 2007652),
    ("on_window_update", 2007652),
]


def _expected(version: str, emit: str, late: int) -> str:
    """What the count's lookup of ü's window [2007550, 2007600) finds on ``version``."""
    if tuple(int(part) for part in version.split(".")[:2]) < (3, 4):
        return FOUND  # no expiry check on reads: the window's segment (60 s) still lives
    at_boundary = late < 2007650
    return FOUND if emit == "on_window_close" and at_boundary else MISSED


def _looked_up(version: str, emit: str, late: int) -> str:
    outputs = TopologyScenario.from_dict(_document(version, emit, late)).run().outputs("out2")
    assert [str(o.key) for o in outputs] == ["[ü@2007550/2007600]"]
    return outputs[0].value


@pytest.mark.parametrize("version", ["3.3", "3.4", "4.0", "4.4"])
@pytest.mark.parametrize("emit, late", CASES)
def test_an_emit_final_store_keeps_the_window_at_observed_minus_retention(version: str, emit: str, late: int) -> None:
    assert _looked_up(version, emit, late) == _expected(version, emit, late)


@pytest.mark.parametrize("time_first, boundary_found", [(True, True), (False, False)])
def test_a_store_says_why_a_read_hides_a_window(time_first: bool, boundary_found: bool) -> None:
    store = SegmentedWindowStore(StateLog(), 0, "store", 50, SegmentLayout.kafka(50), time_first=time_first)
    store.put("ü", 2007550, "v", 2007593)
    store.put("k1", 2007600, "w", 2007602)  # observed 2007600: observed - retention is the window's start
    assert (store.fetch("ü", 2007550) is not None) is boundary_found
    assert (store.hidden("ü", 2007550) is None) is boundary_found
    store.put("k1", 2007650, "x", 2007652)
    assert store.fetch("ü", 2007550) is None
    said = "before" if time_first else "at or before"
    assert f"but it starts {said} observed 2007650 - retention 50 = 2007600" in store.hidden("ü", 2007550)


# -- against the real library ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["3.3.2", "3.9.1", "4.0.1", "4.4.0"])
def test_kafka_keeps_the_boundary_window_in_an_emit_final_store_only(built, version: str) -> None:
    cases = [TopologyScenario.from_dict(_document(version, emit, late)) for emit, late in CASES]
    answers = topology_oracle.run_batch(version, cases)
    for (emit, late), case, answer in zip(CASES, cases, answers):
        assert topology_oracle.difference(case, answer, version) is None, (emit, late)
        assert answer["outputs"][2] == [["out2", "[ü@2007550/2007600]", _expected(version, emit, late), 2007595]]


# -- on Spark --------------------------------------------------------------------------------------------------------
def test_spark_reads_an_emit_final_store_as_the_reference_engine(spark) -> None:
    """One partition, so that both aggregates' records meet in one task (on several, ü and k1 may not)."""
    from tests.topology_spark_check import difference

    assert _looked_up("4.0", "on_window_close", 2007602) == FOUND
    document = {**_document("4.0", "on_window_close", 2007602), "partitions": 1}
    assert difference(spark, TopologyScenario.from_dict(document)) is None
