"""One way in for every document kjoin reads: a join scenario, a windowed-table aggregate spec or a topology.

``kjoin.load_scenario`` and ``kjoin.run`` are this module's: a file with ``topology:`` (and no ``join:``) is a
:class:`~kjoin.topology.document.TopologyScenario`, run by :mod:`kjoin.topology`; everything else is what
:mod:`kjoin.scenario` reads and :mod:`kjoin.engine` runs. It sits above the three, so none of them imports another
to reach it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from .engine import run as run_scenario
from .joins import default_joiner
from .scenario import AggregateSpec, Scenario, ScenarioError, scenario_from_document
from .scenario.inputs import did_you_mean, read_document
from .scenario.model import DOCUMENT_FIELDS as SCENARIO_FIELDS
from .topology.document import DOCUMENT_FIELDS, TopologyScenario

__all__ = ["load_scenario", "run", "Document"]

Document = Scenario | AggregateSpec | TopologyScenario


def load_scenario(path: str | Path) -> Document:
    """Read and validate a YAML or JSON file: a :class:`~kjoin.Scenario`, the windowed-table design's
    :class:`~kjoin.scenario.aggregate.AggregateSpec` (for its ``join:`` names) or, for a document with ``topology:``
    and no ``join:``, a :class:`~kjoin.topology.document.TopologyScenario`. :func:`run` runs any of them."""
    if not isinstance(path, (str, Path)):
        raise ScenarioError(
            f"load_scenario: expected the path of a YAML or JSON file, got {type(path).__name__} {path!r:.60} (a "
            "parsed document goes to Scenario.from_dict)"
        )
    path = Path(path)
    data = read_document(path)
    if isinstance(data, dict) and "topology" in data and "join" not in data:
        return TopologyScenario.from_dict(data, source=str(path))
    if isinstance(data, dict) and "join" not in data:
        _misspelled_topology(data, str(path))
    return scenario_from_document(data, str(path))


def _misspelled_topology(data: dict[Any, Any], source: str) -> None:
    """Refuse a document with neither ``join:`` nor ``topology:`` whose field is ``topology`` misspelled, as a
    topology document (its fields and a "did you mean"), rather than as a join scenario with an unknown field."""
    for field in data:
        if isinstance(field, str) and field not in SCENARIO_FIELDS and did_you_mean(field, ("topology",)):
            raise ScenarioError(
                f"unknown field {field!r}{did_you_mean(field, ('topology',))}; a topology document has the fields "
                f"{', '.join(DOCUMENT_FIELDS)} (a join scenario has join:)",
                source,
            )


def run(document: Document, joiner: Callable[[Any, Any], Any] = default_joiner, **options: Any) -> Any:
    """Run any document :func:`load_scenario` gives (``options``: :func:`kjoin.engine.run`'s ``make_join``): a
    topology's :class:`~kjoin.topology.TopologyTrace`, else the engine's trace."""
    if isinstance(document, TopologyScenario):
        return document.run(None if joiner is default_joiner else joiner)
    return run_scenario(document, joiner, **options)
