"""Reconcile with the application: ``result.reconcile(actual)`` matches every output a real Kafka Streams
application wrote with kjoin's prediction and classifies what differs. Judged by a running ``KafkaStreams`` instance
on the project's KRaft broker (``kafka_oracle/broker_check.py``'s harness), whose customers' partition 1 lags
(``max.task.idle.ms = 0``, its records produced once the application has processed what came before): kjoin, told
nothing of the lag, predicts joins where the application wrote null customers; the smallest lag that explains those
nulls, found on kjoin's side, explains every one of those differences, and the one order kjoin was never given is put
down to records it never saw. Without Java, the harness or the broker's jars the broker test fails, never skips."""

from __future__ import annotations

from collections import Counter

import pytest

import kjoin
from kjoin.scenario import Arrival
from kjoin.spark import from_files, run_join
from kjoin.spark.debug.whycheck import key_in

from kjoin.spark.debug.whycheck import write_topic

pytestmark = pytest.mark.spark

PARTITIONS = 2


def app_scenario():
    """Customers written before their orders in both partitions; one order (key ``zz``) is the last of its
    partition."""
    c = {(p, name): key_in(f"c{p}{name}", p, PARTITIONS) for p in range(PARTITIONS) for name in "abc"}
    z = key_in("zz", 1, PARTITIONS)
    events = [
        ("right", c[0, "a"], "Ann", 1000, 0),
        ("right", c[0, "b"], "Bob", 2000, 0),
        ("left", c[0, "a"], "o0a", 1500, 0),
        ("left", c[0, "b"], "o0b", 3000, 0),
        ("left", None, "onull", 3500, 0),  # a null key: forwarded with null (KIP-962), matched with its null key
        ("right", c[1, "a"], "Cat", 1000, 1),
        ("right", c[1, "b"], "Dan", 2000, 1),
        ("right", c[1, "c"], "Eve", 2500, 1),
        ("left", c[1, "a"], "o1a", 1500, 1),
        ("left", c[1, "b"], "o1b", 3000, 1),
        ("left", c[1, "c"], "o1c", 9000, 1),
        ("left", z, "o1z", 9500, 1),
    ]
    document = {
        "join": "stream-table",
        "variant": "left",
        "partitions": PARTITIONS,
        "events": [{"side": s, "key": k, "value": v, "ts": ts, "partition": p} for s, k, v, ts, p in events],
    }
    return kjoin.Scenario.from_dict(document), z


def kjoin_topics(spark, scenario, where, leave_out=()):
    """The scenario's topics as files, without the records of key ``leave_out``."""
    rows = {"left": [], "right": []}
    for r in scenario.records():
        if r.key != leave_out:
            rows[r.side.value].append((r.key, r.value, r.ts, r.partition, r.offset))
    return [from_files(spark, write_topic(where / f"{side}.parquet", rows[side])) for side in ("left", "right")]


def test_reconcile_puts_every_difference_down_to_its_cause(spark, tmp_path):
    """Without a broker: the application's outputs made by kjoin itself under a lag, plus one of a key kjoin never
    saw and one it cannot explain."""
    scenario, z = app_scenario()
    left, right = kjoin_topics(spark, scenario, tmp_path, leave_out=z)
    result = run_join(left, right, "stream-table", "left")
    lag = {"right": {"partitions": {1: 1001}}}
    real = [(r["key"], r["value"], r["ts"]) for r in result.with_arrival(lag).outputs.collect()]
    real += [(z, "o1z-null", 9500), ("nobody-knows", None, 1)]
    actual = spark.createDataFrame(
        real[:-1] + [(result.outputs.first()["key"], "forged", 42)], "key string, value string, ts long"
    )
    found = result.reconcile(actual, arrival=lag)
    assert found.counts == {"arrival": 4, "unseen-records": 1, "unexplained": 1}, str(found)
    assert found.actual == 8 and found.predicted == 6 and found.matched == 4
    text = str(found)
    assert not found.explained and text.startswith("kjoin predicted 4 of the 8 outputs the app wrote (kjoin wrote 6)")
    assert "  4 explained by the arrival given (a lagging partition)" in text and "(arrival)." in text
    assert {e["value"] for e in found.examples["arrival"]} >= {"o1a-null", "o1a-Cat"}
    plain = result.reconcile(actual)
    assert plain.counts == {"unseen-records": 1, "unexplained": 5}, "without the what-if the lag is unexplained"


@pytest.fixture(scope="module")
def oracle(broker):
    from kafka_oracle.broker_check import BROKER_JUDGES, BrokerOracle
    from kafka_oracle.oracle_check import build

    build()
    with BrokerOracle(BROKER_JUDGES[0], broker) as running:
        yield running


