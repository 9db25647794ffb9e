"""One key's drill-down of one Kafka task (:func:`key_trace`, :class:`KeyTrace`), without running the whole task
through the reference engine.

The drill-down of key ``k`` in task ``p`` runs only ``k``'s records, plus a few of the task's other records that carry
its clocks: a join's stream time is the largest timestamp it has seen, so between two of ``k``'s records, per side
and per kind of record (null key or not, null value or not), the one record with the largest timestamp moves every
clock exactly as far as all of them do. Those *clock records* run under a stand-in key, so they never meet ``k``'s;
the drill-down shows ``k``'s steps and the clock records at which ``k``'s held results were emitted (a window
closing), and every store restricted to ``k``.

One rule depends on the other keys' records, not only on the clocks: from Kafka 3.1 a left or outer stream-stream
join holds its null results in one outer-join buffer per task, and a sweep over the whole buffer (gated by its min
time, stopped by the first open entry) emits them. The drill-down does not rerun that sweep: the run's index keeps,
for each held result, the step at which the whole task's run emitted it (:attr:`SparkRun.outputs`), and the
drill-down's join (:class:`ReplayedSweepJoin`) releases the key's entries exactly there. The buffer's min time is the
task's, not the key's: the drill-down's states leave it out.

Where each record falls in Kafka's processing order, and which records carry the task's clocks, comes from the run's
index (:mod:`kjoin.spark.debug.index`, which hands them over as :class:`Placed` records), built in Spark once per run:
a call reads the key's rows and the few clock records between them, never the whole task.

kjoin assumes, as this order does, that both input partitions of a task always have records buffered: Kafka Streams
picks by timestamp only when ``max.task.idle.ms`` lets a task wait for an empty partition (default 0: it may process
what it has, and a lagging partition's records come later than their timestamps say).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from ...engine import run
from ...fates import Fate
from ...joins.stream_stream import OUTER_MIN_TIME, StreamStreamJoin
from ...records import OutputKind, Record
from ...scenario import Event, Scenario
from ...state import StateHistory, StateLog
from ...stores import CLOCK
from ...times import when
from ...trace import StateSnapshot, Step, Trace

__all__ = [
    "KeyTrace",
    "Placed",
    "ReplayedSweepJoin",
    "key_trace",
    "stand_in_key",
    "sweeps_outer_buffer",
    "replays_sweep",
]


class KeyTrace(Trace):
    """One key's steps in one Kafka task, with the exact states Kafka has for that key.

    ``task_steps[i]`` is step ``i``'s place in the whole task's processing order (the ``step``
    of the Spark frames), for the key's records and for the clock records shown (another key's
    record, shown because this key's held results were emitted when it was processed)."""

    def __init__(
        self,
        scenario: Scenario,
        steps: list[Step],
        states: list[dict],
        changes: list[list],
        task_steps: list[int | None],
        key: Any,
        task: int,
    ) -> None:
        super().__init__(scenario, steps, StateHistory({}))
        self._states = states
        self._changes = changes
        self.task_steps = task_steps
        self.key = key
        self.task = task
        self.replay: tuple[Event, ...] = ()
        """The events the drill-down ran, clock records included (under :attr:`stand_in`), in processing order."""
        self.stand_in: Any = None
        self.caveat: str | None = _caveat(scenario)
        """Why this drill-down may differ from the whole task's trace restricted to the key
        (``None``: it does not)."""

    @property
    def exact(self) -> bool:
        """Whether the drill-down equals the whole task's trace restricted to the key."""
        return self.caveat is None

    def _task_at(self, step: int) -> Any:
        """The task that ran step ``step`` (its state's task): the drill-down's own."""
        return self.task

    def _tasks_seen(self) -> frozenset:
        """The tasks the drill-down's steps ran at (its states' tasks)."""
        return frozenset({self.task})

    def state_at(self, step: int) -> StateSnapshot:
        if step < 0:
            step += len(self.steps)
        if not 0 <= step < len(self.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(self.steps) - 1})")
        return StateSnapshot(self._states[step], step, self._task_at(step), self._tasks_seen())

    def initial_state(self) -> StateSnapshot:
        return StateSnapshot({}, -1, self.task, self._tasks_seen())

    def changes_at(self, step: int) -> list:
        return list(self._changes[step])

    def steps_frame(self) -> Any:
        """:meth:`kjoin.trace.Trace.steps_frame`, but a record whose every result has a null partner (a lookup of
        a left join that found nothing, a null key forwarded with null) has the fate ``no-match``, not ``joined``:
        the engine's fate says that it produced a result, a user asks whether it found its partner."""
        frame = super().steps_frame()
        own = [[o for o in s.outputs if o.origin_step in (None, s.index)] for s in self.steps]
        nulls = [
            bool(mine) and s.fate is Fate.JOINED and all(_null_partner(o) for o in mine)
            for s, mine in zip(self.steps, own)
        ]
        frame.loc[nulls, "fate"] = Fate.NO_MATCH.value
        return frame

    def key_steps(self) -> list[Step]:
        """The key's own steps (clock records left out)."""
        return [s for s in self.steps if s.record.key == self.key]


