"""The few options a join processor takes, as small frozen objects.

A scenario (:mod:`kjoin.scenario`) stays at the edge: the engine reads it and builds each
task's processors from these options and plain arguments (variant, semantics, window), so a
processor can be built and tested without a scenario.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..join_model import TableOptions, Variant
from ..semantics import Semantics

__all__ = ["TableOptions", "ForeignKeyOptions"]


def _as_is(key: Any) -> Any:
    return key


@dataclass(frozen=True)
class ForeignKeyOptions:
    """What a foreign-key join's tasks need: the variant and era, the extractor's field path
    into the left value, whether stale responses are detected by hash, and both tables."""

    variant: Variant
    semantics: Semantics
    foreign_key: str
    hash_check: bool = True
    left: TableOptions = TableOptions()
    right: TableOptions = TableOptions()
    key_of: Callable[[Any], Any] = _as_is
    """The key kjoin stores for an extracted foreign key (the records' keys went through the same
    function: :meth:`kjoin.Scenario.key_function`), so foreign keys compare by their bytes."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", Variant(self.variant))  # a scenario's text, as its member
