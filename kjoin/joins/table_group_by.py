"""``KTableRepartitionMap``: the repartition records of one table change ``Change(new, old)`` grouped by a mapper.

One rule, shared by the single-join table aggregate (:class:`kjoin.joins.aggregate.TableAggregate`) and the topology's
``group_by`` of a table (:class:`kjoin.topology.aggregates.TableGroupBy`). Each half of the change maps to a group
(``None``: no group, a null value, group key or mapped value, skipped):

* Kafka 3.5+ (KIP-904), both halves in one group: one record ``Change(new, old)``, so the aggregate subtracts and
  adds in one update and forwards once.
* Otherwise, and always before 3.5: the old half first, ``Change(null, old)`` to the old group, then the new half,
  ``Change(new, null)`` to the new group; an update that keeps its group updates its aggregate twice (the subtract,
  then the add), and the aggregate forwards both.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Half(NamedTuple):
    """One repartition record: ``Change(new, old)`` for ``group``; ``kind`` says which half(s) of the change it holds:
    ``subtract`` (old only), ``add`` (new only) or ``both``."""

    group: Any
    new: Any
    old: Any
    kind: str


def same_group(a: Any, b: Any) -> bool:
    """Java's ``equals`` of two group keys: equal values of one type (``1`` is not ``1.0`` nor ``True``)."""
    return type(a) is type(b) and a == b


def group_halves(new: tuple[Any, Any] | None, old: tuple[Any, Any] | None, single_update: bool) -> list[Half]:
    """The repartition records of a change whose new and old halves map to ``new`` and ``old`` (each ``(group,
    value)`` or ``None`` for no group), in the order Kafka writes them; ``single_update``:
    :attr:`kjoin.Semantics.table_aggregate_single_update`."""
    if single_update and new is not None and old is not None and same_group(new[0], old[0]):
        return [Half(new[0], new[1], old[1], "both")]
    halves = []
    if old is not None:
        halves.append(Half(old[0], None, old[1], "subtract"))
    if new is not None:
        halves.append(Half(new[0], new[1], None, "add"))
    return halves


def split_in_one_group(halves: list[Half]) -> bool:
    """Whether ``halves`` are a subtract and an add record to one group: an update that keeps its group before 3.5."""
    return len(halves) == 2 and same_group(halves[0].group, halves[1].group)


SPLIT_NOTE = " (before Kafka 3.5, KIP-904: two records even within one group, so the aggregate updates twice)"
"""What a story adds to an update that :func:`split_in_one_group`."""