def _null_partner(output: Any) -> bool:
    return output.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED, OutputKind.NULL_KEY)


@dataclass(frozen=True)
class Placed:
    """One record of the drill-down, placed in its task's processing order."""

    record: Record
    step: int
    """The record's place in its task's processing order."""
    clock: bool = False
    """Another key's record, run under a stand-in key for the clocks it moves."""


class ReplayedSweepJoin(StreamStreamJoin):
    """The drill-down's left/outer stream-stream join (Kafka 3.1+): its outer-join buffer releases
    the key's held results at the steps where the whole task's run released them, instead of
    sweeping (the sweep's gate and stop depend on every key of the task, see
    :meth:`StreamStreamJoin.sweep_outer_buffer`)."""

    def __init__(
        self,
        log: StateLog,
        task: int,
        config: Scenario,
        releases: Mapping[int, frozenset[int]],
    ) -> None:
        assert config.window is not None
        super().__init__(log, task, config.variant, config.window, config.semantics)
        self.releases = releases
        """Step of the drill-down -> the steps whose held results the task's run released there."""

    def sweep_outer_buffer(self, side: Any, stream_time: int, ctx: Any) -> None:
        due = self.releases.get(ctx.index)
        if due:
            self.release_held(due, side, stream_time, ctx)


def stand_in_key(key: Any) -> Any:
    """A key other than ``key`` of the same type, for the clock records."""
    if isinstance(key, bool) or not isinstance(key, int):
        return f"{key}\u0000(other keys)" if isinstance(key, str) else "\u0000(other keys)"
    return key + 1 if key < 2**63 - 1 else key - 1


