"""Debugging your own topics on Spark: the rough edges a first user meets, each refused with a
message that names the fix, or made to work; the Spark example of docs/how-to/debug-your-topics.md run as written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kjoin import Scenario, run
from kjoin.records import Record, Side
from kjoin.semantics import KNOWN_VERSIONS, parse_semantics
from kjoin.spark import SparkInputError, Topic, from_files, run_join
from kjoin_viz import Stepper
from tests.spark_compare import reference_outputs, spark_outputs

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent


def topic(spark, rows, partitions=None):
    """A topic from rows ``(key, value, ts, partition, offset)``."""
    frame = spark.createDataFrame(rows, "key string, value string, ts long, partition int, offset long")
    return Topic(frame, partitions)


LEFT = [("a", "A1", 5, 0, 0), ("b", "B1", 3, 1, 0), ("a", "A2", 40, 0, 1), ("c", "C1", 7, 0, 2)]
RIGHT = [("a", "x1", 1, 0, 0), ("b", "y1", 6, 1, 0), ("c", "z1", 30, 0, 1)]


def test_a_partition_that_does_not_exist_is_refused(spark):
    result = run_join(topic(spark, LEFT, 4), topic(spark, RIGHT, 4), "stream-table", "left")
    with pytest.raises(SparkInputError, match=r"partition=7: the topics have 4 partitions \(0 to 3\)"):
        result.trace(partition=7)
    with pytest.raises(SparkInputError, match=r"partition=-1"):
        result.trace(partition=-1)
    assert len(result.trace(partition=3)) == 0  # an existing partition without records: an empty trace


def test_window_as_milliseconds_equals_the_symmetric_window_without_grace(spark):
    left, right = topic(spark, LEFT), topic(spark, RIGHT)
    by_int = spark_outputs(run_join(left, right, "stream-stream", "outer", window=10))
    by_dict = spark_outputs(
        run_join(left, right, "stream-stream", "outer", window={"before_ms": 10, "after_ms": 10, "grace_ms": 0})
    )
    records = lambda side, rows: [Record(side, *row) for row in rows]  # noqa: E731
    expected = reference_outputs(
        records(Side.LEFT, LEFT),
        records(Side.RIGHT, RIGHT),
        "stream-stream",
        "outer",
        2,
        {"before_ms": 10, "after_ms": 10, "grace_ms": 0},
    )
    assert by_int == by_dict == expected
    narrow = spark_outputs(run_join(left, right, "stream-stream", "outer", window=1))
    assert narrow != by_int, "the window must matter in this example"


@pytest.mark.parametrize(
    "window, message",
    [
        ("600000", r"window='600000': expected milliseconds \(an int"),
        (-5, r"window=-5: a time difference is 0 ms or more"),
        ({"before_ms": 5}, r"window"),
        ({"before_ms": 5, "after_ms": 5, "grace_ms": 0, "size": 3}, r"window.size: unknown field"),
    ],
)
def test_a_bad_window_is_refused_clearly(spark, window, message):
    with pytest.raises(SparkInputError, match=message):
        run_join(topic(spark, LEFT), topic(spark, RIGHT), "stream-stream", "inner", window=window)


def test_a_window_on_a_join_without_one_is_refused(spark):
    with pytest.raises(SparkInputError, match=r"a stream-table join has no window"):
        run_join(topic(spark, LEFT), topic(spark, RIGHT), "stream-table", "left", window=5)


def test_an_unknown_kafka_version_is_refused_with_the_known_ones(spark):
    for version in ("9.9", "3.10", "2.9", "1.2"):
        with pytest.raises(
            ValueError, match=r"is not a Kafka release kjoin knows; the known ones are 0\.10\.0, .* 3\.9, 4\.0, 4\.1"
        ):
            parse_semantics(version)
    with pytest.raises(
        SparkInputError, match=r"semantics '9.9' is not a Kafka release kjoin knows; the known ones are"
    ):
        run_join(topic(spark, LEFT), topic(spark, RIGHT), "stream-table", "left", semantics="9.9")
    assert [str(parse_semantics(v)) for v in ("3.9.1", "0.11.0", "2.8", "4.1")] == ["3.9.1", "0.11.0", "2.8", "4.1"]
    assert KNOWN_VERSIONS[-1] == "4.4" and len(KNOWN_VERSIONS) == len(set(KNOWN_VERSIONS))


GUIDE = ROOT / "docs" / "how-to" / "debug-your-topics.md"


def guide_spark_example() -> str:
    """The first Python example of the how-to guide "Debug your own topics"."""
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert blocks, f"{GUIDE.relative_to(ROOT)} has a Python example"
    return blocks[0]


def test_the_guide_spark_example_runs_as_written(spark, tmp_path, monkeypatch):
    """The guide's code, unchanged, in a directory holding what it reads: ``orders/`` as
    Spark writes Parquet (a directory of part files), ``customers.jsonl`` as kcat dumps it."""
    partitions = 4
    orders = [(f"C{i % 5}", f"O{i}", 10 * i, i % partitions, i // partitions) for i in range(20)]
    customers = [(f"C{i}", f"name{i}", 3 + 10 * i, i % partitions, 0) for i in range(partitions)]
    monkeypatch.chdir(tmp_path)
    spark.createDataFrame(orders, "key string, value string, ts long, partition int, offset long").write.parquet(
        str(tmp_path / "orders")
    )
    Path("customers.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "topic": "customers",
                    "partition": p,
                    "offset": o,
                    "tstype": "create",
                    "ts": ts,
                    "key": k,
                    "payload": v,
                }
            )
            + "\n"
            for k, v, ts, p, o in customers
        )
    )
    scope: dict = {}
    exec(compile(guide_spark_example(), str(GUIDE), "exec"), scope)
    result, trace = scope["result"], scope["trace"]
    records = lambda side, rows: [Record(side, *row) for row in rows]  # noqa: E731
    expected = reference_outputs(
        records(Side.LEFT, orders), records(Side.RIGHT, customers), "stream-table", "left", partitions
    )
    assert spark_outputs(result) == expected
    assert [(s.index, o.key, o.value, o.ts, o.tombstone) for s in trace.steps for o in s.outputs] == expected[2]
    assert sorted(os.listdir("out")) == ["outputs", "run.json", "steps", "summary"]


def test_a_directory_of_files_of_several_formats_needs_the_format(spark, tmp_path):
    (tmp_path / "mixed").mkdir()
    (tmp_path / "mixed" / "a.csv").write_text("key,value,ts\n")
    (tmp_path / "mixed" / "b.json").write_text("")
    with pytest.raises(SparkInputError, match=r"several formats \(csv, json\); pass format="):
        from_files(spark, str(tmp_path / "mixed"))


def test_csv_options_pass_through_and_type_advice_names_long(spark, tmp_path):
    import pandas as pd

    frame = pd.DataFrame(
        {
            "key": ["a", "b", "a"],
            "value": ["A1", "B1", None],
            "ts": [5, 3, 9],
            "partition": [0, 1, 0],
            "offset": [0, 0, 1],
        }
    )
    path = tmp_path / "orders.csv"
    frame.to_csv(path, sep=";", index=False)
    topic_ = from_files(spark, str(path), options={"sep": ";"})
    rows = sorted((tuple(r) for r in topic_.frame.collect()), key=lambda r: (r[3], r[4]))
    assert rows == [("a", "A1", 5, 0, 0), ("a", None, 9, 0, 1), ("b", "B1", 3, 1, 0)]
    with pytest.raises(SparkInputError, match=r"no column 'key'.*the columns are key;value;ts;partition;offset"):
        from_files(spark, str(path))  # without the separator, one column "key;value;ts;..."
    # pandas writes an integer column with a missing entry as floats: the advice casts to long.
    floats = pd.DataFrame({"key": ["a"], "value": ["A1"], "ts": [5.0], "partition": [0], "offset": [0]})
    floats.to_csv(tmp_path / "floats.csv", index=False)
    with pytest.raises(SparkInputError, match=r"column 'ts' has type double.*\.cast\('long'\)"):
        from_files(spark, str(tmp_path / "floats.csv"))
    with pytest.raises(SparkInputError, match=r"options=.*expected a dict"):
        from_files(spark, str(path), options=["sep", ";"])


def test_state_at_reads_the_traces_own_task_and_lists_only_its_tasks():
    events = [
        Record(Side.RIGHT, "a", "x", 3, 2, 0),
        Record(Side.LEFT, "a", "A", 5, 2, 0),
        Record(Side.LEFT, "b", "B", 6, 2, 1),
    ]
    trace = run(Scenario.from_records("stream-table", "left", events, partitions=4))
    state = trace.state_at(2)
    assert state.tasks() == [2]
    assert (
        state.table("right") == state.table("right", task=2) == [{"key": "a", "value": "x", "ts": 3, "old_value": None}]
    )
    assert state.table("right", task=0) == []
    assert trace.state_at(0).table("right") == state.table("right")
    assert trace.initial_state().task == 2


def test_the_stepper_shows_the_looked_up_keys_rows_first():
    right = [Record(Side.RIGHT, f"k{i:03d}", f"v{i}", i, 0, i) for i in range(60)]
    left = Record(Side.LEFT, "k055", "L", 100, 0, 0)
    trace = run(Scenario.from_records("stream-table", "left", [*right, left]))
    text = Stepper(trace, step=60).text()
    table = text.split("right table", 1)[1]
    assert table.index("k055") < table.index("k000"), table[:400]
    assert "k055" in table.split("more")[0]


def test_a_fresh_local_session_starts_quietly_and_raises_without_printing_the_plan(tmp_path):
    """A fresh process (one JVM for both checks): starting the session prints no log4j profile, log level or WARN
    lines; and PySpark logs every analysis error with its whole plan as a JSON line before raising it, the quiet
    session does not."""
    code = (
        "from kjoin.spark import local_session\n"
        "spark = local_session()\n"
        "print(spark.range(3).count())\n"
        "frame = spark.range(3).groupBy('id').count()\n"
        "try:\n"
        "    frame.select('cont').count()\n"
        "except Exception as error:\n"
        "    print('raised', 'cont' in str(error))\n"
        "spark.stop()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["3", "raised True"]
    noise = [
        line
        for line in done.stderr.splitlines()
        if re.search(r"WARN |log4j|Setting default log level|setLogLevel", line)
    ]
    assert noise == [], done.stderr
    assert "QueryContextLogger" not in done.stderr and len(done.stderr) < 2000, done.stderr[:3000]


# -- rough edges of debugging a run: each refused with the fix--------------------------------------
def test_why_and_trace_refuse_text_for_numbers_and_name_the_number(spark):
    result = run_join(topic(spark, LEFT, 4), topic(spark, RIGHT, 4), "stream-table", "left")
    with pytest.raises(SparkInputError, match=r"offset='1' is text; pass the number: offset=1"):
        result.why(partition=0, offset="1")
    with pytest.raises(SparkInputError, match=r"partition='0' is text; pass the number: partition=0"):
        result.why(partition="0", offset=1)
    with pytest.raises(SparkInputError, match=r"partition='0' is text"):
        result.trace(partition="0")
    with pytest.raises(SparkInputError, match=r"offset=1.5: expected an int"):
        result.why(partition=0, offset=1.5)
    assert result.why(partition=0, offset=1).record.value == "A2"


def test_a_key_drill_down_in_the_wrong_partition_or_of_an_unknown_key_says_where_the_key_is(spark):
    result = run_join(topic(spark, LEFT, 4), topic(spark, RIGHT, 4), "stream-table", "left")
    with pytest.raises(
        SparkInputError,
        match=r"partition 1 has no record with this key; its records are in partition 0 \(left\), "
        r"partition 0 \(right\); ask trace\(partition=0, key='a'\)",
    ):
        result.trace(partition=1, key="a")
    with pytest.raises(SparkInputError, match=r"neither topic has a record with key 'zz' \(of type str\)"):
        result.trace(partition=0, key="zz")
    assert [s.record.value for s in result.trace(partition=0, key="a").key_steps()] == ["x1", "A1", "A2"]


def test_a_partition_count_below_the_topics_partitions_blames_the_count_not_co_partitioning(spark):
    from tests.test_spark_readers import kafka_frame, utf8

    rows = [("a", "A", 5, 3, 0), ("b", "B", 6, 1, 0)]
    from kjoin.spark import from_kafka

    frame = kafka_frame(spark, rows, utf8, utf8)
    # the reader checks eagerly and names the count
    with pytest.raises(
        SparkInputError,
        match=r"column 'partition': 3 is not a partition of a topic with partitions=3 \(0 to 2\); pass the topic's "
        r"real partition count",
    ):
        from_kafka(frame, partitions=3)
    # unchecked, the join names the same cause, not co-partitioning
    left, right = from_kafka(frame, partitions=3, check=False), from_kafka(frame)
    with pytest.raises(
        SparkInputError,
        match=r"left topic \(Kafka DataFrame\): partitions=3 was passed, but the topic has records in partition 3, "
        r"so it has at least 4 partitions",
    ):
        run_join(left, right, "stream-table", "left").outputs.count()


def test_json_values_warn_that_the_join_takes_the_slow_path_and_name_the_alternative(spark):
    import warnings

    from kjoin.spark.passes.plans import SlowPathWarning

    orders = Topic(
        spark.createDataFrame(
            [("a", '{"n": 1}', 5, 0, 0)], "key string, value string, ts long, partition int, offset long"
        ),
        1,
        json_values=True,
    )
    with pytest.warns(SlowPathWarning, match=r"about 3x .* value='string' .* method='processors'"):
        slow = run_join(orders, topic(spark, [("a", "x", 1, 0, 0)], 1), "stream-table", "left")
    assert slow.method == "processors"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SlowPathWarning)
        chosen = run_join(orders, topic(spark, [("a", "x", 1, 0, 0)], 1), "stream-table", "left", method="processors")
        plain = run_join(topic(spark, LEFT, 4), topic(spark, RIGHT, 4), "stream-table", "left")
    assert chosen.method == "processors" and plain.method == "vectorised"


def test_times_read_as_dates_and_durations():
    from kjoin.spark.debug.why import duration, span, when

    assert duration(9042983) == "2 h 30 min 42.983 s" and duration(15) == "15 ms" and duration(600_000) == "10 min"
    assert duration(-4250) == "-4.250 s" and duration(86_400_000 + 1000) == "1 d 1 s"
    assert when(1795600000123) == "2026-11-25 09:46:40.123 UTC" and when(40) == "ts 40"
    assert span(3, 9) == "[3, 9]"
    assert span(1795600000000, 1795600600000) == "[2026-11-25 09:46:40.000 UTC, 2026-11-25 09:56:40.000 UTC]"
