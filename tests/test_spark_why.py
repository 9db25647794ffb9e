"""One key's drill-down and the diagnosis of one record, against the reference engine's trace
of the whole task: random topics, every key, every record."""

from __future__ import annotations

import random

import pytest

from kjoin.fates import Fate
from kjoin.records import OutputKind, Side
from kjoin.spark import Topic, run_join, run_scenarios
from kjoin.spark.debug.key_trace import _restrict
from kjoin.spark.debug.why import VERDICTS, KeyTrace

pytestmark = pytest.mark.spark

WINDOW = {"before_ms": 5, "after_ms": 3, "grace_ms": 2}
JOINS = [
    ("stream-table", "left", None, None),
    ("table-table", "outer", None, None),
    ("stream-stream", "inner", WINDOW, None),
    # The outer-join buffer's sweep in each of its eras (3.1.0, 3.1.1 to 3.7, 3.8+): the drill-down replays it.
    ("stream-stream", "left", WINDOW, "3.1.0"),
    ("stream-stream", "outer", WINDOW, "3.5"),
    ("stream-stream", "outer", {"before_ms": 2, "after_ms": 6, "grace_ms": 1}, None),
]


def random_rows(rng: random.Random, partitions: int, count: int, keys: str, tombstones: float) -> list[tuple]:
    offsets = [0] * partitions
    rows = []
    for _ in range(count):
        partition = rng.randrange(partitions)
        key = None if rng.random() < 0.05 else rng.choice(keys)
        value = None if rng.random() < tombstones else f"v{rng.randrange(100)}"
        rows.append((key, value, rng.randrange(60), partition, offsets[partition]))
        offsets[partition] += 1
    return rows


def topic(spark, rows, partitions):
    return Topic(
        spark.createDataFrame(rows, "key string, value string, ts long, partition int, offset long"), partitions
    )


def key_view(trace, key, steps):
    """The key's steps of ``trace`` (indexes ``steps``): record, fate, reason; and the key's
    outputs in order."""
    mine = [s for s in steps if s.record.key == key]
    records = [
        (
            s.record.side.value,
            s.record.offset,
            s.record.ts,
            s.record.value,
            s.fate.value,
            None if s.reason is None else s.reason.value,
        )
        for s in mine
    ]
    outputs = [
        (o.key, o.left, o.right, o.value, o.ts, o.tombstone, o.kind.value)
        for s in steps
        for o in s.outputs
        if o.key == key
    ]
    return records, outputs


def comparable(stores):
    """Stores with a window store's arrival counter (a sequence number over all keys, internal to
    the store) replaced by the order it gives each (key, ts)."""
    out = {}
    for store, entries in stores.items():
        if store.name.endswith("window"):
            grouped = {}
            for (key, ts, seq), value in sorted(entries.items(), key=lambda item: item[0][2]):
                grouped.setdefault((key, ts), []).append(value)
            out[store] = grouped
        else:
            out[store] = entries
    return out


@pytest.mark.parametrize("join, variant, window, semantics", JOINS)
@pytest.mark.parametrize("seed", [1, 2])
def test_the_key_drill_down_equals_the_partitions_trace_restricted_to_the_key(
    spark, join, variant, window, semantics, seed
):
    rng = random.Random(seed * 31 + len(join) + len(variant))
    partitions = 2
    left = random_rows(rng, partitions, 40, "abcde", 0.1)
    right = random_rows(rng, partitions, 30, "abcdef", 0.2)
    result = run_join(
        topic(spark, left, partitions),
        topic(spark, right, partitions),
        join,
        variant,
        window=window,
        semantics=semantics,
    )
    checked = 0
    for partition in range(partitions):
        full = result.trace(partition=partition)
        keys = sorted({s.record.key for s in full.steps if s.record.key is not None})
        for key in keys:
            drill = result.trace(partition=partition, key=key)
            assert isinstance(drill, KeyTrace) and drill.exact
            assert key_view(drill, key, drill.steps) == key_view(full, key, full.steps), (partition, key)
            full_steps = [s.index for s in full.steps if s.record.key == key]
            own = drill.key_steps()
            assert [drill.task_steps[s.index] for s in own] == full_steps
            for s, index in zip(own, full_steps):
                assert comparable(drill.state_at(s.index).stores) == comparable(
                    _restrict(full.state_at(index).stores, key)
                ), (partition, key, index)
            checked += len(own)
    assert checked > 40


