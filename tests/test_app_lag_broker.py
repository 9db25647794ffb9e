"""``reconcile`` with a real app run on the broker with a lagging partition: the planted whole app (re-key, customers
table join, products GlobalKTable join, windowed count; 4 partitions) run by Kafka Streams with customers partition 1
reaching it late (:mod:`tests.app_broker`), and kjoin's run of the same live topics reconciled with what it
wrote. Nothing here skips: without Java, the harness (``make kafka-oracle``) or the broker (``make kafka-live``) it
fails."""

from __future__ import annotations

import pytest

from tests.app_broker import LAGGING, OUTPUT, REPARTITION, arrival, on_broker

pytestmark = pytest.mark.spark

ORDERS = 60
TOPIC, PARTITION = LAGGING


@pytest.fixture(scope="module")
def ran(spark, broker):
    return on_broker(spark, broker, ORDERS)


@pytest.fixture(scope="module")
def told_nothing(ran):
    run, actual, _ = ran
    return run.reconcile(actual, topic=OUTPUT)


def test_the_lags_explain_every_difference_and_name_the_lagging_partition(ran, told_nothing) -> None:
    run, actual, topics = ran
    differ = told_nothing.counts.get("unexplained", 0)
    assert differ > 0, "the lagging partition must change what the app wrote, or the test proves nothing"
    assert set(told_nothing.counts) == {"unexplained"}
    named = told_nothing.suggestion.rsplit("with TOPIC one of ", 1)[1]  # the topics whose lag to try are named
    assert TOPIC in named and REPARTITION in named, told_nothing.suggestion
    found = run.reconcile(actual, topic=OUTPUT, arrival=arrival(topics))
    assert found.explained and found.counts == {"arrival": differ}, str(found)
    assert f"{TOPIC} partition {PARTITION}" in found.suggestion and "explains every difference" in found.suggestion
    assert found.matched == told_nothing.matched and found.actual == found.predicted == ORDERS


def test_each_lag_alone_explains_its_part_and_names_the_larger_lags_to_try(ran, told_nothing) -> None:
    """The customers partition's lag (planted: the producer writes it late) explains the orders of its task that found
    no customer; the repartition topic's lag, the orders of the other tasks whose customer was created after them, when
    the app's tasks took them first (the app's own scheduling decides whether any did). Each lag alone explains its
    part, the parts add up to every difference, and a lag that leaves some unexplained names larger lags to try."""
    run, actual, topics = ran
    both = arrival(topics)
    total = told_nothing.counts["unexplained"]
    parts = {}
    for topic in (TOPIC, REPARTITION):
        alone = run.reconcile(actual, topic=OUTPUT, arrival={topic: both[topic]})
        parts[topic] = alone.counts.get("arrival", 0)
        assert parts[topic] + alone.counts.get("unexplained", 0) == total, str(alone)
        if parts[topic] < total:
            assert alone.lags_to_try and "Try larger lags next" in alone.suggestion, str(alone)
    assert parts[TOPIC] > 0, "the planted lagging partition explains none of the differences"
    assert parts[TOPIC] + parts[REPARTITION] == total, parts
