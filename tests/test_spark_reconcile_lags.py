"""Reconcile's lag suggestions: when the lag given explains some differences and leaves others, it names larger lags
to try, and one of them explains every difference. The application's output here is kjoin's own run with the lag
planted (``arrival=``), not a broker's: the broker judges the lag model itself in ``tests/test_spark_reconcile.py``."""

from __future__ import annotations

import pytest

from kjoin.spark import Topic, run_join

pytestmark = pytest.mark.spark

TRUE_LAG = {"right": {"partitions": {0: 4000}}}
SMALL_LAG = {"right": {"partitions": {0: 1000}}}


def _topics(spark):
    schema = "key string, value string, ts long, partition int, offset long"
    right = [("c1", "Ann", 1000, 0, 0), ("c2", "Bob", 5000, 0, 1), ("c9", "Zed", 20000, 0, 2)]
    left = [("c1", "o1", 1500, 0, 0), ("c2", "o2", 8000, 0, 1), ("c9", "o9", 30000, 0, 2)]
    return (
        Topic(spark.createDataFrame(left, schema), 1, source="orders"),
        Topic(spark.createDataFrame(right, schema), 1, source="customers"),
    )


def test_a_lag_that_explains_part_of_the_differences_names_larger_lags_one_of_which_explains_all(spark):
    left, right = _topics(spark)
    app = run_join(left, right, "stream-table", "left", arrival=TRUE_LAG)  # the app whose customers lagged 4 s
    actual = app.outputs.selectExpr("key", "CASE WHEN tombstone THEN NULL ELSE value END AS value", "ts")
    result = run_join(left, right, "stream-table", "left")
    partly = result.reconcile(actual, arrival=SMALL_LAG)
    assert partly.counts.get("arrival") and partly.counts.get("unexplained"), str(partly)
    assert [lag["right"]["partitions"][0] for lag in partly.lags_to_try] == [2000, 4000, 8000]
    text = str(partly)
    assert "Try larger lags next" in text and "right partition 0" in text
    explained = [result.reconcile(actual, arrival=lag).explained for lag in partly.lags_to_try]
    assert explained == [False, True, True]
    assert not result.reconcile(actual, arrival=TRUE_LAG).lags_to_try  # nothing left to explain: no suggestion
