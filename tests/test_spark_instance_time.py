"""KAFKA-14862 on Spark: the tasks of one instance sharing a left/outer stream-stream join's time tracker (3.1 to
3.4.0) make one task's results depend on another's records, so such a scenario runs whole (as a foreign-key one
does), in its listed order across tasks, and gives the reference engine's outputs; two topics carry no order
across tasks, so ``run_join`` refuses it."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.spark import Topic, run_join, run_scenarios
from kjoin.spark.io.topic import SparkInputError
from tests.test_diff import INSTANCE_TIME


def _outputs(frame) -> list[tuple]:
    return sorted((r["partition"], r["step"], r["key"], r["value"], r["ts"]) for r in frame.collect())


def test_a_scenario_whose_tasks_share_an_instance_gives_the_reference_outputs(spark) -> None:
    scenarios = [
        kjoin.Scenario.from_dict({**INSTANCE_TIME, "semantics": "3.4.0"}),  # shared: runs whole
        kjoin.Scenario.from_dict({**INSTANCE_TIME, "semantics": "3.5"}),  # a tracker per task
        kjoin.Scenario.from_dict({**INSTANCE_TIME, "semantics": "3.4.0", "one_instance": False}),  # each task alone
    ]
    assert [s.tasks_share_time for s in scenarios] == [True, False, False]
    result = run_scenarios(spark, scenarios)
    for number, scenario in enumerate(scenarios):
        reference = sorted(
            (o.partition, step.index, f'"{o.key}"', o.value, o.ts) for step in kjoin.run(scenario) for o in step.outputs
        )
        on_spark = _outputs(result.outputs.filter(f"scenario = {number}"))
        assert on_spark == reference
        # 3.4.0 in one instance: a@5 (step 2) is emitted with null at once, at the instance's stream time 1000
        assert (on_spark == [(0, 2, '"a"', "A2-null", 5)]) == (number == 0) and (on_spark == []) == (number > 0)
    trace = result.trace(0, scenario=0)  # the whole scenario's, as it ran
    assert [len(step.outputs) for step in trace] == [0, 0, 1]
    with pytest.raises(SparkInputError, match="share their instance's time tracker"):
        result.trace(0, key="a", scenario=0)


def test_run_join_refuses_tasks_that_share_an_instances_time_tracker(spark) -> None:
    schema = "key string, value string, ts long, partition int, offset long"
    left = Topic(spark.createDataFrame([("a", "A", 1, 0, 0), ("d", "D", 1000, 1, 0)], schema), 2)
    right = Topic(spark.createDataFrame([], schema), 2)
    window = INSTANCE_TIME["window"]
    with pytest.raises(SparkInputError, match="one_instance.*KAFKA-14862.*run_scenarios"):
        run_join(left, right, "stream-stream", "left", semantics="3.4", window=window, options={"one_instance": True})
    run_join(left, right, "stream-stream", "left", semantics="3.5", window=window, options={"one_instance": True})


def test_run_topology_refuses_a_join_whose_tasks_share_an_instances_time_tracker(spark) -> None:
    """Spark's stages run each task alone: a topology whose left join shares its tracker between two tasks of one
    instance (3.3) is refused, naming the join; on two instances, or on 3.5, it runs and gives the reference
    engine's outputs (tests/test_topology_instance_time.py)."""
    from kjoin.spark import run_topology
    from kjoin.topology import Topology
    from kjoin.topology.document import TopologyScenario
    from tests.test_topology_instance_time import EVENTS, WINDOW
    from tests.topology_spark_check import spark_topics

    def app(semantics: str) -> Topology:
        b = Topology(partitions=2, semantics=semantics)
        b.stream("left").left_join(b.stream("right"), window=WINDOW).to("out")
        return b

    topics = spark_topics(spark, TopologyScenario(app("3.3"), tuple(EVENTS), "stages"), with_partitions=False)
    with pytest.raises(SparkInputError, match=r"KAFKA-14862.*instances=<partitions>"):
        run_topology(spark, app("3.3"), topics)
    for semantics, instances in (("3.3", 2), ("3.5", 1)):
        found = run_topology(spark, app(semantics), topics, instances=instances).outputs.collect()
        assert [(r["key"], r["value"], r["ts"]) for r in found] == [("a", "A-null", 1)]
