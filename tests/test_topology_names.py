"""Names Kafka makes topics of (``Grouped.as``, ``Repartitioned.as``) follow Kafka's legal-name rule."""

from __future__ import annotations

import pytest

import kjoin


@pytest.mark.parametrize(
    "make",
    [
        lambda s: s.group_by_key(name="by key"),
        lambda s: s.group_by(lambda k, v: v, name="bý-value"),
        lambda s: s.repartition(name="x" * 250),
        lambda s: s.to_table().group_by(lambda k, v: (v, v), name="a/b"),
    ],
)
def test_a_grouping_or_repartition_name_kafka_calls_illegal_is_refused(make):
    """Grouped.as and Repartitioned.as name topics: ASCII letters, digits, '.', '_', '-', at most 249 characters."""
    b = kjoin.Topology()
    with pytest.raises(kjoin.TopologyError, match="is illegal: "):
        make(b.stream("orders"))
