"""The processor contract (kjoin.joins.contract.Processor): what every engine reads from a join processor.

Every processor :func:`kjoin.engine.new_join` builds processes records and declares the reasons it may give; the
Spark summary's columns come from those declarations, so a reason a processor gives but does not declare would be a
count nobody sees. Random scenarios of every primary-key join kind pin that each step's reason is declared by the
processor that gave it.
"""

from __future__ import annotations

import dataclasses

import pytest

from kjoin import Scenario, run
from kjoin.engine import new_join
from kjoin.export.checks import EXPORTED_FIELDS, check_fields
from kjoin.export.judges import ExportError
from kjoin.fates import Reason
from kjoin.joins.contract import Processor
from kjoin.state import StateLog
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