def test_find_locates_a_step_by_offset_or_predicate(spark):
    rows = [("a", "A", 5, 0, 0), ("b", "B", 6, 0, 1)]
    result = run_join(topic(spark, rows, 1), topic(spark, [("a", "x", 1, 0, 0)], 1), "stream-table", "left")
    trace = result.trace(partition=0)
    assert trace.find(offset=1, side="left").record.key == "b"
    assert trace.find(lambda s: s.fate is Fate.JOINED and s.outputs and s.outputs[0].right == "x").record.key == "a"
    assert trace.find(offset=9) is None
    drill = result.trace(partition=0, key="a")
    assert drill.find(offset=0, side="right").record.value == "x"


# -- why: planted causes, each checked against the whole task's reference trace ---------------------
def test_why_names_every_planted_cause_and_the_task_trace_agrees(spark):
    from kjoin.spark.debug.whycheck import CAUSES, planted

    partitions = 2
    orders, customers, causes = planted(2 * len(CAUSES), partitions)
    result = run_join(topic(spark, orders, partitions), topic(spark, customers, partitions), "stream-table", "left")
    traces = {p: result.trace(partition=p) for p in range(partitions)}
    seen = set()
    for (partition, offset), cause in sorted(causes.items()):
        diagnosis = result.why(partition=partition, offset=offset, side="left")
        assert diagnosis.verdict == cause, (partition, offset, diagnosis)
        assert diagnosis.verdict in VERDICTS and diagnosis.text
        seen.add(cause)
        full = traces[partition]
        step = full.find(offset=offset, side="left")
        if cause in ("null-key", "null-value"):
            continue
        assert diagnosis.step == step.index
        results = [o for o in step.outputs if o.kind is not OutputKind.NULL_KEY]
        if cause == "joined":
            assert results and results[0].right is not None
            continue
        assert results and results[0].right is None, "a null-partner result"
        key = step.record.key
        partners = [s for s in full.steps if s.record.side is Side.RIGHT and s.record.key == key]
        if cause == "partner-later":
            first = partners[0]
            assert first.index > step.index and first.record.ts > step.record.ts
            assert diagnosis.delay_ms == first.record.ts - step.record.ts == 30
            assert diagnosis.records_between == first.index - step.index - 1
            assert [(p.partition, p.offset, p.ts) for p in diagnosis.partners] == [
                (partition, first.record.offset, first.record.ts)
            ]
        elif cause == "partner-processed-later":
            first = partners[0]
            assert first.index > step.index and first.record.ts < step.record.ts
            assert diagnosis.records_between == first.index - step.index - 1
        elif cause == "partner-deleted":
            before = [s for s in partners if s.index < step.index]
            assert before and before[-1].record.value is None
            assert full.state_at(step.index).table("right") == [
                r for r in full.state_at(step.index).table("right") if r["key"] != key
            ]
        elif cause == "partner-never":
            assert not partners and not any(r[0] == key for r in customers)
        elif cause == "partner-other-partition":
            assert not partners
            assert [(p.partition, p.offset) for p in diagnosis.partners] == [
                (r[3], r[4]) for r in customers if r[0] == key
            ]
            assert all(p.partition != partition for p in diagnosis.partners)
    assert seen == set(CAUSES)


def test_why_in_a_stream_stream_join_gives_the_distance_outside_the_window(spark):
    left = [("a", "A", 100, 0, 0), ("b", "B", 100, 0, 1), ("c", "C", 100, 0, 2)]
    right = [("b", "y", 102, 0, 0), ("a", "x", 120, 0, 1), ("c", "z", 50, 0, 2)]
    result = run_join(
        topic(spark, left, 1),
        topic(spark, right, 1),
        "stream-stream",
        "left",
        window={"before_ms": 5, "after_ms": 5, "grace_ms": 0},
    )
    far = result.why(partition=0, offset=0)
    assert far.verdict == "partner-outside-window" and far.delay_ms == 15 and "15 ms outside" in far.text
    assert result.why(partition=0, offset=1).verdict == "joined"
    early = result.why(partition=0, offset=2)
    assert early.verdict == "partner-outside-window" and early.delay_ms == 45
    with pytest.raises(Exception, match=r"no left record at partition 0, offset 9"):
        result.why(partition=0, offset=9)


