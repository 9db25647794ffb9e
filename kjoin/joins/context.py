"""What a processor reports while it handles one input record."""

from __future__ import annotations

from typing import Any, Callable

from ..fates import Fate, Reason
from ..records import Output, OutputKind, Record, render_value

__all__ = ["StepContext", "Joiner", "default_joiner"]

Joiner = Callable[[Any, Any], Any]


def default_joiner(left: Any, right: Any) -> str:
    """Render the pair as the seeds do: ``A-a``, ``A-null``, ``null-b``."""
    return f"{render_value(left)}-{render_value(right)}"


class StepContext:
    """Collects the outputs, the fate and the explanation of one step.

    A processor calls :meth:`emit` for every result (the joiner is called here, and only
    here), and :meth:`settle` once with the fate of the input record.
    """

    def __init__(self, index: int, record: Record, joiner: Joiner) -> None:
        self.index = index
        self.record = record
        self._joiner = joiner
        self.outputs: list[Output] = []
        self.fate: Fate | None = None
        self.reason: Reason | None = None
        self.until_ms: int | None = None
        self.summary = ""
        self.notes: list[str] = []

    def emit(self, kind: OutputKind, key: Any, left: Any, right: Any, ts: int, origin_step: int | None = None) -> Output:
        """Call the joiner on (left, right) and emit the result."""
        output = Output(
            key=key,
            left=left,
            right=right,
            value=self._joiner(left, right),
            ts=ts,
            tombstone=False,
            kind=kind,
            partition=self.record.partition,
            origin_step=self.index if origin_step is None else origin_step,
        )
        self.outputs.append(output)
        return output

    def emit_tombstone(self, key: Any, left: Any, right: Any, ts: int, origin_step: int | None = None) -> Output:
        """Emit a tombstone (null value); the joiner is not called."""
        origin = self.index if origin_step is None else origin_step
        output = Output(key, left, right, None, ts, True, OutputKind.TOMBSTONE, self.record.partition, origin)
        self.outputs.append(output)
        return output

    def note(self, text: str) -> None:
        self.notes.append(text)

    def settle(self, fate: Fate, reason: Reason | None = None, text: str | None = None, until_ms: int | None = None) -> None:
        self.fate, self.reason, self.until_ms = fate, reason, until_ms
        if text:
            self.summary = text

    def drop(self, reason: Reason, text: str) -> None:
        self.settle(Fate.DROPPED, reason, text)

    def explain(self) -> str:
        """The record's own story first, then what else happened during the step."""
        return " ".join(part for part in (self.summary, *self.notes) if part)
