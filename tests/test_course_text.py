"""What the course's text says: facts a learner takes away (checked against Kafka's source where the
test says so, and against the engine), and the path through the course.

The notebooks' outputs are checked by nbval; this file reads their markdown."""

from __future__ import annotations

import re
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


# -- the path through the course ---------------------------------------------------------------------
COURSE = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
TUTORIALS = (NOTEBOOKS.parent / "docs" / "tutorials.md").read_text()
"""The site's Tutorials page, which gives the route beside the notebooks."""


def _route(text: str) -> list[tuple[str, str, int]]:
    """The route table's rows: (part, notebook or "", minutes)."""
    rows = re.findall(r"^\| (half day|take-home) \| [0-9:]* \| (.*?) \| (\d+) \|", text, flags=re.M)
    return [(part, re.sub(r"\[?`([^`]+)`\]?(\([^)]*\))?", r"\1", cell), int(minutes)) for part, cell, minutes in rows]


def test_a_half_day_route_with_timings_in_00_and_on_the_tutorials_page():
    route = _route(markdown("00"))
    assert route == _route(TUTORIALS), "00_start_here and docs/tutorials.md give different routes"
    assert [name for _, name, _ in route if name] == COURSE  # every notebook, in order
    half_day = sum(minutes for part, _, minutes in route if part == "half day")
    assert 200 <= half_day <= 225  # about 3.5 hours
    assert {name for part, name, _ in route if part == "take-home"} == set(COURSE[5:])
    # the route's clock adds up
    starts = re.findall(r"^\| half day \| (\d+):(\d\d) \|", markdown("00"), flags=re.M)
    minutes = [m for part, _, m in route if part == "half day"]
    assert [int(h) * 60 + int(m) for h, m in starts] == [sum(minutes[:i]) for i in range(len(minutes))]


def test_every_notebook_ends_with_where_next_linking_the_next_one():
    for i, name in enumerate(COURSE):
        (path,) = NOTEBOOKS.glob(f"{name}.ipynb")
        last = nbformat.read(path, 4).cells[-1]
        assert last.cell_type == "markdown" and last.source.startswith("## Where next"), name
        links = re.findall(r"\]\(([^)]+\.ipynb)\)", last.source)
        assert links and all((NOTEBOOKS / link).exists() for link in links), (name, links)
        assert "cheat_sheet.ipynb" in links
        if i + 1 < len(COURSE):
            assert f"{COURSE[i + 1]}.ipynb" in links, name
    # 00 lists the whole course, not only the first notebooks
    assert all(f"{name}.ipynb" in markdown("00").split("## Where next")[-1] for name in COURSE[1:])


def test_00_tells_how_to_run_it_in_jupyterlab_and_in_the_workshop():
    text = markdown("00")
    assert "Run → Run All Cells" in text and "`make workshop`" in text and "already run when the page opens" in text


def test_the_cheat_sheet_has_the_notation_the_fates_the_timestamp_rules_and_the_eras():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))[0] == "00_start_here.ipynb"  # make lab opens 00
    text = markdown("cheat_sheet")
    for section in ("## Notation", "## What a record does", "## Output timestamps", "## The eras"):
        assert section in text
    from kjoin_viz.labels import TONES

    for kind in ("joined", "tombstone", "held", "stored", "no match", "dropped"):
        assert f"| {kind} |" in text
    assert len(TONES) == 7 and "| result with null |" in text
    for era in ("0.10.0, 0.10.1", "0.10.2 to 3.0", "3.1 and newer"):
        assert era in text


def test_the_join_notebooks_chart_their_variants_results_and_tombstones():
    # kjoin_viz.outputs_chart: results, results with null and tombstones per variant (its counts:
    # tests/test_viz_charts.py); where eras differ, kjoin_viz.era_diff_chart too
    assert "kjoin_viz.outputs_chart(traces)" in code("01")  # inner, left, outer of one input
    assert "kjoin_viz.outputs_chart(left_eras)" in code("02")  # the left join under 0.10.2 and 3.1
    assert "kjoin_viz.era_diff_chart(left_eras[" in code("02")
    assert 'kjoin_viz.outputs_chart({"inner": inner, "left": left})' in code("03")
    assert "kjoin_viz.outputs_chart(new)" in code("04")  # the table-table join's, with its tombstones
    assert 'kjoin_viz.era_diff_chart(old_and_new["inner 0.10.0"]' in code("04")  # KIP-77's tombstones
    assert '"left 3.7.0": kjoin.run(' in code("05") and "kjoin_viz.outputs_chart(" in code("05")
    assert "kjoin_viz.outputs_chart(growth, cumulative=True)" in code("06")  # versioned designs
    for name in ("01", "02", "03", "04", "05"):
        # each chart is read next to a sentence that says what its colours are
        assert "results with null" in markdown(name), name