def test_every_result_has_a_reason_and_the_summary_counts_them_per_key(spark):
    from kjoin.spark.debug.whycheck import CAUSES, planted

    partitions = 2
    orders, customers, causes = planted(2 * len(CAUSES), partitions)
    result = run_join(topic(spark, orders, partitions), topic(spark, customers, partitions), "stream-table", "left")
    rows = result.explained_outputs.select("partition", "side", "offset", "reason", "right", "kind").collect()
    by_order = {(r["partition"], r["offset"]): r for r in rows if r["side"] == "left"}
    for (partition, offset), cause in causes.items():
        if cause == "null-value":
            assert (partition, offset) not in by_order, "a null-value order is dropped: no result"
            continue
        row = by_order[(partition, offset)]
        expected = {"joined": "matched", "null-key": "null-key"}.get(cause, cause)
        assert row["reason"] == expected, (partition, offset, cause, row)
    assert all(r["reason"] is not None for r in rows)
    summary = result.summary()
    columns = summary.columns
    assert columns[:6] == ["scenario", "partition", "key", "null-results", "matched", "tombstones"]
    assert "partner-later" in columns and "partner-outside-window" not in columns, "no window in a stream-table join"
    assert "left-window-open" not in columns and "left-null-value" in columns and "right-table-update" in columns
    assert "right-null-value" in columns and "left-table-update" not in columns, "a stream never updates a table"
    totals = summary.groupBy().sum(*columns[3:]).first()
    planted_counts = {cause: sum(1 for c in causes.values() if c == cause) for cause in CAUSES}
    assert totals["sum(matched)"] == planted_counts["joined"]
    for verdict in (
        "partner-later",
        "partner-processed-later",
        "partner-deleted",
        "partner-never",
        "partner-other-partition",
    ):
        assert totals[f"sum({verdict})"] == planted_counts[verdict], verdict
    assert totals["sum(left-null-value)"] == planted_counts["null-value"]
    assert totals["sum(null-key)"] == planted_counts["null-key"], "null-key orders are forwarded with null"
    inner = (
        run_join(topic(spark, orders, partitions), topic(spark, customers, partitions), "stream-table", "inner")
        .summary()
        .columns
    )
    assert "partner-later" not in inner and "left-no-partner" in inner and "joined-stale" in inner


def test_the_summary_explorer_sorts_and_opens_the_stepper_at_the_first_surprise(spark):
    from kjoin.spark.debug.whycheck import CAUSES, planted
    from kjoin_viz.summary_explorer import SummaryExplorer

    partitions = 2
    orders, customers, causes = planted(len(CAUSES), partitions)
    result = run_join(topic(spark, orders, partitions), topic(spark, customers, partitions), "stream-table", "left")
    explorer = SummaryExplorer(result)
    assert {"partner-later", "partner-never", "matched"} <= set(explorer.columns)
    rows = explorer.sort_by("partner-later")
    assert rows[0]["partner-later"] == 1 and all(r["partner-later"] == 0 for r in rows[1:])
    assert rows[0]["key"] == "K1"  # group 1 planted partner-later
    assert "K1" in explorer.table.value.split("</tr>")[1], "the table shows the sorted rows"
    explorer.picker.value = 0  # as a click in the list does
    stepper = explorer.stepper
    assert explorer.selected["key"] == "K1" and stepper is not None
    step = stepper.trace[stepper.step]
    assert step.record.key == "K1" and step.record.side is Side.LEFT
    assert step.outputs and step.outputs[0].right is None, "opens at the order's null-customer result"
    assert [r["key"] for r in explorer.sort_by("key", descending=False)][:2] == sorted(
        r["key"] for r in rows if r["key"] is not None
    )[:2]


