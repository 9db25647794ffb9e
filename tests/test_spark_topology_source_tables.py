"""Spark runs the rules of which ``KTableSource`` keeps a store, and of a session store's retention, as the reference
engine does: a source table without ``Materialized`` read by ``toStream`` only, by a filter and by a join; a
``toTable`` that a left join's outer side asks for old values through a materialized view (before 2.7); a join of two
session-windowed counts that finds an old session (before 3.0). Each on two partitions, records and steps compared
with the reference engine's (``tests/topology_spark_check.py``); the rules themselves are judged against the real
library in ``tests/test_topology_unmaterialized_tables.py`` and ``tests/test_topology_session_retention.py``."""

from __future__ import annotations

import pytest

from kjoin.topology.document import TopologyScenario
from tests import test_topology_session_retention as sessions
from tests import test_topology_unmaterialized_tables as tables
from tests.topology_spark_check import difference


def _cases() -> list[tuple[str, TopologyScenario]]:
    found = [
        (f"{reader}-unmaterialized-{version}", tables._scenario(reader, "unmaterialized", version, partitions=2))
        for reader, version in [*((reader, "2.6.1") for reader in tables.READERS), ("filter", "4.4")]
    ]
    found.append(
        (
            "view-then-outer-join-2.6.1",
            TopologyScenario.from_dict(
                {
                    "semantics": "2.6.1",
                    "partitions": 2,
                    "topology": tables.VIEW_THEN_OUTER_JOIN,
                    "events": tables.VIEW_EVENTS,
                }  # fmt: skip
            ),
        )
    )
    found.append(("session-join-2.8", sessions._scenario("2.8")))
    return found


CASES = dict(_cases())


@pytest.mark.parametrize("name", sorted(CASES))
def test_spark_keeps_the_reference_engines_stores(spark, name: str) -> None:
    assert difference(spark, CASES[name], with_partitions=False) is None
