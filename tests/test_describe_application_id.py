"""``Topology.from_describe(text, application_id=...)`` takes an ``application.id`` Kafka would run under, and only for
a topology that reads it: a suppression bounded by ``max_bytes`` counts internal topics' full names
(``<application.id>-<topic>``). Anything else is kjoin's error naming the argument and the fix, raised before any
processor is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import kjoin
from kjoin.topology import TopologyError
from tests import describe_cases
from tests.test_topology_describe import fill_for

FIXTURES = Path(__file__).parent / "describe_fixtures"
BOUNDED = json.loads((FIXTURES / "variant-suppress-max-bytes.json").read_text())
PIPE = json.loads((FIXTURES / "kafka-pipe.json").read_text())["describe_text"]


def bounded_by_bytes(application_id: object) -> kjoin.Topology:
    text = BOUNDED["describe_text"]
    fill = fill_for(BOUNDED["document"], text)
    return kjoin.Topology.from_describe(text, fill, semantics=describe_cases.SEMANTICS, application_id=application_id)


@pytest.mark.parametrize(
    ("application_id", "problem", "fix"),
    [
        ("", "the application.id is empty", "leave application_id out to run under the topology harness's"),
        (42, "the application.id is text, got int 42", "give the application.id your application runs with"),
        (b"shop", "the application.id is text, got bytes", "give the application.id your application runs with"),
        (["shop"], "the application.id is text, got list", "or leave application_id out"),
        ("my app", "'my app' is illegal: it contains ' '", "give the application.id your application runs with"),
        ("shop/eu", "it contains '/'", "for example 'orders-app'"),
        ("..", 'cannot be "." or ".."', "for example 'orders-app'"),
        ("a" * 250, "it has 250 characters", "takes at most 249"),
        ("émile", "it contains 'é'", "ASCII letters, digits, '.', '_' and '-'"),
    ],
)
def test_a_bad_application_id_is_refused_with_the_argument_and_the_fix(application_id, problem, fix) -> None:
    with pytest.raises(TopologyError) as refused:
        bounded_by_bytes(application_id)
    message = str(refused.value)
    assert message.startswith("from_describe(application_id=...): ")
    assert problem in message and fix in message


def test_an_application_id_that_nothing_reads_is_refused() -> None:
    with pytest.raises(TopologyError) as refused:
        kjoin.Topology.from_describe(PIPE, application_id="shop")
    message = str(refused.value)
    assert message.startswith("from_describe(application_id='shop'): nothing in this topology reads the application.id")
    assert "max_bytes" in message and "leave application_id out" in message
    assert kjoin.Topology.from_describe(PIPE).application_id == "kjoin-topology-oracle"


def test_an_application_id_a_byte_bound_reads_is_taken() -> None:
    for application_id in ("shop", "orders.app_v2-eu", "a" * 249):
        topology = bounded_by_bytes(application_id)
        assert topology.application_id == application_id
        assert [need.given for need in topology.described.needs if "application.id" in need.what] == [True]