def test_the_summary_explorer_opens_on_the_rows_that_matter_and_its_controls_follow_sort_by(spark):
    from kjoin.spark.debug.whycheck import CAUSES, planted
    from kjoin_viz.summary_explorer import NULL_RESULTS, SURPRISES, SummaryExplorer

    partitions = 2
    orders, customers, _ = planted(len(CAUSES), partitions)
    result = run_join(topic(spark, orders, partitions), topic(spark, customers, partitions), "stream-table", "left")
    summary = result.summary()
    explorer = SummaryExplorer(result, limit=summary.count())
    # the rows with a surprise first, and only those on show; the all-zero columns hidden
    shown = [explorer.rows[i] for i in explorer.visible()]
    assert shown and all(r[SURPRISES] > 0 for r in shown) and len(shown) < len(explorer.rows)
    # ranked by results with a null partner, then surprises; records waiting in a window are no surprise
    ranks = [(r[NULL_RESULTS], r[SURPRISES]) for r in explorer.rows]
    assert ranks == sorted(ranks, reverse=True) and ranks[0][0] > 0
    from kjoin_viz.summary_explorer import _routine

    assert _routine("left-window-open") and _routine("right-table-update") and _routine(NULL_RESULTS)
    assert not _routine("partner-later") and not _routine("left-null-key") and not _routine("misrouted")
    zero = [
        c
        for c in explorer.columns
        if c not in ("scenario", "partition", "key") and not any(r[c] for r in explorer.rows)
    ]
    assert zero and not set(zero) & set(explorer.shown_columns)
    assert explorer.table.value.count("<tr>") == len(shown) + 1
    assert len(explorer.picker.options) == len(shown)
    # the picker comes before the table: a learner sees it without scrolling past every row
    assert explorer.children.index(explorer.picker) < explorer.children.index(explorer.table)
    assert explorer.text().splitlines()[-1].startswith(f"({len(shown)} of {len(explorer.rows)} rows")
    # the controls follow sort_by, and a click in them sorts
    assert (explorer.sorter.value, explorer.order.value) == (NULL_RESULTS, True)
    explorer.sort_by("partner-later")
    assert explorer.sorter.value == "partner-later" and explorer.order.value is True
    explorer.sort_by("key", descending=False)
    assert (explorer.sorter.value, explorer.order.value) == ("key", False)
    explorer.order.value = True  # as a click on "descending" does
    keys = [r["key"] for r in explorer.rows if r["key"] is not None]  # a null key's row goes last
    assert explorer.descending and keys == sorted(keys, reverse=True)
    explorer.sorter.value = "partner-never"  # as a choice in "sort by" does
    assert explorer.sort_column == "partner-never" and explorer.rows[0]["partner-never"] >= 1
    explorer.only_surprising.value = False
    assert len(explorer.picker.options) == len(explorer.rows)


def test_the_drill_down_of_a_scenario_run_keeps_its_listed_order_and_json_keys(spark):
    from kjoin import Scenario
    from kjoin.spark import run_scenarios

    rng = random.Random(5)
    events = [
        {
            "side": rng.choice(["left", "right"]),
            "key": rng.choice(["a", 7, None]),
            "value": None if rng.random() < 0.15 else f"v{rng.randrange(9)}",
            "ts": rng.randrange(40),
            "partition": rng.randrange(2),
        }
        for _ in range(40)
    ]
    window = {"before_ms": 4, "after_ms": 4, "grace_ms": 1}
    scenario = Scenario.from_dict(
        {"join": "stream-stream", "variant": "inner", "partitions": 2, "window": window, "events": events}
    )
    result = run_scenarios(spark, [scenario])
    checked = 0
    for partition in range(2):
        full = result.trace(partition=partition)
        for key in sorted({s.record.key for s in full.steps if s.record.key is not None}, key=str):
            drill = result.trace(partition=partition, key=key)
            assert key_view(drill, key, drill.steps) == key_view(full, key, full.steps), (partition, key)
            assert [drill.task_steps[s.index] for s in drill.key_steps()] == [
                s.index for s in full.steps if s.record.key == key
            ]
            checked += 1
        first = next(s for s in full.steps if s.record.key is not None and s.record.value is not None)
        diagnosis = result.why(partition=partition, offset=first.record.offset, side=first.record.side.value)
        assert diagnosis.step == first.index and diagnosis.record.key == first.record.key
    assert checked >= 3


