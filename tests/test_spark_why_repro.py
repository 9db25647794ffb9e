"""Out to a reproduction: ``why(...).scenario()`` gives a record's drill-down as a kjoin scenario. For every
planted cause of both joins of the planted application (:func:`kjoin.spark.debug.whycheck.planted_app`), the
scenario run through the reference engine gives the record the results Spark gave it, run on Spark again it gives
the same verdict, and ``kjoin run`` and ``kjoin export --junit`` take its YAML."""

from __future__ import annotations

import pytest
import yaml

from kjoin import run
from kjoin.cli import main
from kjoin.scenario import load_scenario
from kjoin.spark import from_files, run_join, run_scenarios
from kjoin.spark.debug.repro import STAND_IN
from kjoin.spark.debug.whycheck import APP_CAUSES, APP_WINDOW_MS, planted_app

from kjoin.spark.debug.whycheck import write_topic

pytestmark = pytest.mark.spark

PARTITIONS = 4
WINDOW = {"before_ms": APP_WINDOW_MS, "after_ms": APP_WINDOW_MS, "grace_ms": 0}


@pytest.fixture(scope="module", params=["stream-table", "stream-stream"])
def diagnosed(request, spark, tmp_path_factory):
    """Per planted cause, its first order's diagnosis and the results Spark gave the order."""
    join = request.param
    planted = planted_app(len(APP_CAUSES[join]), PARTITIONS, join)
    where = tmp_path_factory.mktemp(join)
    left = from_files(spark, write_topic(where / "orders.parquet", planted["left"]))
    right = from_files(spark, write_topic(where / "customers.parquet", planted["right"]))
    result = run_join(left, right, join, "left", window=WINDOW if join == "stream-stream" else None)
    outputs = result.outputs.collect()
    orders = {(r[3], r[4]): r for r in planted["left"]}
    found = []
    for (partition, offset), cause in sorted(planted["causes"].items()):
        value = orders[(partition, offset)][1]
        spark_results = sorted((o["left"], o["right"], o["kind"]) for o in outputs if value and o["left"] == value)
        found.append((cause, result.why(partition=partition, offset=offset), spark_results))
    return join, found


def own_results(trace, diagnosis):
    """The results carrying the diagnosed record's value in the reproduction's trace."""
    value = diagnosis.record.value
    outputs = [o for s in trace.steps for o in s.outputs]
    return sorted((o.left, o.right, o.kind.value) for o in outputs if value is not None and o.left == value)


def test_the_reproduction_gives_the_record_the_results_spark_gave_it(diagnosed):
    join, found = diagnosed
    for cause, diagnosis, spark_results in found:
        scenario = diagnosis.scenario()
        assert scenario.arrival is None and scenario.join == join and scenario.partitions == PARTITIONS
        r = diagnosis.record
        assert (r.side.value, r.partition, r.offset) in {(e.side.value, e.partition, e.offset) for e in scenario.events}
        assert own_results(run(scenario), diagnosis) == spark_results, (cause, diagnosis.verdict)
        if diagnosis.cause is not None:  # the record a co-partitioning or null-key verdict names is in it
            c = diagnosis.cause
            assert (c.side, c.partition, c.offset) in {(e.side.value, e.partition, e.offset) for e in scenario.events}


def test_the_reproduction_run_on_spark_gives_the_same_verdict(spark, diagnosed):
    join, found = diagnosed
    scenarios = [diagnosis.scenario() for _, diagnosis, _ in found]
    again = run_scenarios(spark, scenarios)
    for i, (cause, diagnosis, _) in enumerate(found):
        r = diagnosis.record
        verdict = again.why(partition=r.partition, offset=r.offset, side=r.side.value, scenario=i).verdict
        assert verdict == diagnosis.verdict, (cause, diagnosis.text)


def test_kjoin_run_and_export_junit_take_the_reproduction(diagnosed, tmp_path, capsys):
    join, found = diagnosed
    cause, diagnosis, _ = next(f for f in found if f[1].verdict.startswith("partner-") and f[1].cause is not None)
    scenario = diagnosis.scenario(name="customer in another partition")
    path = tmp_path / "repro.yaml"
    path.write_text(yaml.safe_dump(scenario.to_dict(), sort_keys=False))
    assert load_scenario(path) == scenario
    capsys.readouterr()
    assert main(["run", str(path)]) == 0
    assert str(diagnosis.record.value) in capsys.readouterr().out
    task = diagnosis.scenario(name="customer in another partition", one_task=True)
    assert task.partitions == 1 and own_results(run(task), diagnosis) == own_results(run(scenario), diagnosis)
    assert {e.partition for e in task.events} == {0}
    path.write_text(yaml.safe_dump(task.to_dict(), sort_keys=False))
    assert main(["export", "--junit", str(path)]) == 0
    java = capsys.readouterr().out
    assert "class CustomerInAnotherPartition" in java and "@Test" in java, java[:400]
    clocks = [e for e in scenario.events if isinstance(e.key, str) and e.key.startswith(STAND_IN[:-1])]
    assert clocks and all(e.partition == diagnosis.record.partition for e in clocks), "clock records stay in the task"
    assert {e.key for e in clocks} <= {"(other keys, left)", "(other keys, right)"}
    assert all(e.key.endswith(f"{e.side.value})") for e in clocks), "a stand-in key per side"


def test_the_clock_records_of_a_reproduction_join_no_partner(diagnosed):
    """In the task the clock records were other keys each: in the reproduction a left one never finds a right one."""
    join, found = diagnosed
    for cause, diagnosis, _ in found:
        trace = run(diagnosis.scenario())
        stand_ins = [o for s in trace.steps for o in s.outputs if str(o.key).startswith(STAND_IN[:-1])]
        assert all(o.left is None or o.right is None for o in stand_ins), (cause, stand_ins[:3])


def test_a_null_key_records_reproduction_is_the_record_alone(diagnosed):
    join, found = diagnosed
    for cause, diagnosis, _ in found:
        if diagnosis.verdict == "null-key":
            scenario = diagnosis.scenario()
            assert [(e.key, e.value) for e in scenario.events] == [(None, diagnosis.record.value)]
            return
    pytest.fail("the planted application has a null-key order")
