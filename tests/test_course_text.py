"""What the course's text says: facts a learner takes away (checked against Kafka's source where the
test says so, and against the engine), and the path through the course.

The notebooks' outputs are checked by nbval; this file reads their markdown."""

from __future__ import annotations

from pathlib import Path

import nbformat
import kjoin

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def markdown(name: str) -> str:
    (path,) = NOTEBOOKS.glob(f"{name}*.ipynb")
    return "\n".join(c.source for c in nbformat.read(path, 4).cells if c.cell_type == "markdown")


def code(name: str) -> str:
    (path,) = NOTEBOOKS.glob(f"{name}*.ipynb")
    return "\n".join(c.source for c in nbformat.read(path, 4).cells if c.cell_type == "code")


# -- facts ------------------------------------------------------------------------------------------
def test_grace_is_not_a_late_drop_in_a_stream_stream_join():
    text = markdown("00")
    assert "accepted" not in text  # grace does not decide which records are "accepted"
    assert "does not drop a record for coming late" in text
    assert "before + after + grace" in text and "A-null" in text
    # the engine agrees: 01's F@62, 38 ms behind stream time 100 (window 10, grace 5), still joins
    arrivals = [("left", "A", 10), ("right", "a", 12), ("left", "C", 60), ("right", "b", 56), ("left", "D", 70)]
    arrivals += [("left", "E", 100), ("right", "d", 72), ("left", "F", 62), ("right", "g", 65)]
    records = [{"side": side, "key": "k", "value": value, "ts": ts} for side, value, ts in arrivals]
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 5}
    trace = kjoin.run(kjoin.Scenario.from_records("stream-stream", "left", records, window=window))
    late = trace.find(lambda s: s.record.value == "F")
    assert [o.render() for o in late.outputs] == ["F-b", "F-d"]


def test_01_says_the_outer_join_sweep_is_throttled_by_wall_clock():
    # StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX; read with a
    # default of 1000L in KStreamKStreamJoin.init; TopologyTestDriver puts 0L (apache/kafka, trunk)
    text = markdown("01")
    assert "`__emit.interval.ms.kstreams.outer.join.spurious.results.fix__`" in text
    assert "1000 ms by default" in text and "`TopologyTestDriver` sets the interval to 0" in text


def test_04_gives_both_defaults_of_the_commit_interval():
    # StreamsConfig: DEFAULT_COMMIT_INTERVAL_MS = 30000L, EOS_DEFAULT_COMMIT_INTERVAL_MS = 100L
    text = markdown("04")
    assert "30 seconds by default, 100 ms by default with `processing.guarantee` `exactly_once_v2`" in text


def test_07_says_an_aggregate_subtractor_returning_null_deletes_the_row_too():
    # KTableAggregate.process: with no new value, the subtractor's result is put, and a null put deletes
    text = markdown("07")
    assert "only a `reduce`" not in text
    assert "in a `reduce` or an `aggregate` alike" in text


def test_09_shows_fates_in_the_words_of_every_other_view():
    # steps_frame's raw fate says "joined" for a left join's order-2-null; the course's steps_table says
    # "emitted with null" (fate_label), as the stepper and the exercises do
    assert '"fate"]]' not in code("09")
    assert "`joined` because it emitted a result" not in markdown("09")
    from kjoin_viz.course import steps_table

    records = [
        {"side": "left", "key": "K2", "value": "order-2", "ts": 210},
        {"side": "right", "key": "K2", "value": "customer-2", "ts": 205},  # processed after the order
    ]
    trace = kjoin.run(kjoin.Scenario.from_records("stream-table", "left", records))
    table = steps_table(trace).frame
    order = table[table["value"] == "order-2"].iloc[0]
    assert order["outputs"] == "order-2-null@210" and order["fate"].startswith("emitted with null")
