"""Join processors built from their own options, without a Scenario: the scenario stays at
the edge (the engine), and a processor can be driven record by record in a test."""

from kjoin.fates import Fate, Reason
from kjoin.joins import JoinWindows, StepContext, StreamStreamJoin, StreamTableJoin, TableTableJoin, default_joiner
from kjoin.joins.foreign_key import ForeignKeyJoin
from kjoin.joins.options import ForeignKeyOptions, TableOptions
from kjoin.joins.versioned import VersionedTableTableJoin
from kjoin.records import Record, Side
from kjoin.semantics import parse_semantics
from kjoin.state import StateLog

LATEST = parse_semantics(None)


def _process(join, records):
    steps = []
    for index, record in enumerate(records):
        ctx = StepContext(index, record, default_joiner)
        join.process(record, ctx)
        steps.append(ctx)
    return steps


def test_a_stream_stream_join_takes_its_variant_window_and_semantics():
    join = StreamStreamJoin(StateLog(), 0, "left", JoinWindows(5, 5, 0), LATEST)
    steps = _process(join, [Record(Side.LEFT, "k", "A", 1), Record(Side.RIGHT, "k", "a", 3)])
    assert (steps[0].fate, steps[0].reason, steps[0].until_ms) == (Fate.BUFFERED, Reason.WINDOW_OPEN, 6)
    assert [o.render() for o in steps[1].outputs] == ["A-a"]


def test_a_stream_table_join_needs_only_its_variant_and_semantics():
    join = StreamTableJoin(StateLog(), 0, "inner", LATEST)
    records = [Record(Side.LEFT, "k", "A", 1), Record(Side.RIGHT, "k", "a", 2), Record(Side.LEFT, "k", "B", 3)]
    steps = _process(join, records)
    assert [s.reason for s in steps] == [Reason.NO_PARTNER, Reason.TABLE_UPDATE, None]
    assert [o.render() for o in steps[2].outputs] == ["B-a"]


def test_a_table_table_join_over_versioned_tables_takes_table_options():
    options = TableOptions(versioned=True, history_retention_ms=100)
    join = VersionedTableTableJoin(StateLog(), 0, "inner", LATEST, options, options)
    records = [Record(Side.LEFT, "k", "a0", 0), Record(Side.RIGHT, "k", "b2", 2), Record(Side.LEFT, "k", "a5", 5)]
    steps = _process(join, [*records, Record(Side.LEFT, "k", "a1", 1)])
    assert [[o.render() for o in s.outputs] for s in steps] == [[], ["a0-b2"], ["a5-b2"], []]
    assert (steps[3].fate, steps[3].reason) == (Fate.DROPPED, Reason.OUT_OF_ORDER_VERSION)
    plain = TableTableJoin(StateLog(), 0, "outer", LATEST)
    assert [o.render() for o in _process(plain, [Record(Side.RIGHT, "k", "b", 1)])[0].outputs] == ["null-b"]


def test_a_foreign_key_join_takes_foreign_key_options_and_a_partition_count():
    join = ForeignKeyJoin(StateLog(), ForeignKeyOptions("inner", LATEST, "fk"), partitions=1)
    right = Record(Side.RIGHT, "Y", "y", 1)
    left = Record(Side.LEFT, "A", {"fk": "Y"}, 2)
    steps = _process(join, [right, left])
    assert steps[1].reason is Reason.SUBSCRIPTION_SENT
    results = []
    while len(join.in_flight):
        message = join.in_flight.heads()[0]
        ctx = StepContext(len(steps) + len(results), left, default_joiner)
        join.deliver(message, ctx)
        results.extend(ctx.outputs)
    assert [(o.key, o.left, o.right) for o in results] == [("A", {"fk": "Y"}, "y")]