def test_reconcile_explains_a_real_application_with_a_lagging_partition(oracle, spark, tmp_path):
    from kafka_oracle.broker_check import arrival_phases, judge

    scenario, z = app_scenario()
    lagging = Arrival(0, 0, (), ((1, 5000),))  # the customers' partition 1 reaches the application 5 s late
    assert not arrival_phases(scenario, lagging)[1], "no two sides arrive at one moment: no race"
    verdict = judge(oracle, scenario, arrival=lagging)
    assert not verdict.order_differs and not verdict.outputs_differ, verdict.describe()  # kjoin's model, per partition
    written = [(key, value, ts, source) for task in verdict.kafka_outputs.values() for source, key, value, ts in task]
    assert {v for _, v, _, _ in written} >= {"o1a-null", "o1b-null", "o1c-Eve", "o0a-Ann", "o1z-null", "onull-null"}

    left, right = kjoin_topics(spark, scenario, tmp_path, leave_out=z)  # kjoin's snapshot missed the last order
    result = run_join(left, right, "stream-table", "left")
    actual = spark.createDataFrame([w[:3] for w in written], "key string, value string, ts long")
    before = result.reconcile(actual)
    assert before.counts.get("unexplained") == 4 and before.counts.get("unseen-records") == 1, str(before)

    nulls = [
        tuple(map(int, s.split(":")[1:])) for _, v, _, s in written if v.endswith("-null") and not v.startswith("o1z")
    ]
    search = result.smallest_lag(nulls, side="right", partition=1)
    assert search.lag_ms == 1001, str(search)  # o1b (3000) after Dan (2000): more than 1000 ms
    after = result.reconcile(actual, arrival=search.arrival)
    assert after.explained, str(after)
    assert after.counts == {"arrival": 4, "unseen-records": 1}, str(after)
    assert after.matched + after.counts["arrival"] // 2 + 1 == after.actual


# -- configuration and version --------------------------------------------------------------------------------------
def _written(document) -> list[tuple]:
    """What an application running ``document`` writes, by the reference engine: ``(key, value, ts)``."""
    trace = kjoin.run(kjoin.Scenario.from_dict(document))
    return [(o.key, None if o.tombstone else o.value, o.ts) for o in trace.outputs]


def upgrade_scenario():
    """Orders left-joined with customers (2 partitions), each partition with an order written after a later one (it
    finds the older customer only in a versioned table) and partition 0 with a null-key order (joined with null since
    KIP-962, 3.7; dropped by 3.6)."""
    a, b = key_in("ca", 0, PARTITIONS), key_in("cb", 1, PARTITIONS)
    events = [("right", a, "A1", 1000, 0), ("right", a, "A2", 3000, 0), ("left", a, "oa4", 4000, 0)]
    events += [("left", a, "oa2", 2000, 0), ("left", None, "onull", 2500, 0)]
    events += [("right", b, "B1", 1000, 1), ("right", b, "B2", 3000, 1), ("left", b, "ob4", 4000, 1)]
    events += [("left", b, "ob2", 2000, 1)]
    return {
        "join": "stream-table",
        "variant": "left",
        "partitions": PARTITIONS,
        "events": [{"side": s, "key": k, "value": v, "ts": ts, "partition": p} for s, k, v, ts, p in events],
    }


def test_reconcile_charges_a_version_and_a_configuration_to_their_own_causes(spark, tmp_path):
    """kjoin joins as 3.7 over a versioned customers table keeping 500 ms of history; the application ran 3.6 and kept
    10 s (its outputs by the reference engine). Each difference goes to the cause that makes it, as kjoin diff's
    attribution charges it: the null-key order's result to the version (KIP-962), the late orders' customers (too
    old for 500 ms of history, found with 10 s) to the retention."""
    document = upgrade_scenario()
    app = {**document, "semantics": "3.6", "right": {"versioned": True, "history_retention_ms": 10_000}}
    actual = spark.createDataFrame(
        _written({**app, "arrival": {"left": {"lag_ms": 0}}}), "key string, value string, ts long"
    )
    left, right = kjoin_topics(spark, kjoin.Scenario.from_dict(document), tmp_path)
    short = {"right": {"versioned": True, "history_retention_ms": 500}}
    result = run_join(left, right, "stream-table", "left", semantics="3.7", options=short)

    plain = result.reconcile(actual)
    assert plain.counts == {"unexplained": 5}, str(plain)
    found = result.reconcile(actual, semantics="3.6", options={"right": {"history_retention_ms": 10_000}})
    assert found.explained and found.counts == {"version": 1, "configuration": 4}, str(found)
    assert found.switches == {"relaxed_null_keys": 1, "right.history_retention_ms": 4}, found.switches
    assert found.actual == 4 and found.predicted == 5 and found.matched == 2
    (dropped,) = found.examples["version"]
    assert (dropped["key"], dropped["value"], dropped["actual"], dropped["predicted"]) == (None, "onull-null", 0, 1)
    assert dropped["switches"] == ["relaxed_null_keys"]
    older = {(e["value"], e["actual"], e["predicted"]) for e in found.examples["configuration"]}
    assert ("oa2-A1", 1, 0) in older and ("oa2-null", 0, 1) in older, older
    version = next(line for line in str(found).splitlines() if "(version)" in line)
    assert version.startswith("  1 explained by the Kafka version given") and "charged to relaxed_null_keys." in version
    rows = found.differences.collect()
    assert sorted(r["category"] for r in rows) == ["configuration"] * 4 + ["version"]


