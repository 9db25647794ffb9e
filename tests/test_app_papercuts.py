"""Debugging texts of a whole app: a user's lambda named by where it was defined."""

from __future__ import annotations

import inspect

import kjoin
from kjoin.topology.functions import function_name


def test_a_lambda_is_named_by_the_file_and_line_that_define_it():
    app = kjoin.Topology(partitions=1)
    line = inspect.currentframe().f_lineno + 1
    app.stream("orders").select_key(lambda key, order: order["customer"], name="by-customer").to("out")
    trace = app.run([{"topic": "orders", "key": "o1", "value": {"customer": "c1"}, "ts": 1}])
    text = " ".join(visit.explain for step in trace.steps for visit in step.visits)
    assert f"(the lambda at test_app_papercuts.py:{line})" in text
    assert "<lambda>" not in text


def test_a_named_function_keeps_its_name_and_a_cell_lambda_its_line():
    def by_customer(key, order):
        return order["customer"]

    assert function_name(by_customer) == "by_customer"
    cell = compile("f = lambda v: v\n", "/tmp/ipykernel_4242/1234567.py", "exec")
    scope: dict = {}
    exec(cell, scope)
    assert function_name(scope["f"]) == "the lambda at line 1 of its cell"


def test_an_aggregate_waiting_for_its_fill_in_is_not_listed_as_not_modelled():
    import json
    from pathlib import Path

    fixture = json.loads((Path(__file__).parent / "describe_fixtures" / "kafka-word-count.json").read_text())
    report = kjoin.Topology.from_describe(fixture["describe_text"]).described.report()
    assert "0 not modelled, 4 waiting for functions=" in report
    assert "not modelled:" not in report
    waiting = report.split("waiting for functions= (built once you fill them in):\n")[1].splitlines()
    assert (
        waiting[0].startswith("  KSTREAM-AGGREGATE-0000000005: count or aggregate") and "{'count': True}" in waiting[0]
    )
    assert waiting[1].endswith(": downstream of KSTREAM-AGGREGATE-0000000005")
    assert len(waiting) == 4