def test_a_drill_down_replays_the_sweep_that_other_keys_decide(spark):
    """Kafka 3.5: key b's left record @2 waits in the outer-join buffer; key a's right record @8
    sweeps it out (stream time 8 passed its close, 2 + 4 + 1). Key b's own clock records are b's
    records and a@14 (the right side's largest timestamp before b@16), not a@8: without the
    replayed sweep its drill-down emitted the result one step late, at a@14."""
    left = [("b", "v0", 2, 0, 0), ("b", "v4", 16, 0, 1)]
    right = [("b", "v1", 5, 0, 0), ("a", "v2", 8, 0, 1), ("a", "v3", 14, 0, 2)]
    swept = run_join(
        topic(spark, left, 1),
        topic(spark, right, 1),
        "stream-stream",
        "left",
        window={"before_ms": 4, "after_ms": 1, "grace_ms": 1},
        semantics="3.5",
    )
    full = swept.trace(0)
    assert [(s.index, o.left) for s in full.steps for o in s.outputs if o.key == "b"] == [(2, "v0")]
    drill = swept.trace(0, key="b")
    assert drill.exact and drill.caveat is None
    step = next(s for s in drill.steps if any(o.key == "b" for o in s.outputs))
    assert drill.task_steps[step.index] == 2 and step.record.offset == 1 and step.record.side is Side.RIGHT
    assert key_view(drill, "b", drill.steps) == key_view(full, "b", full.steps)
    from kjoin import Scenario

    chain = {
        "join": "stream-stream",
        "variant": "left",
        "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
        "then": [{"variant": "left"}],
        "events": [
            {"side": "left", "key": "a", "value": "A", "ts": 1},
            {"side": "right", "key": "a", "value": "a", "ts": 2},
        ],
    }
    chained = run_scenarios(spark, [Scenario.from_dict(chain)])
    drill = chained.trace(0, key="a")
    assert not drill.exact and "does not replay for chains and self-joins" in drill.caveat
    old = run_join(
        topic(spark, left, 1), topic(spark, right, 1), "stream-stream", "left", window=WINDOW, semantics="3.0"
    )
    assert old.trace(0, key="b").exact, "before 3.1 a left join emits its null results at once: nothing is swept"


def test_why_builds_its_index_once_where_asked(spark, tmp_path):
    from kjoin.spark.debug.whycheck import CAUSES, planted

    orders, customers, causes = planted(len(CAUSES), 2)
    result = run_join(topic(spark, orders, 2), topic(spark, customers, 2), "stream-table", "left")
    index = result.why_index(str(tmp_path / "index"))
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == ["by_key", "by_offset"], "no buffer: no releases"
    (partition, offset), cause = next((w, c) for w, c in sorted(causes.items()) if c == "partner-later")
    assert result.why(partition=partition, offset=offset).verdict == "partner-later"
    assert result.why_index() is index, "later calls reuse the index"
    assert set(index.final_marks) == {(0, 0), (0, 1)}, "eight marks per task at most, nothing per record"


def test_write_parquet_builds_the_index_that_every_why_then_reads(spark, tmp_path, capsys):
    from kjoin.spark.debug.whycheck import main

    assert main(["--records", "3000", "--samples", "9", "--path", str(tmp_path / "check"), "--write"]) == 0
    printed = capsys.readouterr().out
    assert "why_index=True adds" in printed and "first" in printed and "(reads the written index)" in printed
    assert "0 wrong" in printed and "every planted cause counted exactly" in printed
    assert sorted(p.name for p in (tmp_path / "check" / "run").iterdir()) == [
        "outputs",
        "run.json",
        "steps",
        "summary",
        "why-index",
    ]