def late_records(after: list[dict]) -> list[dict]:
    """Planted records appended to ``after``'s topics (keys ``p…``, timestamps from 1000 on, so they join nothing of
    ``after``), each partition with a record of each kind of difference between 3.3 with a grace of 12 ms and 3.4
    (KAFKA-12960: a window store's fetch hides records older than its retention, before + after + grace) without:

    * partition 0, ``pa``: an order ``La`` 35 ms behind the payments' stream time, its payment 5 ms from it in the
      window. 3.3 finds the payment while its 60 s segment lives, 3.4 hides it even with the grace (35 > 10 + 10 +
      12): the version alone writes ``La-null`` instead of ``La-Pa``;
    * partition 1, ``pb``: the same 25 ms behind: 3.4 hides the payment only without the grace (20 < 25 < 32), 3.3
      finds it either way: the version and the grace together write ``Lb-null`` instead of ``Lb-Pb``;
    * partition 0, ``pc``: an order without payment held in 3.3's outer-join buffer (KAFKA-10847) until ``ts + 10 +
      grace``; its payment arrives 5 ms late, after a sweep at 1515 closed it without grace but not with one: the
      grace alone writes ``Lc-null`` as well as ``Lc-Pc``."""
    events = [
        ("right", "pa", "Pa", 1000, 0), ("right", "px", "Px", 1045, 0), ("left", "px", "Lx", 1046, 0),
        ("left", "pa", "La", 1005, 0),
        ("right", "pb", "Pb", 1300, 1), ("right", "py", "Py", 1325, 1), ("left", "py", "Ly", 1326, 1),
        ("left", "pb", "Lb", 1308, 1),
        ("left", "pc", "Lc", 1500, 0), ("left", "pz", "Lz", 1515, 0), ("right", "pz", "Pz", 1516, 0),
        ("right", "pc", "Pc", 1505, 0),
    ]  # fmt: skip
    offsets: Counter = Counter((r["side"], r["partition"]) for r in after)
    planted = []
    for side, key, value, ts, partition in events:
        planted.append(
            {"side": side, "key": key, "value": value, "ts": ts, "partition": partition,
             "offset": offsets[side, partition]}
        )  # fmt: skip
        offsets[side, partition] += 1
    assert max(r["ts"] for r in after) < 1000
    return after + planted


def test_reconcile_classifies_exactly_as_the_reference_engines_diff(spark):
    """A stream-stream left join run as 3.3 with a grace of 12 ms; the application ran 3.4 (KAFKA-12960) with no
    grace. Every ``(key, value, ts)`` written a different number of times is classified by the switches the reference
    engine's ``kjoin diff`` charges its differences to: the rule alone (``version``), the grace alone
    (``configuration``) or both (``configuration+version``); reconcile on Spark must count them as it does. Seeded
    records, and planted ones (:func:`late_records`) that make each kind change what the application writes."""
    from kjoin.diff import diff
    from kjoin.scenario.builders import records_document

    from .test_spark_diff_settings import MERGED, records, topic

    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 12}
    rows = late_records(records("stream-stream", seed=0))
    base = {**records_document("stream-stream", "left", rows, "3.3", window, PARTITIONS), **MERGED}
    app = {**base, "semantics": "3.4", "window": {**window, "grace_ms": 0}}
    delta: Counter = Counter()
    charged: dict[tuple, set] = {}
    for d in diff(base, from_="3.3", to="3.4", set={"window.grace_ms": 0}):
        for output, sign in ((d.before, -1), (d.after, 1)):
            if output is not None:
                at = (output["key"], None if output["tombstone"] else output["value"], output["ts"])
                delta[at] += sign
                charged.setdefault(at, set()).update(d.rules)
    expected: Counter = Counter()
    for at, count in delta.items():
        rules = charged[at]
        only = "configuration" if rules == {"window.grace_ms"} else "configuration+version"
        expected["version" if "window.grace_ms" not in rules else only] += abs(count)
    written, predicted = Counter(_written(app)), Counter(_written(base))
    assert sum(expected.values()) == sum(((written - predicted) + (predicted - written)).values())
    assert expected["version"] and expected["configuration"] and expected["configuration+version"], expected
    changed = (written - predicted) + (predicted - written)
    assert {("pa", "La-null", 1005), ("pb", "Lb-null", 1308), ("pc", "Lc-null", 1500)} <= set(changed), changed

    result = run_join(
        topic(spark, rows, "left"), topic(spark, rows, "right"), "stream-stream", "left",
        semantics="3.3", window=window,
    )  # fmt: skip
    actual = spark.createDataFrame([tuple(w) for w in written.elements()], "key string, value string, ts long")
    found = result.reconcile(actual, semantics="3.4", options={"window": {"grace_ms": 0}})
    assert found.explained, str(found)
    assert found.counts == dict(+expected), str(found)
    assert found.switches.keys() == {"window_store_hides_expired", "window.grace_ms"}, found.switches
    assert found.predicted == sum(predicted.values()) and found.actual == sum(written.values())
