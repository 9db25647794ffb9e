"""Charts are pure functions of traces: their to_dict() holds the data and the encodings."""

from __future__ import annotations

import pytest

import kjoin
from kjoin_viz import drops_chart, era_diff_chart, outputs_chart, timeline_chart, variant_traces
from kjoin_viz.charts import MAX_ROWS
from kjoin_viz.labels import TONE_COLOURS

from .test_viz_stepper import SEED_004


@pytest.fixture(scope="module")
def scenario():
    return kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004)


def _data(spec):
    (rows,) = spec["datasets"].values()
    return rows


def test_timeline_chart_has_a_point_per_record_by_side_and_fate(scenario):
    spec = timeline_chart(kjoin.run(scenario)).to_dict()
    rows = _data(spec)
    assert len(rows) == 19
    assert rows[2] == {
        "step": 2,
        "side": "left",
        "key": "k",
        "value": "A",
        "ts": 3,
        "fate": "buffered",
        "reason": "window-open",
        "null_value": False,
        "what": "held until stream time passes 23",
        "tone": "held",
    }
    assert spec["encoding"]["x"]["field"] == "ts" and spec["encoding"]["y"]["field"] == "side"
    assert spec["encoding"]["color"]["field"] == "tone" and spec["encoding"]["shape"]["field"] == "null_value"
    assert spec["encoding"]["color"]["scale"]["domain"] == ["joined", "held", "no-match", "dropped"]
    assert spec["encoding"]["x"]["axis"]["format"] == "d"


def test_outputs_chart_counts_results_per_variant_and_cumulates(scenario):
    traces = variant_traces(scenario)
    per_step = _data(outputs_chart(traces).to_dict())
    assert {"variant": "inner", "step": 9, "output": "result", "count": 3} in per_step
    cumulative = outputs_chart(traces, cumulative=True).to_dict()
    rows = _data(cumulative)
    last = {r["variant"]: r["count"] for r in rows if r["step"] == 18 and r["output"] == "result"}
    assert last == {"inner": 16, "left": 16, "outer": 16}  # every variant joins the same pairs
    with_null = {r["variant"]: r["count"] for r in rows if r["step"] == 18 and r["output"] == "result with null"}
    assert with_null == {"left": 2, "outer": 2}  # Kafka: E-null and F-null (at G@100), not G-null nor null-f yet
    assert cumulative["encoding"]["row"]["field"] == "variant"
    # a stream-stream join emits no tombstones: no empty tombstone series, and none in the legend
    assert cumulative["encoding"]["color"]["scale"]["domain"] == ["result", "result with null"]
    assert {r["output"] for r in rows} == {"result", "result with null"}
    # the colours of the other views: a result with null is not a tombstone
    assert cumulative["encoding"]["color"]["scale"]["range"] == [TONE_COLOURS["joined"], TONE_COLOURS["null-result"]]
    # whole steps and whole counts on the axes; three facets fit one screen
    for axis in ("x", "y"):
        assert cumulative["encoding"][axis]["axis"]["format"] == "d"
        assert cumulative["encoding"][axis]["axis"]["tickMinStep"] == 1
    assert 3 * (cumulative["spec"]["height"] if "spec" in cumulative else cumulative["height"]) <= 450


def test_outputs_chart_counts_tombstones_apart():
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "inner", left="1:A, 3:null", right="2:a"))
    rows = _data(outputs_chart({"inner": trace}).to_dict())
    assert [r["step"] for r in rows if r["output"] == "tombstone" and r["count"]] == [2]
    assert [r["step"] for r in rows if r["output"] == "result" and r["count"]] == [1]
    spec = outputs_chart({"inner": trace}).to_dict()
    assert spec["encoding"]["color"]["scale"]["domain"] == ["result", "tombstone"]


def test_outputs_chart_tells_results_with_null_from_results_and_tombstones():
    # a left table-table join: A-null (no partner yet), A-a, then the right side deleted: A-null again,
    # then the left side deleted: a tombstone
    trace = kjoin.run(kjoin.Scenario.from_notation("table-table", "left", left="1:A, 4:null", right="2:a, 3:null"))
    assert [o.render() for o in trace.outputs] == ["A-null", "A-a", "A-null", "null"]
    rows = [r for r in _data(outputs_chart({"left": trace}).to_dict()) if r["count"]]
    assert [(r["step"], r["output"]) for r in sorted(rows, key=lambda r: r["step"])] == [
        (0, "result with null"),
        (1, "result"),
        (2, "result with null"),
        (3, "tombstone"),
    ]


