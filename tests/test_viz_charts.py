"""Charts are pure functions of traces: their to_dict() holds the data and the encodings."""

from __future__ import annotations

import pytest

import kjoin
from kjoin_viz import drops_chart, era_diff_chart, outputs_chart, timeline_chart, variant_traces
from kjoin_viz.charts import MAX_ROWS

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
    assert last == {name: len(trace.outputs) for name, trace in traces.items()}
    assert last == {"inner": 16, "left": 18, "outer": 18}  # Kafka: F-null at G@100, not null-f yet
    assert cumulative["encoding"]["row"]["field"] == "variant"
    # a stream-stream join emits no tombstones: no empty tombstone series, and none in the legend
    assert cumulative["encoding"]["color"]["scale"]["domain"] == ["result"]
    assert {r["output"] for r in rows} == {"result"}
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
    assert rows[0] == {
        "step": 2,
        "ts": 3,
        "side": "left",
        "value": "A",
        "before": "A-null",
        "after": "(none)",
        "change": -1,
    }
    assert {
        "step": 17,
        "ts": 80,
        "side": "right",
        "value": "f",
        "before": "(none)",
        "after": "E-null",
        "change": 1,
    } in rows
    assert spec["encoding"]["y"]["field"] == "change" and spec["encoding"]["y"]["axis"]["tickMinStep"] == 1
    assert spec["title"] == "outputs under 3.1 minus under 0.10.2"


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
