"""The Python API the notebooks use: scenarios from notation, records and DataFrames;
traces as pandas DataFrames; validation errors that name the field and the record."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import kjoin
from kjoin import Record, Scenario, ScenarioError, Side, merge_by_timestamp, parse_semantics, run
from kjoin.partitioner import default_partition, default_partitions, murmur2, murmur2_many, murmur2_packed
from kjoin.records import load_json, render_value

WINDOW = {"before_ms": 15, "after_ms": 15, "grace_ms": 5}


def test_notation_records_and_frames_build_the_same_scenario():
    by_notation = Scenario.from_notation(
        "stream-stream", "left", left="1:null, 3:A", right="2:null, 4:a", window=WINDOW
    )
    records = [
        {"side": "left", "key": "k", "value": None, "ts": 1},
        {"side": "right", "key": "k", "value": None, "ts": 2},
        {"side": "left", "key": "k", "value": "A", "ts": 3},
        {"side": "right", "key": "k", "value": "a", "ts": 4},
    ]
    by_records = Scenario.from_records("stream-stream", "left", records, window=WINDOW)
    frame = pd.DataFrame(
        {
            "side": ["left", "right", "left", "right"],
            "key": ["k"] * 4,
            "value": [None, None, "A", "a"],
            "ts": [1, 2, 3, 4],
        }
    )
    by_frame = Scenario.from_frame(frame, "stream-stream", "left", window=WINDOW)
    assert by_notation.events == by_records.events == by_frame.events
    assert [o.render() for o in run(by_frame).outputs] == ["A-a"]
    assert [(r.partition, r.offset) for r in by_notation.records()] == [(0, 0), (0, 0), (0, 1), (0, 1)]


def test_records_keep_the_partition_and_offset_they_carry():
    records = [
        Record(Side.LEFT, "k", "A", 3, partition=1, offset=7),
        Record(Side.RIGHT, "k", "a", 4, partition=1, offset=2),
    ]
    scenario = Scenario.from_records("stream-stream", "inner", records, window=WINDOW, partitions=2)
    assert scenario.records() == records
    assert [(s.task, [o.render() for o in s.outputs]) for s in run(scenario)] == [(1, []), (1, ["A-a"])]


def test_a_frame_with_nan_and_numpy_values_becomes_plain_python():
    frame = pd.DataFrame(
        {
            "side": ["left", "right"],
            "key": ["k", "k"],
            "value": [float("nan"), "a"],
            "ts": pd.array([1, 2], dtype="int64"),
        }
    )
    scenario = Scenario.from_frame(frame, "stream-table", "left")
    assert scenario.events[0].value is None and type(scenario.events[0].ts) is int


def test_a_frame_without_a_required_column_is_refused_by_name():
    with pytest.raises(ScenarioError, match="the DataFrame has no column 'ts'; expected columns side, key, value, ts"):
        Scenario.from_frame(pd.DataFrame({"side": [], "key": [], "value": []}), "table-table", "inner")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"key": ["k"]}, "events[1].key: expected a string, number or null, got list"),
        ({"ts": -1}, "events[1].ts: expected a non-negative integer"),
        ({"ts": True}, "events[1].ts: expected a non-negative integer"),
        ({"offset": "x"}, "events[1].offset: expected a non-negative integer"),
        ({"colour": "red"}, "events[1].colour: unknown field"),
    ],
)
def test_a_bad_event_is_named_with_its_index_and_field(change, message):
    events = [
        {"side": "left", "key": "k", "value": "A", "ts": 1},
        {"side": "right", "key": "k", "value": "a", "ts": 2, **change},
    ]
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "events": events})


def test_semantics_are_named_by_kafka_version():
    assert str(parse_semantics("0.10.0")) == "0.10.0" and str(parse_semantics("3.1.x")) == "3.1"
    assert parse_semantics(None) == parse_semantics("latest") == parse_semantics(kjoin.LATEST)
    assert [parse_semantics(v).era for v in ("0.10.1", "0.10.2", "3.0", "3.1", "4.1")] == [
        "0.10.0",
        "0.10.2",
        "0.10.2",
        "3.1",
        "3.1",
    ]
    with pytest.raises(ValueError, match="is not a Kafka version"):
        parse_semantics("newest")
    with pytest.raises(ScenarioError, match="semantics: semantics '0.9': Kafka Streams joins start at 0.10.0"):
        Scenario.from_dict({"join": "table-table", "variant": "inner", "semantics": "0.9", "events": []})


def test_merge_by_timestamp_picks_the_lowest_head_and_keeps_each_partitions_order():
    left = [Record(Side.LEFT, "k", "A", 5), Record(Side.LEFT, "k", "B", 1)]
    right = [Record(Side.RIGHT, "k", "a", 3), Record(Side.RIGHT, "k", "b", 4)]
    merged = merge_by_timestamp(left, right)
    assert [r.value for r in merged] == ["a", "b", "A", "B"]
    assert [
        r.value for r in merge_by_timestamp([Record(Side.LEFT, "k", "A", 3)], [Record(Side.RIGHT, "k", "a", 3)])
    ] == ["A", "a"]


def test_events_without_partition_go_where_kafkas_default_partitioner_puts_them():
    keys = ["alpha", "beta", "gamma", "delta", 42]
    scenario = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "partitions": 3,
            "events": [{"side": "left", "key": k, "value": "v", "ts": 1} for k in keys]
            + [{"side": "left", "key": None, "value": "v", "ts": 1}],
        }
    )
    records = scenario.records()
    assert [r.partition for r in records[:-1]] == [default_partition(k, 3) for k in keys]
    assert records[-1].partition == 0
    assert [r.offset for r in records if r.partition == records[0].partition][0] == 0


def test_murmur2_matches_kafkas_utils_murmur2():
    """Values of org.apache.kafka.common.utils.Utils.murmur2 (its own unit-test vectors)."""
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_murmur2_of_many_keys_at_once_is_murmur2_of_each():
    import random

    rng = random.Random(5)
    datas = [b"", b"21", b"foobar", "é€".encode()] + [rng.randbytes(rng.randrange(40)) for _ in range(2000)]
    assert murmur2_many(datas).tolist() == [murmur2(data) for data in datas]
    packed, cut = b"".join(datas), np.cumsum([0] + [len(data) for data in datas])  # from the 3rd: an offset not 0
    assert murmur2_packed(np.frombuffer(packed, np.uint8), cut[2:]).tolist() == [murmur2(d) for d in datas[2:]]
    assert murmur2_packed(np.zeros(0, np.uint8), [0]).tolist() == []
    keys = [f"c{rng.randrange(50)}" for _ in range(500)] + [None, 7, 2.5, True, b"x", "é"]
    assert default_partitions(keys, 3).tolist() == [0 if key is None else default_partition(key, 3) for key in keys]
    assert default_partitions(keys, 1).tolist() == [0] * len(keys)
    texts = [f"k{n}" for n in range(50)] + [None, "k3"]  # text and null keys only: each distinct key hashed once
    assert default_partitions(texts, 4).tolist() == [0 if k is None else default_partition(k, 4) for k in texts]
    assert default_partitions(["a", float("nan")], 4).tolist() == [default_partition(k, 4) for k in ["a", float("nan")]]


def test_render_and_load_json_are_jsons_own():
    import json

    def dumps(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    values = [{"b": [1, 2.5, True], "a": None, "é": {"z": -0.0, "y": float("inf")}}, (1, "x"), 10**30, 1e16, [{}]]
    assert [render_value(value) for value in values] == [dumps(value) for value in values]
    with pytest.raises(TypeError):  # mixed key types cannot be sorted
        render_value({"a": 1, 2: 3})
    looped: list = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular"):
        render_value(looped)
    shared = {"a": 1}
    assert render_value([shared, shared]) == '[{"a":1},{"a":1}]'  # a failed call leaves nothing marked
    for text in ['{"a":1}', ' {"a":1}', '{"a":1} ', "[1, 2 ]", '"x"', "NaN", "1.5"]:
        assert load_json(text) == json.loads(text) or text == "NaN"
    for text in ['{"a":1}x', "", '{"a":}', '"abc', "\ufeff1"]:
        with pytest.raises(json.JSONDecodeError) as error:
            load_json(text)
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(text)
        assert str(error.value) == str(expected.value)


def test_traces_are_pandas_frames():
    scenario = Scenario.from_notation("stream-stream", "outer", left="1:null, 3:A, 40:E", right="4:a", window=WINDOW)
    trace = run(scenario)
    steps = trace.steps_frame()
    assert list(steps["fate"]) == ["dropped", "buffered", "joined", "buffered"]
    assert list(steps["reason"]) == ["null-value", "window-open", None, "window-open"]
    assert list(steps["until_ms"].astype("object")) == [pd.NA, 23, pd.NA, 60]
    outputs = trace.outputs_frame()
    assert outputs[["step", "key", "left", "right", "value", "ts", "tombstone"]].values.tolist() == [
        [2, "k", "A", "a", "A-a", 4, False]
    ]
    state = trace.state_frame(3)
    assert state.query("store == 'outer-join buffer'")[["key", "ts", "value"]].values.tolist() == [["k", 40, "E"]]
    # retention 15 + 15 + 5 = 35: after E@40 the left window shows ts >= 6, so A@3 is gone
    assert state.query("store == 'left window'")["value"].tolist() == ["E"]
    assert trace.initial_state().frame().query("store != 'clock'").empty
