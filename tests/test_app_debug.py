"""A whole app debugs like a single join: every planted cause is named at the node where it happened, the summary
counts the explained outputs, the audit finds every misrouted record, and each step names its drops."""

from __future__ import annotations

from collections import Counter

import pytest

from kjoin.topology.verdicts import (
    AppExplainer,
    audit,
    audit_records,
    debugging_step,
    explained_outputs,
    passes_on,
    summary,
)
from tests.app_planted import CAUSES, VERDICT_OF, app, check_debug, planted

ORDERS = 1_000


@pytest.fixture(scope="module")
def run():
    topics = planted(ORDERS)
    trace = app().run(topics.events, "stages")
    explainer = AppExplainer(trace)
    return topics, trace, explainer, explained_outputs(trace, explainer)


def _planted_rows(run):
    topics, trace, _, rows = run
    for row in rows:
        event = trace.topics[row["input_topic"]][row["input_partition"]][row["input_offset"]]
        yield topics.causes.get(event.key), row


def test_every_null_or_missing_result_names_its_planted_cause_at_its_node(run) -> None:
    topics = run[0]
    seen = Counter()
    for cause, row in _planted_rows(run):
        if cause is None:
            assert row["verdict"] == "joined", row  # an order with nothing planted joins everywhere
            continue
        if row["verdict"] == "joined":  # the cause touches one topic only: the count of a misrouted customer's order
            assert cause == "late-in-window" and row["topic"] == "enriched-orders", row
            continue
        assert (row["node"], row["verdict"]) == VERDICT_OF[cause], (cause, row)
        seen[cause] += 1
    assert set(seen) == set(CAUSES) and len(topics.causes) == ORDERS // 10


def test_the_summary_counts_the_explained_outputs(run) -> None:
    rows = run[3]
    counted = summary(rows)
    assert sum(r["count"] for r in counted) == len(rows)
    for entry in counted:
        assert entry["count"] == sum(
            1
            for row in rows
            if (row["topic"], row["verdict"], row["node"]) == (entry["topic"], entry["verdict"], entry["node"])
            and (row["offset"] is None) == (entry["result"] == "none")
        )


def test_the_audit_finds_every_misrouted_record_and_no_other(run) -> None:
    topics, trace = run[0], run[1]
    found = audit(trace)
    assert {(r["topic"], r["partition"], r["offset"]) for r in found} == topics.misrouted
    assert all(r["joins"] == "customers-join" for r in found)


def test_the_audit_read_from_the_input_records_alone_is_the_runs(run) -> None:
    trace = run[1]
    shuffled = sorted(trace.events, key=lambda r: (-r.offset, r.topic))  # the order records come in does not count
    assert audit_records(app().build(), shuffled) == audit(trace)


def test_a_step_names_the_drop_inside_a_node_whose_step_joined(run) -> None:
    topics, trace = run[0], run[1]
    late = {key for key, cause in topics.causes.items() if cause == "late-in-window"}
    dropped = [s for s in trace.steps if s.record.topic == "customers-join-repartition" and s.drops]
    named = {trace.events[trace.event_of(s.index)].key: s for s in dropped}
    assert late <= set(named)
    for key in late:
        step = named[key]
        assert step.fate.value == "joined" and step.dropped == "per-hour: expired-window"
        assert step.to_dict()["dropped"] == "per-hour: expired-window"
    frame = trace.steps_frame()
    assert (frame["dropped"] == "per-hour: expired-window").sum() == len(late)


def test_why_of_an_output_follows_the_repartition_topic_back_to_its_input_record(run) -> None:
    topics, trace, explainer, _ = run
    key = next(key for key, cause in topics.causes.items() if cause == "misrouted-creation")
    event = next(i for i, e in enumerate(trace.events) if e.key == key)
    output = explainer.explain_event(event).outputs[0]
    verdict = explainer.find(output.topic, output.partition, output.offset)
    assert verdict.event.key == key and verdict.cause is not None
    assert verdict.cause.verdict == "partner-other-partition"
    assert verdict.cause.record.topic == "customers-join-repartition"  # the join read the repartition record
    (misrouted,) = verdict.cause.behind
    assert (misrouted.topic, misrouted.partition, misrouted.offset) in topics.misrouted


def test_the_whole_app_debug_gets_every_planted_cause_summary_and_audit_right(run) -> None:
    from kjoin.spark.debug.topology_why import AppDebug

    topics, trace = run[0], run[1]
    assert check_debug(topics, AppDebug(trace)) == []


