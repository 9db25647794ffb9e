"""A stream-stream inner join over hopping windows: one output per pair, or one per shared window.

The windowed-table design asks what a join over hopping windows should emit when two records share several
windows (r1 in w1, w2, w3 and r2 in w2, w3, w4 share w2 and w3). Emitting once per shared
window makes the number of duplicates depend on the window layout; the seed chooses one output
per matching pair, whatever the number of shared windows. Kafka followed it: a
``JoinWindows`` join is a join by time difference and emits each pair once.

How it works (a teaching model of the counting question, without retention):

* Each side keeps every record of its key in a window store (``(key, ts, seq) -> value``).
* A record joins each record of the other side that shares at least one hopping window with
  it; ``per="pair"`` (the seed's choice) calls the joiner once per such partner,
  ``per="window"`` (the alternative the seed rejects) once per shared window.
* Null keys and null values are skipped, as in a stream-stream join.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..fates import Fate, Reason
from ..records import OutputKind, Record, Side, render_value
from ..state import StateLog, StoreId
from ..stores.hopping_window import HOPPING_WINDOW
from .context import StepContext
from .window_aggregate import TimeWindows
from ..times import at

__all__ = ["HoppingWindowJoin"]


class HoppingWindowJoin:
    """One task's inner join over hopping ``windows``, emitting per pair or per shared window."""

    def __init__(self, log: StateLog, task: int, windows: TimeWindows, per: str = "pair") -> None:
        if per not in ("pair", "window"):
            raise ValueError(f"per must be 'pair' or 'window', not {per!r}")
        self.windows = windows
        self.per = per
        self._log = log
        self._stores = {side: StoreId(task, f"{side} {HOPPING_WINDOW}", HOPPING_WINDOW) for side in Side}
        self._rows: dict[Side, list[tuple[Any, int, int, Any]]] = {side: [] for side in Side}
        self._seq = itertools.count()
        for store in self._stores.values():
            log.declare(store)

    def process(self, record: Record, ctx: StepContext) -> None:
        if record.key is None or record.value is None:
            reason = Reason.NULL_KEY if record.key is None else Reason.NULL_VALUE
            ctx.drop(
                reason, lambda: f"{record.describe()} has a null {'key' if record.key is None else 'value'}: skipped."
            )
            return
        mine = set(self.windows.windows_for(record.ts))
        pairs = 0
        for key, ts, _, value in sorted(self._rows[record.side.other], key=lambda row: (row[1], row[2])):
            if type(key) is not type(record.key) or key != record.key:
                continue
            shared = sorted(mine & set(self.windows.windows_for(ts)))
            if not shared:
                continue
            pairs += 1
            left, right = (record.value, value) if record.side is Side.LEFT else (value, record.value)
            for _ in range(1 if self.per == "pair" else len(shared)):
                ctx.emit(OutputKind.JOINED, record.key, left, right, max(ts, record.ts))
            ctx.note(
                lambda v=value, t=ts, s=shared: (
                    f"{at(render_value(v), t)} shares {len(s)} window(s) with it "
                    f"({', '.join(map(str, s))}): {'1 output' if self.per == 'pair' else f'{len(s)} output(s)'}."
                )
            )
        seq = next(self._seq)
        self._rows[record.side].append((record.key, record.ts, seq, record.value))
        self._log.put(self._stores[record.side], (record.key, record.ts, seq), record.value)
        windows = ", ".join(str(w) for w in sorted(mine))
        if pairs:
            ctx.settle(
                Fate.JOINED,
                None,
                f"{record.describe()} is in {windows}; it matches {pairs} record(s) of the "
                f"{record.side.other} side, one output per {self.per}.",
            )
        else:
            ctx.settle(
                Fate.NO_MATCH,
                Reason.NO_PARTNER,
                f"{record.describe()} is in {windows}; no {record.side.other} record shares a window with it.",
            )
