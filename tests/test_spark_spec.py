"""The join specification the Spark passes take (kjoin.spark.spec) and the plans that choose a pass
(kjoin.spark.passes.plans): no Spark session needed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from kjoin import Scenario
from kjoin.scenario import ScenarioError, TableOptions
from kjoin.spark.passes.plans import PLANS, Inputs, odd_keys
from kjoin.spark.spec import JoinSpec, Variant, join_scenario


@pytest.mark.parametrize(
    "variant, left, right",
    [("inner", False, False), ("left", True, False), ("outer", True, True)],
)
def test_a_variant_says_which_side_comes_out_without_a_partner(variant, left, right):
    assert Variant(variant).outer("left") is left
    assert Variant(variant).outer("right") is right
    assert Variant(variant) == variant and f"{Variant(variant)}" == variant  # reads as the scenario's text


def test_a_spec_is_the_scenario_without_its_events_and_builds_the_engine_scenario_back():
    scenario = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "inner",
            "semantics": "3.6",
            "partitions": 2,
            "left": {"versioned": True, "history_retention_ms": 100},
            "right": {"versioned": True, "history_retention_ms": 50},
            "versioned_mode": "attempt2",
            "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
        }
    )
    spec = JoinSpec.of(scenario)
    assert spec.variant is Variant.INNER and spec.versioned and spec.plain
    assert spec.left == TableOptions(versioned=True, history_retention_ms=100)
    assert JoinSpec.of(spec) is spec
    assert spec.scenario() == dataclasses.replace(scenario, events=())
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.variant = Variant.INNER  # type: ignore[misc]


def test_a_join_is_versioned_when_one_of_its_tables_is():
    table = {"versioned": True, "history_retention_ms": 10}
    stream_table = Scenario.from_dict({"join": "stream-table", "variant": "left", "events": [], "right": table})
    assert JoinSpec.of(stream_table).versioned
    assert JoinSpec.of(stream_table.with_variant("inner")).plain
    plain = Scenario.from_dict({"join": "table-table", "variant": "left", "events": [], "materialized": True})
    assert not JoinSpec.of(plain).versioned and not JoinSpec.of(plain).plain


def test_run_join_arguments_are_one_document_and_an_error_only_options_cause_says_options():
    scenario = join_scenario(
        "stream-table", "left", None, None, 4, {"grace_ms": 5, "right": {"versioned": True, "history_retention_ms": 9}}
    )
    assert scenario.partitions == 4 and scenario.grace_ms == 5 and scenario.right.versioned
    with pytest.raises(ScenarioError, match=r"^options: .*versioned_mode"):
        join_scenario("table-table", "left", None, None, 1, {"versioned_mode": "sometimes"})
    with pytest.raises(ScenarioError) as error:  # the arguments' own error: no prefix
        join_scenario("stream-table", "outer", None, None, 1, {"grace_ms": 5})
    assert not str(error.value).startswith("options:") and "variant" in str(error.value)


def test_keys_spark_compares_differently_refuse_only_json_keys():
    scenario = Scenario.from_dict(
        {"join": "stream-table", "variant": "inner", "events": [{"side": "left", "key": True, "value": "A", "ts": 1}]}
    )
    found = odd_keys({3: scenario})
    assert found == {3: "events[0].key is True"}
    assert Inputs("string", "string", json_keys=True, json_values=True, odd_keys=found).key_refusal(3, "the join") == (
        "the join, events[0].key is True: a boolean or float key may equal a key of another type in Python but not "
        "in Spark"
    )
    assert Inputs("string", "string", json_keys=False, json_values=False, odd_keys=found).key_refusal(3, "x") is None


def test_the_plans_are_tried_fastest_first_and_one_vectorised_plan_serves_each_set_of_joins():
    assert [(plan.name, plan.method) for plan in PLANS] == [
        ("vectorised_stream", "vectorised"),
        ("vectorised_versioned", "vectorised"),
        ("vectorised", "vectorised"),
        ("native", "native"),
        ("processors", "processors"),
    ]

    def spec(join, **tables):
        return JoinSpec.of(Scenario.from_dict({"join": join, "variant": "inner", "events": [], **tables}))

    window = {"window": {"before_ms": 5, "after_ms": 5}}
    versioned = {"versioned": True, "history_retention_ms": 10}
    cases = [
        {0: JoinSpec.of(Scenario.from_dict({"join": "stream-stream", "variant": "inner", "events": [], **window}))},
        {0: spec("table-table", left=versioned)},
        {0: spec("stream-table")},
        {0: spec("stream-table"), 1: spec("table-table", left=versioned)},
        {},
    ]
    for specs in cases:
        serving = [plan.name for plan in PLANS if plan.method == "vectorised" and plan.serves(specs)]
        assert len(serving) == 1, (specs, serving)


def test_importing_kjoin_does_not_import_pyspark():
    code = "import sys, kjoin, kjoin.scenario, kjoin.engine; print('pyspark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_sessions_look_for_the_kafka_connector_where_make_kafka_live_writes_it():
    """``kjoin/spark/io/session.py`` finds the repository three levels up: the file ``make kafka-live``
    (:func:`kafka_oracle.kafka_broker.build`) writes."""
    from kjoin.spark.io.session import KAFKA_CONNECTOR_FILE
    from kafka_oracle.kafka_broker import CLASSPATH_FILE, CONNECTOR

    assert KAFKA_CONNECTOR_FILE == CONNECTOR / CLASSPATH_FILE