def test_drops_chart_counts_dropped_records_by_reason(scenario):
    spec = drops_chart(kjoin.run(scenario)).to_dict()
    assert _data(spec) == [{"reason": "null-value", "records": 7}]
    assert spec["encoding"]["x"]["axis"]["format"] == "d"
    assert spec["encoding"]["x"]["field"] == "records" and spec["encoding"]["y"]["field"] == "reason"


def test_era_diff_chart_shows_where_3_1_holds_back_early_results(scenario):
    old = kjoin.run(scenario.with_semantics("0.10.2"))
    new = kjoin.run(scenario)
    spec = era_diff_chart(old, new).to_dict()
    rows = _data(spec)
    drawn = [(r["step"], r["output"], r["count"]) for r in rows]
    assert drawn == [
        (2, "only under 0.10.2", -1),  # A-null: 3.1 holds A, which joins a@4 next
        (15, "only under 0.10.2", -1),  # E-null, F-null: emitted at once under 0.10.2 ...
        (16, "only under 0.10.2", -1),
        (17, "only under 3.1", 1),  # ... and once their windows close under 3.1
        (18, "only under 0.10.2", -1),  # G-null goes, F-null comes: a step whose output changes has both
        (18, "only under 3.1", 1),
    ]
    assert {k: rows[0][k] for k in ("ts", "side", "value", "before", "after")} == {
        "ts": 3,
        "side": "left",
        "value": "A",
        "before": "A-null",
        "after": "(none)",
    }
    assert spec["encoding"]["y"]["field"] == "count" and spec["encoding"]["y"]["axis"]["values"] == [-1, 0, 1]
    assert spec["title"] == "outputs that differ: 0.10.2 → 3.1"
    with pytest.raises(ValueError, match="same input records"):
        era_diff_chart(
            old,
            kjoin.run(
                kjoin.Scenario.from_notation(
                    "stream-stream", "left", left="1:A", right="2:a", window=SEED_004["window"]
                )
            ),
        )


def test_long_traces_are_aggregated_below_altairs_limit():
    from kjoin_viz.bench import long_scenario

    trace = kjoin.run(long_scenario(MAX_ROWS + 1000))
    timeline = timeline_chart(trace).to_dict()
    rows = _data(timeline)
    assert len(rows) <= MAX_ROWS and sum(r["records"] for r in rows) == len(trace.steps)
    outputs = _data(outputs_chart({"left": trace}).to_dict())
    assert len(outputs) <= MAX_ROWS
    assert sum(r["count"] for r in outputs) == len(trace.outputs)


def test_the_offline_renderer_stores_an_svg_and_a_png(scenario):
    """SVG for a trusted notebook (and nbval), PNG for one JupyterLab does not trust yet."""
    from kjoin_viz.charts import offline_renderer

    bundle, _ = offline_renderer(drops_chart(kjoin.run(scenario)).to_dict())
    assert bundle["image/svg+xml"].lstrip().startswith("<svg")
    assert bundle["image/png"][:8] == b"\x89PNG\r\n\x1a\n"


def test_drops_chart_leaves_out_records_that_are_not_lost():
    versioned = {"versioned": True, "history_retention_ms": 1000}
    events = [
        {"side": "left", "key": "k", "value": "a4", "ts": 4},
        {"side": "left", "key": "k", "value": "a1", "ts": 1},
        {"side": "left", "key": None, "value": "x", "ts": 5},
    ]
    trace = kjoin.run(
        kjoin.Scenario.from_dict(
            {"join": "table-table", "variant": "inner", "left": versioned, "right": versioned, "events": events}
        )
    )
    assert [s.reason.value for s in trace.steps if s.reason] == ["no-partner", "out-of-order-version", "null-key"]
    assert _data(drops_chart(trace).to_dict()) == [{"reason": "null-key", "records": 1}]