def test_before_kip_962_a_null_key_order_is_named_at_the_repartition_sink_that_kept_it_out() -> None:
    topics = planted(100)
    trace = app(semantics="3.6").run(topics.events, "stages")
    explainer = AppExplainer(trace)
    null_keys = {key for key, cause in topics.causes.items() if cause == "null-key"}
    rows = [r for r in explained_outputs(trace, explainer) if trace.topics["orders"][r["input_partition"]][
        r["input_offset"]].key in null_keys]  # fmt: skip
    assert rows and all(r["offset"] is None for r in rows)  # nothing in either output topic
    assert {(r["verdict"], r["node"]) for r in rows} == {
        ("null-key-not-repartitioned", "customers-join-repartition-sink")
    }


def test_every_verdict_is_the_single_joins_or_a_topologys_own(run) -> None:
    from kjoin.spark.debug.why import VERDICTS
    from kjoin.topology.verdicts import TOPOLOGY_VERDICTS

    named = {row["verdict"] for row in run[3]}
    assert named <= set(VERDICTS) | set(TOPOLOGY_VERDICTS), named - set(VERDICTS) - set(TOPOLOGY_VERDICTS)


def test_a_debugging_run_keeps_no_state_yet_explains_as_a_full_trace_does() -> None:
    from kjoin.spark.debug.topology_why import AppDebug, numbered_events
    from kjoin.topology.events import input_records
    from kjoin.topology.runtime import run_records

    topology = app().build()
    records = numbered_events(topology, input_records(topology.graph, planted(300).events))
    full = run_records(topology, records, "stages")
    lean = AppDebug.of_records(topology, records)
    whole = AppExplainer(full)
    assert lean.rows() == explained_outputs(full, whole)
    for event in range(len(full.events)):  # every input record's story, and every output's
        assert lean.explainer.explain_event(event).lines() == whole.explain_event(event).lines()
    assert [lean.explainer.explain_output(r).lines() for r in lean.trace.outputs()] == [
        whole.explain_output(r).lines() for r in full.outputs()
    ]
    assert lean.drops().to_dict("records") == AppDebug(full).drops().to_dict("records")
    kept = sum(len(step.visits) for step in lean.trace.steps)
    assert kept < sum(len(step.visits) for step in full.steps) * 0.6  # the visits that only passed a record on: gone
    assert all(not visit.forwarded for s in lean.trace.steps for visit in s.visits)
    assert all(isinstance(visit.text, str) if not passes_on(s, visit) else visit.wrote for s in lean.trace.steps
               for visit in s.visits)  # fmt: skip
    assert full.state_at(0) is not None
    with pytest.raises(ValueError, match=r"history=True"):
        lean.trace.state_at(0)


def test_a_step_s_words_are_what_was_true_at_the_step() -> None:
    """A rolled window store's words name the stream time it had at the step, whether written then or at the end."""
    from kjoin.spark.debug.topology_why import numbered_events
    from kjoin.topology.events import input_records
    from kjoin.topology.runtime import run_records

    topology = app().build()
    records = numbered_events(topology, input_records(topology.graph, planted(300).events))
    late = run_records(topology, records, "stages", history=False)  # every word written at the end
    now = run_records(topology, records, "stages", history=False, keep=debugging_step)  # written at each step
    rolled = [
        (step.index, visit.explain)
        for step in late.steps
        for visit in step.visits
        if visit.op == "aggregate" and "rolled" in visit.explain
    ]
    assert rolled
    kept = {(step.index, visit.node): visit.explain for step in now.steps for visit in step.visits}
    assert all(kept[(index, "per-hour")] == text for index, text in rolled)


def test_the_why_index_written_group_by_group_holds_every_record_once_in_order(run, tmp_path, monkeypatch) -> None:
    import pyarrow.parquet as pq

    from kjoin.spark.debug import topology_index
    from kjoin.spark.debug.topology_why import AppDebug

    trace = run[1]
    monkeypatch.setattr(topology_index, "ROW_GROUP", 500)
    debug = AppDebug(trace)
    topology_index.write_topology_run(debug, str(tmp_path))
    written = pq.ParquetFile(tmp_path / "why.parquet")
    table = written.read()
    places = list(zip(*(table.column(name).to_pylist() for name in ("topic", "partition", "offset"))))
    expected = [(r.topic, r.partition, r.offset) for r in trace.events] + [
        (r.topic, r.partition, r.offset) for r in trace.outputs()
    ]
    assert places == sorted(expected)
    assert written.metadata.num_row_groups == -(-len(expected) // 500)
    opened = topology_index.open_topology_run(str(tmp_path))
    for topic, partition, offset in places[::997]:
        assert opened.why(topic, partition, offset) == table.column("lines")[places.index(
            (topic, partition, offset))].as_py().split("\n")  # fmt: skip
