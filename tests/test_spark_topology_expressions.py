"""Declarative stages as Spark expressions (:mod:`kjoin.spark.passes.stage_expressions`): which stages
are declarative and why the others are not (without Spark), and on Spark, random declarative topologies
(:func:`tests.topology_spark_check.declarative_scenario`: texts within and outside
:func:`kjoin.spark.json_text.exact`) run as expressions and by the chain pass, both against the reference engine and
their rows against each other."""

from __future__ import annotations

import random

import pytest

import kjoin
from kjoin.spark.passes.stage_expressions import declarative_plan
from kjoin.spark.passes.stage_chain import stage_plan
from kjoin.topology.stages import stages_of, topic_writers
from tests.topology_spark_check import declarative_scenario, expressions_difference


def _whys(topology, decoding=None):
    topology.build()
    graph = topology.graph
    decoding = decoding or {name: (False, "json") for name in graph.topics}
    found = []
    for stage in stages_of(graph):
        chain, why = stage_plan(topology, stage)
        if chain is not None:
            found.append(declarative_plan(topology, chain, decoding, topic_writers(graph)))
    return found


def test_the_bench_apps_re_key_is_declarative_and_its_joins_are_not_yet():
    from benchmarks.bench_topology import app

    (rekey, plan_why), (join, join_why) = _whys(app(4))
    assert rekey is not None and rekey.path == "c" and rekey.partitions == 4
    assert plan_why.startswith("declarative: orders's c as the key, to ")
    assert join is None and "not a re-key of an input stream" in join_why


@pytest.mark.parametrize(
    "build, reason",
    [
        (lambda b: b.stream("orders").select_key(lambda k, v: v["c"]), "is a Python function"),
        (lambda b: b.stream("orders").select_key({"map": {"a": "b"}}), "not {'field': path}"),
        (lambda b: b.stream("orders").select_key({"field": "it's"}), "cannot be named in a VARIANT path"),
        (lambda b: b.stream("orders").select_key({"field": "c"}, partitioner=lambda k, n: 0), "custom partitioner"),
        (lambda b: b.stream("orders").filter({"value_not_null": True}).select_key({"field": "c"}), "not a re-key"),
    ],
)
def test_a_stage_that_is_not_declarative_says_why(build, reason):
    b = kjoin.Topology(partitions=2)
    build(b).join(b.table("customers")).to("out")
    (first, why), _ = _whys(b)
    assert first is None and reason in why


def test_values_not_decoded_as_json_are_not_declarative():
    b = kjoin.Topology(partitions=2)
    b.stream("orders").select_key({"field": "c"}).join(b.table("customers")).to("out")
    (first, why), _ = _whys(b, {"orders": (False, "string"), "customers": (False, "json")})
    assert first is None and "values are not JSON" in why


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(3))
def test_random_declarative_topologies_as_expressions_are_the_chain_pass(spark, seed):
    assert expressions_difference(spark, declarative_scenario(random.Random(seed))) is None


def _join_chain(topology):
    topology.build()
    chains = [stage_plan(topology, stage)[0] for stage in stages_of(topology.graph)]
    return chains[-1]


@pytest.mark.parametrize("joiner, ok", [(None, True), ("concat", True), ("object", False), (lambda a, b: a, False)])
def test_a_join_stage_after_a_declarative_one_runs_on_values_as_shown_with_the_default_joiner(joiner, ok):
    from kjoin.spark.passes.stage_expressions import shown_values_plan

    b = kjoin.Topology(partitions=2)
    b.stream("orders").select_key({"field": "c"}).join(b.table("customers"), joiner).to("out")
    chain = _join_chain(b)
    decoding = {name: (False, "json") for name in b.graph.topics}
    rekeyed = chain.nodes[0].topic
    assert shown_values_plan(chain, decoding, {rekeyed})[0] is ok
    assert shown_values_plan(chain, decoding, set())[0] is False  # a repartition topic the chain pass wrote
    assert shown_values_plan(chain, {**decoding, "customers": (True, "json")}, {rekeyed})[0] is False  # long keys


@pytest.mark.spark
def test_trace_and_why_read_the_records_a_declarative_stage_wrote(spark):
    from kjoin.spark import run_topology
    from tests.topology_spark_check import spark_topics

    scenario = declarative_scenario(random.Random(2))
    topics = spark_topics(spark, scenario)
    runs = {method: run_topology(spark, scenario.topology, topics, method=method)
            for method in ("expressions", "auto", "vectorised")}  # fmt: skip
    written = runs["vectorised"].outputs.orderBy("topic", "partition", "offset").collect()
    assert written
    for row in written[:3]:
        place = (row["topic"], row["partition"], row["offset"])
        expected = runs["vectorised"].why(*place)
        assert runs["expressions"].why(*place) == expected and runs["auto"].why(*place) == expected
    task = runs["vectorised"].steps.where("topic LIKE '%repartition'").first()["task"]
    fates = [step.fate for step in runs["vectorised"].trace(task).steps]
    assert [step.fate for step in runs["expressions"].trace(task).steps] == fates