def test_a_swept_join_keeps_its_releases_in_the_index(spark, tmp_path):
    left = [("b", "v0", 2, 0, 0), ("b", "v4", 16, 0, 1)]
    right = [("b", "v1", 5, 0, 0), ("a", "v2", 8, 0, 1), ("a", "v3", 14, 0, 2)]
    window = {"before_ms": 4, "after_ms": 1, "grace_ms": 1}
    swept = run_join(topic(spark, left, 1), topic(spark, right, 1), "stream-stream", "outer", window=window)
    swept.write_parquet(str(tmp_path / "run"), why_index=True)
    index = swept.why_index()
    assert index.path == str(tmp_path / "run" / "why-index"), "why reads the index write_parquet built"
    assert sorted(p.name for p in (tmp_path / "run" / "why-index").iterdir()) == ["by_key", "by_offset", "releases"]
    released = sorted((r["key"], r["origin_step"], r["step"]) for r in index.releases.collect())
    full = swept.trace(0)
    expected = sorted(
        (o.key, o.origin_step, s.index) for s in full.steps for o in s.outputs if o.kind is OutputKind.WINDOW_CLOSED
    )
    assert released == expected and released


def test_why_says_a_partner_with_the_same_timestamp_went_behind_on_a_tie(spark):
    """Partition 0: the task had just taken a right record, so on the tie at ts 5 it takes the left (the order) and
    its customer comes after it; partition 1: the tie is the task's first choice (kjoin: the left first). The Spark
    run (its merge, its index) and the reference engine's sentence agree."""
    from kjoin.ordering import TIE_AT_START

    left = [("c1", "o1", 5, 0, 0), ("c2", "o2", 5, 1, 0)]
    right = [("c9", "Bob", 1, 0, 0), ("c1", "Ann", 5, 0, 1), ("c2", "Cy", 5, 1, 0)]
    result = run_join(topic(spark, left, 2), topic(spark, right, 2), "stream-table", "left")
    just_taken = result.why(partition=0, offset=0)
    assert just_taken.verdict == "partner-later" and just_taken.delay_ms == 0
    assert "(offset 1, " in just_taken.text and "though its timestamp is the same" in just_taken.text
    assert "had just taken the right record at offset 0. So the partner was processed after this record." in (
        just_taken.text
    )
    at_start = result.why(partition=1, offset=0)
    assert at_start.verdict == "partner-later" and TIE_AT_START in at_start.text


def test_why_says_an_earlier_partner_waited_behind_a_record_that_tied(spark):
    """The right partition holds Bob (ts 1), Cy (ts 5, key c2), then the order's customer Ann (ts 4): after Bob the
    task ties o1 (ts 5) with Cy and takes o1 (it had just taken the right), so Ann, behind Cy, comes after the order.
    The Spark drill-down names the tie and the record Ann waited behind, in the reference engine's own sentence
    (kjoin.ordering.ties_taken_first), not the generic "a record with a higher timestamp held it back"."""
    import kjoin

    left = [("c1", "o1", 5, 0, 0)]
    right = [("c9", "Bob", 1, 0, 0), ("c2", "Cy", 5, 0, 1), ("c1", "Ann", 4, 0, 2)]
    result = run_join(topic(spark, left, 1), topic(spark, right, 1), "stream-table", "left")
    found = result.why(partition=0, offset=0)
    assert found.verdict == "partner-processed-later" and found.delay_ms == -1
    assert found.blocker is not None and (found.blocker.offset, found.blocker.ts) == (1, 5)
    assert "though its timestamp is 1 ms earlier" in found.text
    assert "held it back" not in found.text
    events = [
        {"side": side, "key": key, "value": value, "ts": ts}
        for side, rows in (("right", right[:1]), ("left", left), ("right", right[1:]))
        for key, value, ts, _, _ in rows
    ]
    reference = kjoin.run(kjoin.Scenario.from_dict({"join": "stream-table", "variant": "left", "events": events}))
    sentence = reference.steps[1].explain
    assert "(its next record: offset 1, key 'c2', ts 5)" in sentence
    assert "this record's partner (offset 2, ts 4) was behind it" in sentence
    assert sentence[sentence.index("The right partition's next record") :] in found.text