def test_10_says_what_its_widget_counts():
    # the numbers 10's text reads off the chart are kjoin.diff's on the same generated topics
    import collections

    from kjoin_viz.shop import orders_and_customers, orders_and_payments
    from kjoin_viz.upgrade import setting_change, upgrade_path

    text = " ".join(markdown("10").split())
    path = ["2.8", "3.3", "3.9", "4.4"]
    counts = {}
    for scenario in (orders_and_payments(), orders_and_customers()):
        for hop in upgrade_path(scenario, path):
            for rule, found in hop.diff.by_rule().items():
                counts[rule] = counts.get(rule, collections.Counter()) + collections.Counter(d.change for d in found)
    spurious, sweep = counts["spurious_result_fix"], counts["outer_join_sweep_per_side"]
    assert f"{spurious['removed']} outputs disappear" in text and f"Those {spurious['added']} are the outputs" in text
    assert f"({sweep['removed']} and {sweep['added']})" in text
    payments_null_keys = len(upgrade_path(orders_and_payments(), ["3.3", "3.9"])[0].diff.by_rule()["relaxed_null_keys"])
    assert f"the {payments_null_keys} orders without a key" in text
    customers = upgrade_path(orders_and_customers(), ["3.3", "3.9", "4.4"])
    assert f"({len(customers[0].diff.by_rule()['relaxed_null_keys'])} results appear)" in text
    assert f"{len(customers[1].diff.by_rule()['fk_change_only_unsubscribes'])} of those duplicates" in text
    no_grace = setting_change(orders_and_payments().with_semantics("4.4"), {"window.grace_ms": 0})
    moved = collections.Counter(d.change for d in no_grace.diff)
    assert f"({moved['removed']} and {moved['added']})" in text and set(moved) == {"added", "removed"}
    assert f"the same {len(no_grace.traces[0].outputs)} outputs" in text
    assert sorted(o.render() for o in no_grace.traces[0].outputs) == sorted(
        o.render() for o in no_grace.traces[1].outputs
    )


def test_11_bridges_to_the_learners_own_join():
    source = code("11")
    for piece in (
        "kjoin.load_scenario(path)",
        "export_junit(",
        '"arrival": {"right": {"lag_ms": 3000}}',
        "outputs_chart(",
    ):
        assert piece in source
    text = markdown("11")
    assert "kjoin export your_join.yaml --junit" in text and "max.task.idle.ms" in text


# -- values as values ---------------------------------------------------------------------------------
JSON_OBJECT = re.compile(r'\{\s*"[^"]*"\s*:|\{&quot;[^&]*&quot;:')
"""A JSON object written out as text (``{"customer":"C2"}``, or HTML-escaped): what a view shows as a value instead
(``{customer: C2}``, :mod:`kjoin_viz.values`)."""


def _stored_texts(path: Path):
    """Every text a notebook's stored outputs show a learner: printed text, text and HTML reprs, and the SVGs
    (charts, step views' timelines and message flights) with their hover titles."""
    import base64

    for index, cell in enumerate(nbformat.read(path, 4).cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            for text in (output.get("text", ""), data.get("text/plain", ""), data.get("image/svg+xml", "")):
                yield index, text
            page = data.get("text/html", "")
            yield index, page
            for encoded in re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", page):
                yield index, base64.b64decode(encoded).decode()


def test_no_notebook_shows_a_json_object_as_text():
    """Values shown as values everywhere a learner reads, explanations and ``why`` included (a
    foreign-key result read ``{"customer":"C9"}-null`` in 05's printed explanation, 07's table showed its orders as
    JSON, 12's ``why`` and its graph's titles the records)."""
    assert JSON_OBJECT.search('joiner called: {"customer":"C9"}-null') and JSON_OBJECT.search("{&quot;n&quot;:3}")
    assert not JSON_OBJECT.search("joiner called: {customer: C9}-null")
    found = [
        f"{path.stem} cell {index}: …{text[max(0, m.start() - 60) : m.end() + 30]}…"
        for path in sorted(NOTEBOOKS.glob("*.ipynb"))
        for index, text in _stored_texts(path)
        for m in [JSON_OBJECT.search(text)]
        if m
    ]
    assert not found, "JSON shown as text:\n" + "\n".join(found)


def test_every_where_next_gives_the_minutes_of_00s_route():
    minutes = {name: m for _, name, m in _route(markdown("00")) if name}
    for name in COURSE:
        (path,) = NOTEBOOKS.glob(f"{name}.ipynb")
        where_next = nbformat.read(path, 4).cells[-1].source
        for linked, said in re.findall(r"\[`([0-9]{2}_[a-z_]+)`\]\([^)]+\) \((\d+) min", where_next):
            assert int(said) == minutes[linked], (name, linked, said, minutes[linked])
    # the end of the half-day route lists everything left for home
    home = nbformat.read(next(NOTEBOOKS.glob("04_*.ipynb")), 4).cells[-1].source
    assert all(f"{name}.ipynb" in home for name in COURSE[5:])


def test_the_half_day_route_marks_the_sections_it_leaves_for_home():
    text = markdown("00")
    assert "they assume you skip the few sections marked *take-home*" in text
    marked = {name: markdown(name).count("*Take-home on the half-day route:*") for name in ("00", "01", "03", "04")}
    assert marked == {"00": 1, "01": 1, "03": 1, "04": 2}
    assert "*Take-home on the half-day route:* skip to section 7" in markdown("03").split("## 6. GlobalKTable")[1]


def test_00_and_02_agree_on_a_streams_null_value_in_each_era():
    # kjoin/semantics.py: kip77 (0.10.2) drops null values; before, they trigger lookups (seed 002's old tables)
    assert "its null value is not a delete" in markdown("00") and "Since Kafka 0.10.2 (KIP-77)" in markdown("00")
    assert "It is not a delete: a stream's null value is an event without a value" in markdown("02")
    from kjoin_viz import fate_label

    practice = kjoin.Scenario.from_notation(
        "stream-stream", "inner", left="2:P, 20:Q, 25:null", right="4:p, 23:q",
        window={"before_ms": 5, "after_ms": 5, "grace_ms": 2}, semantics="0.10.0",
    )  # fmt: skip
    step = kjoin.run(practice).steps[4]  # 02's exercise 4: null@25 finds q@23
    assert [o.render() for o in step.outputs] == ["null-q"] and fate_label(step).tone == "joined"
    assert fate_label(kjoin.run(practice.with_semantics("0.10.2")).steps[4]).tone == "dropped"
