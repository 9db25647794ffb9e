"""The processor contract (kjoin.joins.contract.Processor): what every engine reads from a join processor.

Every processor :func:`kjoin.engine.new_join` builds processes records, declares the reasons it may give and lists
the stores it keeps; the Spark summary's columns come from those declarations, so a reason a processor gives but does
not declare would be a count nobody sees. Random scenarios of every primary-key join kind pin that each step's reason
is declared by the processor that gave it, and that a processor's stores are exactly those it writes to the state
log, each described by the kind its id names.
"""

from __future__ import annotations

import dataclasses

import pytest

from kjoin import Scenario, run
from kjoin.engine import new_join
from kjoin.export.checks import EXPORTED_FIELDS, check_fields
from kjoin.export.judges import ExportError
from kjoin.fates import Reason
from kjoin.joins.contract import Processor, store_kinds
from kjoin.state import StateLog
from kjoin.stores.base import kind_of
from tests.spark_compare import random_batch

PRIMARY_KEY_KINDS = ("stream-stream", "stream-table", "table-table", "versioned-stream-table", "versioned-table-table")


def _random_scenarios(kind: str) -> list[Scenario]:
    return random_batch(seed=41, kind=kind, per_combo=2, max_events=25)


@pytest.mark.parametrize("kind", PRIMARY_KEY_KINDS)
def test_every_step_reason_is_declared_by_the_processor_that_gave_it(kind):
    checked = 0
    for scenario in _random_scenarios(kind):
        built: dict[int, Processor] = {}

        def make_join(config, log, task, built=built):
            built[task] = new_join(config, log, task)
            return built[task]

        for step in run(scenario, make_join=make_join).steps:
            if step.reason is None:
                continue
            declared = built[step.record.partition].REASONS
            if scenario.semantics.drops_idempotent_table_updates:  # KIP-557: the source tables' rule, by era
                declared = declared | {Reason.IDEMPOTENT_UPDATE}
            assert step.reason in declared, (
                f"{type(built[step.record.partition]).__name__} gave {step.reason} without declaring it: "
                f"{scenario.to_dict()}"
            )
            checked += 1
    assert checked, f"no {kind} step gave a reason: the check checked nothing"


@pytest.mark.parametrize("kind", PRIMARY_KEY_KINDS)
def test_every_processor_new_join_builds_meets_the_contract(kind):
    for scenario in _random_scenarios(kind):
        processor = new_join(scenario, StateLog(), 0)
        assert isinstance(processor, Processor), type(processor).__name__
        assert processor.REASONS <= frozenset(Reason)


@pytest.mark.parametrize("kind", PRIMARY_KEY_KINDS)
def test_a_processor_lists_exactly_the_stores_it_writes_each_with_its_kind(kind):
    shapes = set()
    for scenario in _random_scenarios(kind):
        log = StateLog()
        processor = new_join(scenario, log, 3)
        described = store_kinds(processor)
        assert set(described) == set(log.live), (
            f"{type(processor).__name__} lists {sorted(s.name for s in described)} but declared "
            f"{sorted(s.name for s in log.live)}: {scenario.to_dict()}"
        )
        for store, store_kind in described.items():
            assert store.task == 3 and kind_of(store) is store_kind, (store, store_kind)
        shapes.add(tuple(sorted(s.name for s in described)))
    assert shapes, f"no {kind} scenario built a processor"


def test_a_chain_lists_its_shared_source_table_once():
    scenario = Scenario.from_dict(
        {
            "join": "table-table",
            "variant": "left",
            "then": [{"variant": "inner"}],
            "materialized": True,
            "caching": ["left", "result"],
            "events": [],
        }
    )
    log = StateLog()
    stores = new_join(scenario, log, 0).state_stores()
    names = [store.name for store in stores]
    assert len(names) == len(set(names)) and {store.store for store in stores} == set(log.live), names


@dataclasses.dataclass(frozen=True)
class _ExtractedScenario(Scenario):
    timestamp_extractor: str | None = None


def test_the_exporter_refuses_a_scenario_field_it_does_not_write():
    base = Scenario.from_dict({"join": "stream-table", "variant": "left", "events": []})
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    check_fields(_ExtractedScenario(**values))  # at its default the field changes nothing
    with pytest.raises(ExportError, match="timestamp_extractor: the exporter does not write"):
        check_fields(_ExtractedScenario(**values, timestamp_extractor="value.ts"))
    assert {f.name for f in dataclasses.fields(Scenario)} <= EXPORTED_FIELDS