def key_trace(
    config: Scenario,
    partition: int,
    key: Any,
    placed: Sequence[Placed],
    joiner: Callable[[Any, Any], Any],
    releases: Mapping[int, frozenset[int]] | None = None,
) -> KeyTrace:
    """Run the key's records and the clock records through the reference engine; keep the key.
    ``releases``: for a join that sweeps an outer-join buffer (:func:`replays_sweep`), the task
    steps at which the whole task's run emitted the key's held results -> the steps of the
    records it emitted there (each of those steps must be in ``placed``)."""
    other = stand_in_key(key)
    events = []
    for p in placed:
        r = p.record
        event_key = r.key if not p.clock or r.key is None else other
        events.append(Event(r.side, event_key, r.value, r.ts, partition, r.offset))
    make_join = None
    if releases is not None and replays_sweep(config):
        at = {p.step: i for i, p in enumerate(placed)}
        missing = sorted(s for emitted, origins in releases.items() for s in (emitted, *origins) if s not in at)
        if missing:
            raise ValueError(f"key {key!r}: the drill-down lacks the task's steps {missing} of its held results")
        schedule = {at[emitted]: frozenset(at[o] for o in origins) for emitted, origins in releases.items()}
        make_join = lambda scenario, log, task: ReplayedSweepJoin(log, task, scenario, schedule)  # noqa: E731
    # The events are in the task's processing order already (a lagging side's included): the engine runs them as
    # listed, without reordering them by arrival again. The tie sentences need the whole task's order: why() says
    # them from the index (_tie).
    config = replace(config, arrival=None)
    full = run(replace(config, events=tuple(events)), joiner=joiner, make_join=make_join, explain_ties=False)
    steps, states, changes, task_steps = [], [], [], []
    kept: dict[int, int] = {}  # step of the run above -> step of the drill-down
    for i, step in enumerate(full.steps):
        mine = tuple(o for o in step.outputs if o.key == key)
        if placed[i].clock and not mine:
            continue
        index = kept[i] = len(steps)
        mine = tuple(
            o if o.origin_step is None else replace(o, origin_step=kept.get(o.origin_step, o.origin_step)) for o in mine
        )
        record = placed[i].record if placed[i].clock else step.record
        if placed[i].clock:
            explain = (
                f"another key's record ({record.side.value}, offset {record.offset}, {when(record.ts)}) moved "
                f"stream time; key {key!r}'s held results were emitted"
            )
            steps.append(Step(index, record, partition, mine, step.fate, step.reason, step.until_ms, explain))
        else:
            steps.append(replace(step, index=index, outputs=mine))
        states.append(_restrict(full.state_at(i).stores, key))
        changes.append([c for c in full.changes_at(i) if _entry_is_key(c[1], None, key)])
        task_steps.append(placed[i].step)
    trace = KeyTrace(
        replace(config, events=tuple(e for e, p in zip(events, placed) if not p.clock)),
        steps,
        states,
        changes,
        task_steps,
        key,
        partition,
    )
    trace.replay = tuple(events)
    trace.stand_in = other
    return trace


def sweeps_outer_buffer(config: Scenario) -> bool:
    """Whether some stream-stream join of ``config`` holds null results in a Kafka 3.1+ outer-join
    buffer, whose sweep depends on all of the task's keys."""
    window = config.window
    if config.join != "stream-stream" or window is None or not config.semantics.spurious_result_fix:
        return False
    stages = [(config.variant, window), *((c.variant, c.window or window) for c in config.then)]
    return any(variant != "inner" and not w.deprecated_api for variant, w in stages)


def replays_sweep(config: Scenario) -> bool:
    """Whether the drill-down replays the whole task's releases (:class:`ReplayedSweepJoin`): a
    single left/outer stream-stream join with a buffer, not a self-join or a chain."""
    return sweeps_outer_buffer(config) and not (config.then or config.self_join or config.optimize)


def _caveat(config: Scenario) -> str | None:
    if not sweeps_outer_buffer(config) or replays_sweep(config):
        return None
    return (
        "a chained or self stream-stream join from Kafka 3.1 sweeps its outer-join buffers across all of the "
        "task's keys (in timestamp order, gated by the buffer's min time and stopped where both sides have an "
        "open entry), which the drill-down does not replay for chains and self-joins, so this key's held null "
        "results can come out at another step here than in the whole task (or still be held at its end); for "
        "their exact steps, step through trace(partition=...)"
    )


def _entry_is_key(entry_key: Any, row: Any, key: Any) -> bool:
    if isinstance(entry_key, tuple):
        return bool(entry_key) and entry_key[0] == key
    return entry_key == key or getattr(row, "key", None) == key


def _restrict(stores: dict, key: Any) -> dict:
    out = {}
    for store, entries in stores.items():
        if store.name == CLOCK or store.name.endswith(CLOCK):
            out[store] = {
                name: ms for name, ms in entries.items() if name != OUTER_MIN_TIME
            }  # the task's, not the key's
        else:
            out[store] = {k: v for k, v in entries.items() if _entry_is_key(k, v, key)}
    return out
