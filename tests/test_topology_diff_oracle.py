"""``kjoin diff`` of a whole app judged by the real library: the app of ``tests/test_topology_diff.py`` run through
Kafka Streams 3.6.2 and 4.4.0 (TopologyTestDriver, ``kafka_oracle/``'s topology harness) gains exactly the records
``kjoin diff --from 3.6 --to 4.4`` lists, from the same events (KIP-962: the null-key orders a repartition now keeps
for the left join downstream)."""

from __future__ import annotations

from collections import Counter


from kjoin.topology.diff import diff
from kjoin.records import render_value
from kjoin.topology.document import TopologyScenario
from tests.test_topology_diff import APP
from kafka_oracle.topology_oracle import run_batch


def _shown(record):
    key = None if record["key"] is None else render_value(record["key"])
    return [record["topic"], key, render_value(record["value"]), record["ts"]]


def test_the_records_the_upgrade_adds_are_those_kafka_adds(built):
    app = {**APP, "partitions": 1}  # one task: TopologyTestDriver runs it whole
    kafka = {}
    for version in ("3.6.2", "4.4.0"):
        (answer,) = run_batch(version, [TopologyScenario.from_dict({**app, "semantics": version})])
        assert "error" not in answer, answer
        kafka[version] = answer["outputs"]
    gained = {}
    for event, (before, after) in enumerate(zip(kafka["3.6.2"], kafka["4.4.0"])):
        added = Counter(map(str, after)) - Counter(map(str, before))
        removed = Counter(map(str, before)) - Counter(map(str, after))
        assert not removed, (event, removed)
        if added:
            gained[event] = sorted(added.elements())
    result = diff(app, from_="3.6", to="4.4")
    ours = {}
    for d in result:
        assert d.change == "added" and d.rules == ("relaxed_null_keys",)
        ours.setdefault(d.event, []).append(str(_shown(d.after)))
    assert gained == {event: sorted(rows) for event, rows in ours.items()}
    assert sorted(gained) == [2, 5]
