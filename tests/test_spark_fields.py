"""Every scenario field is known to the Spark engine, and a field it does not handle is refused, never ignored.

A scenario field a pass does not read would make Spark emit what the reference engine would not: each pass declares
the spec fields it runs (``Plan.fields``), the spec refuses a scenario field Spark does not know at all
(``kjoin.spark.spec.SCENARIO_FIELDS``), and every ``method=`` of :func:`kjoin.spark.run_scenarios` says so with kjoin's
error. The source stage (``kjoin.engine.source``) is the one both engines send records through.
"""

from __future__ import annotations

import dataclasses

import pytest

from kjoin import Scenario, run
from kjoin.scenario import ScenarioError
from kjoin.spark.io.topic import SparkInputError
from kjoin.spark.passes.plans import METHODS, PLANS, Inputs, choose
from kjoin.spark.spec import SCENARIO_FIELDS, JoinSpec, refuse_unknown_fields


@dataclasses.dataclass(frozen=True)
class _ExtractedScenario(Scenario):
    """A scenario with one more field, as a new feature would add it: a timestamp extractor."""

    timestamp_extractor: str | None = None


@dataclasses.dataclass(frozen=True)
class _ExtractedSpec(JoinSpec):
    """A spec with the same field, as a feature that reached the spec but not every pass would add it."""

    timestamp_extractor: str | None = None


def _scenario(cls: type = Scenario, **extra):
    return cls(
        join="stream-table",
        variant="left",
        events=Scenario.from_dict(
            {
                "join": "stream-table",
                "variant": "left",
                "events": [
                    {"side": "right", "key": "k", "value": "a", "ts": 1},
                    {"side": "left", "key": "k", "value": "A", "ts": 2},
                ],
            }
        ).events,
        **extra,
    )


def test_every_scenario_field_is_named_in_sparks_table():
    unknown = [f.name for f in dataclasses.fields(Scenario) if f.name not in SCENARIO_FIELDS]
    assert not unknown, (
        f"scenario fields kjoin.spark.spec.SCENARIO_FIELDS does not name (say where Spark reads them): {unknown}"
    )
    assert set(SCENARIO_FIELDS) == {f.name for f in dataclasses.fields(Scenario)}, (
        "SCENARIO_FIELDS names a field the scenario lost"
    )


def test_the_spec_is_the_scenario_fields_of_its_names():
    assert {f.name for f in dataclasses.fields(JoinSpec)} <= {f.name for f in dataclasses.fields(Scenario)}


def test_a_scenario_field_spark_does_not_know_is_refused_unless_at_its_default():
    refuse_unknown_fields(_scenario(_ExtractedScenario))  # at its default it changes nothing
    extracted = _scenario(_ExtractedScenario, timestamp_extractor="value.ts")
    with pytest.raises(ScenarioError, match="timestamp_extractor: the Spark engine does not handle"):
        JoinSpec.of(extracted)


@pytest.mark.parametrize("method", METHODS)
def test_a_spec_field_no_pass_declares_is_refused_by_every_method(method):
    base = JoinSpec.of(_scenario())
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    spec = _ExtractedSpec(**values, timestamp_extractor="value.ts")
    inputs = Inputs("string", "string", json_keys=True, json_values=True)
    with pytest.raises(SparkInputError, match="sets timestamp_extractor, which the .* pass does not handle"):
        choose({0: spec}, inputs, method)
    chosen = choose({0: base}, inputs, method)  # the same join without the field runs
    assert method == "auto" or chosen.method == method


def test_every_plan_declares_the_fields_it_runs():
    every = {f.name for f in dataclasses.fields(JoinSpec) if f.default is not dataclasses.MISSING}
    for plan in PLANS:
        assert plan.fields <= every, f"{plan.name} declares fields the spec does not have: {plan.fields - every}"
    assert next(plan for plan in PLANS if plan.name == "processors").fields == every


@pytest.mark.spark
@pytest.mark.parametrize("method", METHODS)
def test_run_scenarios_refuses_a_scenario_field_it_does_not_know_with_every_method(spark, method):
    from kjoin.spark import run_scenarios

    extracted = _scenario(_ExtractedScenario, timestamp_extractor="value.ts")
    with pytest.raises(ScenarioError, match="timestamp_extractor"):
        run_scenarios(spark, [extracted], method=method)


@pytest.mark.spark
def test_the_processors_pass_keeps_keys_apart_by_their_bytes_as_the_reference_engine_does(spark):
    from kjoin.spark import run_scenarios

    scenario = Scenario.from_dict(
        {
            "join": "stream-table",
            "variant": "left",
            "events": [
                {"side": "right", "key": 1, "value": "a", "ts": 1},
                {"side": "left", "key": 1.0, "value": "A", "ts": 2},
                {"side": "left", "key": 1, "value": "B", "ts": 3},
            ],
        }
    )
    expected = [(o.value, o.ts) for step in run(scenario).steps for o in step.outputs]
    assert expected == [("A-null", 2), ("B-a", 3)]
    rows = run_scenarios(spark, [scenario], method="processors").results.where("row = 'output'").orderBy("step")
    assert [(row["value"], row["ts"]) for row in rows.collect()] == expected
