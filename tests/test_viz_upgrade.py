"""Before you upgrade: the rules chart counts kjoin.diff's differences, and the widget steps through
each rule's examples with both runs side by side (notebook 10)."""

from __future__ import annotations

import collections
import re

import pytest

import kjoin
from kjoin_viz.shop import orders_and_customers, orders_and_payments
from kjoin_viz.upgrade import UpgradeDiff, rule_text, rules_chart, rules_frame, setting_change, upgrade_path

from .test_viz_stepper import SEED_004


@pytest.fixture(scope="module")
def seed_004():
    return kjoin.Scenario.from_notation("stream-stream", "left", **SEED_004)


@pytest.fixture(scope="module")
def payments_path():
    return upgrade_path(orders_and_payments(), ["2.8", "3.3", "3.9", "4.4"])


def test_the_path_is_kjoin_diff_of_each_pair_of_versions(seed_004):
    hops = upgrade_path(seed_004, ["2.8", "3.0", "3.1"])
    assert [hop.name for hop in hops] == ["2.8 → 3.0", "3.0 → 3.1"]
    assert len(hops[0].diff) == 0  # nothing changes a stream-stream join from 2.8 to 3.0
    spurious = hops[1].diff
    assert [d.identity for d in spurious] == [d.identity for d in kjoin.diff(seed_004, from_="3.0", to="3.1")]
    assert len(spurious) and all(d.rules == ("spurious_result_fix",) for d in spurious)  # seed 004
    # the traces are the runs compared: a difference's steps index them
    before, after = hops[1].traces
    for d in spurious:
        assert before.steps[d.from_step].record == d.input == after.steps[d.step].record
    with pytest.raises(ValueError, match="two versions"):
        upgrade_path(seed_004, ["3.1"])


def test_rules_frame_counts_every_difference_under_its_rules_and_keeps_rules_that_change_nothing(payments_path):
    frame = rules_frame(payments_path)
    for hop in payments_path:
        rows = frame[frame["hop"] == hop.name]
        assert list(dict.fromkeys(rows["rule"])) == list(hop.diff.switches)  # every rule that differs, in order
        for rule, found in hop.diff.by_rule().items():
            mine = rows[rows["rule"] == rule]
            if not found:
                assert mine[["change", "count"]].values.tolist() == [["none", 0]]
                continue
            expected = collections.Counter(d.change for d in found)
            assert dict(zip(mine["change"], mine["count"])) == dict(expected)
    # these topics meet the spurious-result fix, KIP-962 and the 3.8 sweep, and no foreign-key rule
    changed = set(frame[frame["count"] > 0]["rule"])
    assert changed == {"spurious_result_fix", "relaxed_null_keys", "outer_join_sweep_per_side"}
    # the chart writes each rule's total at the end of its bar, and says so where it is 0
    spec = rules_chart(payments_path).to_dict()
    (totals,) = [rows for rows in spec["datasets"].values() if rows and "label" in rows[0]]
    per_rule = {(hop.name, rule): len(found) for hop in payments_path for rule, found in hop.diff.by_rule().items()}
    assert [row["label"] for row in totals] == [str(n) if n else "0: nothing changes here" for n in per_rule.values()]


def test_the_widget_steps_through_a_rules_examples_before_and_after(payments_path):
    widget = UpgradeDiff(payments_path)
    # only rules with differences can be picked, each with its count
    labels = [label for label, _ in widget.picker.options]
    assert labels == [
        f"{hop.name}: {rule} ({len(found)})"
        for hop in payments_path
        for rule, found in hop.diff.by_rule().items()
        if found
    ]
    assert widget.rule == "spurious_result_fix" and widget.index == 0
    first = widget.examples[0]
    assert first.change == "removed" and first.before["value"] == "order-0-null"
    assert "example 1 of 147" in widget.counter.value
    page = widget.example.value
    assert "order-0-null@12611" in page and "emitted eagerly with null" in page
    assert "held until stream time passes 102611" in page  # 3.3 holds order-0 in the outer-join buffer
    assert "KAFKA-10847" in page  # what the rule is
    widget.buttons["next"].click()
    assert widget.index == 1 and "example 2 of 147" in widget.counter.value
    widget.buttons["previous"].click()
    widget.buttons["previous"].click()
    assert widget.index == len(widget.examples) - 1  # it wraps round
    widget.picker.value = labels.index(next(label for label in labels if "relaxed_null_keys" in label))
    assert widget.index == 0 and widget.rule == "relaxed_null_keys"
    text = widget.text()
    assert "(key null); output added" in text and "dropped: null key" in text
    assert repr(widget) == "UpgradeDiff(3.3 → 3.9: relaxed_null_keys; example 1 of 4)"
    with pytest.raises(ValueError, match="outer_join_sweep_per_side"):
        UpgradeDiff(payments_path, rule="fk_change_only_unsubscribes")  # names the rules that do change outputs


def test_a_foreign_key_records_outputs_include_its_deliveries():
    hops = upgrade_path(orders_and_customers(), ["3.9", "4.4"])
    widget = UpgradeDiff(hops, rule="fk_change_only_unsubscribes")
    text = widget.text()
    emitted = re.findall(r"everything it emitted: (.*)", text)
    # the duplicate result under 3.9 is gone under 4.4; the results come with the responses, not the input step
    assert len(emitted) == 2 and emitted[0].count("-null@") == emitted[1].count("-null@") + 1


def test_a_configuration_change_is_a_hop_of_its_own():
    scenario = orders_and_payments(orders=30).with_semantics("4.4")
    hop = setting_change(scenario, {"window.grace_ms": 0})
    assert hop.name == "4.4 as it is → 4.4, window.grace_ms=0"
    assert [d.identity for d in hop.diff] == [d.identity for d in kjoin.diff(scenario, set={"window.grace_ms": 0})]
    assert hop.traces[1].scenario.window.grace_ms == 0 and hop.traces[0].scenario.window.grace_ms == 30_000
    assert set(hop.counts()) == {"window.grace_ms"}


def test_rule_text_is_the_rules_first_sentence():
    assert rule_text("relaxed_null_keys").startswith("KIP-962 (3.7): a null-key record")
    assert rule_text("fk_change_only_unsubscribes").endswith("only unsubscribes from the old one.")
    assert rule_text("window.grace_ms") == "the setting window.grace_ms"


def test_the_shop_topics_are_the_same_every_run_and_every_order_is_there():
    assert orders_and_payments().to_dict() == orders_and_payments().to_dict()
    events = orders_and_payments().to_dict()["events"]
    orders = [e["value"] for e in events if e["side"] == "left"]
    assert sorted(orders, key=lambda v: int(v.split("-")[1])) == [f"order-{i}" for i in range(120)]
    assert sum(e["key"] is None for e in events) == 4
    customers = orders_and_customers().to_dict()["events"]
    assert len(customers) == 66 and customers[:6] == [
        {"side": "right", "key": f"C{i}", "value": name, "ts": 1000 * (i + 1)}
        for i, name in enumerate(["Alice", "Bob", "Chen", "Dara", "Eve", "Femi"])
    ]
