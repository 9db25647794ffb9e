"""What a processor reports while it handles one input record."""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Union

from ..fates import Fate, Reason
from ..records import Output, OutputKind, Record, render_value
from ..stores.table import TableStore
from ..times import at

__all__ = ["StepContext", "Joiner", "default_joiner", "drop_null_key_update", "drop_idempotent_update", "NO_OLD"]

Joiner = Callable[[Any, Any], Any]

NO_OLD = ("no old value",)
"""A result that sends old values, whose ``Change`` carries a null old value."""
OldValue = Optional[Tuple[Any, ...]]
Text = Union[str, Callable[[], str]]
"""An explanation, or a function that writes it when it is read."""


def default_joiner(left: Any, right: Any) -> str:
    """Render the pair as the seeds do: ``A-a``, ``A-null``, ``null-b``."""
    return f"{render_value(left)}-{render_value(right)}"


class StepContext:
    """Collects the outputs, the fate and the explanation of one step.

    A processor calls :meth:`emit` for every result (the joiner is called here, and only
    here), and :meth:`settle` once with the fate of the input record. Texts may be given as
    functions returning the text: they are written only if someone reads the explanation
    (a trace does; the Spark engine's tasks do not).
    """

    def __init__(self, index: int, record: Record | None, joiner: Joiner, partition: int | None = None) -> None:
        """``record``: the input record of the step, or ``None`` for a step that delivers a
        message between tasks; ``partition``: the task (default: the record's partition)."""
        self.index = index
        self.record = record
        self.partition = record.partition if partition is None and record is not None else partition
        self.joiner = joiner
        self.outputs: list[Output] = []
        self.fate: Fate | None = None
        self.reason: Reason | None = None
        self.until_ms: int | None = None
        self._summary: Text = ""
        self.notes: list[Text] = []

    def emit(
        self,
        kind: OutputKind,
        key: Any,
        left: Any,
        right: Any,
        ts: int,
        origin_step: int | None = None,
        old: OldValue = None,
    ) -> Output:
        """Call the joiner on (left, right) and emit the result.

        ``old`` is given by a table-table join that sends old values: ``NO_OLD`` for a
        ``Change`` whose old value is null, or the (left, right) pair the joiner turns into it.
        """
        output = Output(
            key=key,
            left=left,
            right=right,
            value=self._joined(key, left, right),
            ts=ts,
            tombstone=False,
            kind=kind,
            partition=self.partition,
            origin_step=self.index if origin_step is None else origin_step,
            **self._old(old, key),
        )
        self.outputs.append(output)
        return output

    def emit_tombstone(
        self, key: Any, left: Any, right: Any, ts: int, origin_step: int | None = None, old: OldValue = None
    ) -> Output:
        """Emit a tombstone (null value); the joiner is not called for the new value."""
        origin = self.index if origin_step is None else origin_step
        output = Output(
            key, left, right, None, ts, True, OutputKind.TOMBSTONE, self.partition, origin, **self._old(old, key)
        )
        self.outputs.append(output)
        return output

    def forward(self, output: Output) -> None:
        """Emit an output another processor computed (a chained join's, a cache's flush)."""
        self.outputs.append(output)

    def _joined(self, key: Any, left: Any, right: Any) -> Any:
        """The joiner's value; a joiner that sees the key (``keys == 1``: Kafka's ``ValueJoinerWithKey``, KIP-149)
        is called with the result's key first."""
        if getattr(self.joiner, "keys", 0) == 1:
            return self.joiner(key, left, right)
        return self.joiner(left, right)

    def _old(self, old: OldValue, key: Any = None) -> dict[str, Any]:
        if old is None:
            return {}
        if old is NO_OLD:
            return {"old": None, "has_old": True}
        return {"old": self._joined(key, *old), "has_old": True}

    def note(self, text: Text) -> None:
        self.notes.append(text)

    def settle(
        self, fate: Fate, reason: Reason | None = None, text: Text | None = None, until_ms: int | None = None
    ) -> None:
        self.fate, self.reason, self.until_ms = fate, reason, until_ms
        if text:
            self._summary = text

    def drop(self, reason: Reason, text: Text) -> None:
        self.settle(Fate.DROPPED, reason, text)

    @property
    def summary(self) -> str:
        """The record's own story (what :meth:`settle` was told)."""
        return _resolve(self._summary)

    def explain(self) -> str:
        """The record's own story first, then what else happened during the step."""
        return " ".join(text for text in (self.summary, *(_resolve(note) for note in self.notes)) if text)


def drop_null_key_update(record: Record, ctx: StepContext) -> bool:
    """A table update with a null key cannot be stored: drop it (``True``), else ``False``.
    Every table (stream-table, table-table, foreign-key, cached) applies this rule first."""
    if record.key is not None:
        return False
    ctx.drop(Reason.NULL_KEY, lambda: f"{record.describe()} is a table update with a null key: skipped.")
    return True


def drop_idempotent_update(table: Any, record: Record, semantics: Any, ctx: StepContext) -> bool:
    """KIP-557 (2.6.0, 2.6.1 and 2.7.0: ``Semantics.drops_idempotent_table_updates``): a source table drops an update
    that would change nothing (``TableStore.unchanged_by``): drop it (``True``), else ``False``. The table sources
    apply it after the null-key rule, before they update state; a versioned table (3.5+) never meets it."""
    if not semantics.drops_idempotent_table_updates or not isinstance(table, TableStore):
        return False
    if not table.unchanged_by(record.key, record.value, record.ts):
        return False

    def said() -> str:
        stored = table.get(record.key)
        same = "the key is absent" if stored is None else f"the table holds {at(render_value(stored[0]), stored[1])}"
        return (
            f"{record.describe()} is an idempotent table update ({same}): Kafka {semantics} drops it "
            "(KIP-557, undone by KAFKA-12508 in 2.6.2 and 2.7.1); the table keeps its value and timestamp, nothing "
            "is forwarded."
        )

    ctx.drop(Reason.IDEMPOTENT_UPDATE, said)
    return True


def _resolve(text: Text) -> str:
    return text() if callable(text) else text
