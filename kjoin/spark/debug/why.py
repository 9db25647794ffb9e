"""Debug your own topics: one key's drill-down and the diagnosis of one record, without running a
whole Kafka task through the reference engine.

Every kind of join is explained in one shape, :class:`JoinVerdicts`: the verdicts its null results can have and the
two hooks where kinds differ (what the other partitions would have changed, and what the partners in the record's
own partition say); :func:`diagnose` is the rest, shared. This module holds the primary-key kinds
(:data:`WINDOWED`, :data:`TABLE`); :mod:`kjoin.spark.debug.fk` the foreign-key one; :mod:`kjoin.spark.debug.kinds`
lists them all, so a new kind of join is one entry there. Why one module of this size: the drill-down and the
verdicts share their vocabulary (:class:`Partner`, :class:`Diagnosis`, :class:`KeyTrace`) and the verdicts of both
primary-key kinds share most of their steps; the foreign-key kind, which reads a whole trace, is apart.

The drill-down of key ``k`` in task ``p`` (:func:`key_trace`) runs only ``k``'s records, plus a
few of the task's other records that carry its clocks: a join's stream time is the largest
timestamp it has seen, so between two of ``k``'s records, per side and per kind of record
(null key or not, null value or not), the one record with the largest timestamp moves every
clock exactly as far as all of them do. Those *clock records* run under a stand-in key, so
they never meet ``k``'s; the drill-down shows ``k``'s steps and the clock records at which
``k``'s held results were emitted (a window closing), and every store restricted to ``k``.

One rule depends on the other keys' records, not only on the clocks: from Kafka 3.1 a left or
outer stream-stream join holds its null results in one outer-join buffer per task, and a sweep
over the whole buffer (gated by its min time, stopped by the first open entry) emits them. The
drill-down does not rerun that sweep: the run's index keeps, for each held result, the step at
which the whole task's run emitted it (:attr:`SparkRun.outputs`), and the drill-down's join
(:class:`ReplayedSweepJoin`) releases the key's entries exactly there. The buffer's min time is
the task's, not the key's: the drill-down's states leave it out.

Where each record falls in Kafka's processing order, and which records carry the task's clocks,
comes from the run's index (:mod:`kjoin.spark.debug.index`), built in Spark once per run: a call
reads the key's rows and the few clock records between them, never the whole task.

kjoin assumes, as this order does, that both input partitions of a task always have records
buffered: Kafka Streams picks by timestamp only when ``max.task.idle.ms`` lets a task wait for
an empty partition (default 0: it may process what it has, and a lagging partition's records
come later than their timestamps say).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from ...engine import run
from ...fates import Fate, Reason
from ...records import OutputKind, Record, Side
from ...scenario import Event, Scenario
from ...joins.stream_stream import OUTER_MIN_TIME, StreamStreamJoin
from ...ordering import TakenFirst
from ...times import DATE_FROM_MS, duration, lag_text, when
from ...state import StateHistory, StateLog
from ...stores import CLOCK
from ...trace import StateSnapshot, Step, Trace

__all__ = ["KeyTrace", "Diagnosis", "Partner", "VERDICTS", "JoinVerdicts", "WINDOWED", "TABLE", "key_trace", "diagnose"]

VERDICTS = (
    "joined",
    "partner-later",
    "partner-processed-later",
    "partner-deleted",
    "partner-never",
    "partner-other-partition",
    "partner-null-key",
    "joined-stale",
    "joined-deleted",
    "partner-outside-window",
    "partner-expired",
    "late",
    "null-key",
    "null-value",
    "no-result",
    "null-foreign-key",
    "stale-response",
    "foreign-key-changed",
    "empty-foreign-value",
)
"""The verdicts of :meth:`kjoin.spark.SparkRun.why` (``no-result``: the record, by the join's
rules, produces no result of its own, e.g. a table update in a stream-table join).

Co-partitioning (:mod:`kjoin.spark.debug.audit`), looked at before anything else, across every partition of the
other side:

* ``partner-other-partition``: the partner the record would have found, had every record of the key been in
  one partition, is in another partition (a record not in its key's partition: the partner, or this record);
* ``joined-stale``: the record joined an older value of its key, because a later update (before the record,
  by timestamp) went to another partition; ``joined-deleted``: the same with a tombstone, so the record joined
  a value that had been deleted;
* ``partner-null-key``: no record of the other side has the key, but a record with a null key names it in its
  value: its producer dropped the key, and Kafka Streams skipped it.

A foreign-key join's own (:mod:`kjoin.spark.debug.fk`):

* ``null-foreign-key``: the foreign-key extractor returned null for the left value. A left join
  emits the row with a null right value (Kafka 3.7 on, KIP-962); an inner join, and a left join
  before 3.7, skips the update (from 3.9.1 and 4.0.1 an inner join still unsubscribes the row
  from its old foreign key, deleting its old result: ``fk_inner_follows_null_foreign_keys``).
* ``stale-response``: the response to the record's subscription came back after the left row
  had changed again; its hash no longer matched the current value, so it was dropped.
* ``foreign-key-changed`` (a result's reason only): the null result a left join of Kafka 3.7.0
  to 3.9.0 and 4.0.0 emits when a row moves to another foreign key, the old foreign key's answer
  to its unsubscription (KAFKA-16394; not ``fk_change_only_unsubscribes``).
* ``empty-foreign-value`` (a result's reason only): the right value serializes to zero bytes
  (the String serde's ``""``), and a subscription response writes a missing right value as zero
  bytes too, so the left task reads it as null (:mod:`kjoin.serde`): a left join's result with a
  null right value.

For a foreign-key join the ``partner-*`` verdicts are about the lookup of the foreign key at
its task, which the subscription reaches wherever the left row is: ``partner-other-partition``
does not apply."""

ARRIVAL_NOTE = (
    "kjoin assumes both input partitions of the task had records buffered, as Kafka Streams does when "
    "max.task.idle.ms lets the task wait; if the other side's partition lagged (a consumer behind, a producer "
    "late), Kafka may have processed this record before records with earlier timestamps arrived"
)


def arrival_note(config: Scenario | None, side: str, partition: int, ts: int, before: Record | None = None) -> str:
    """Why a record of ``side`` in ``partition`` (timestamp ``ts``) reached its task late, as a sentence: in a run
    with ``arrival=`` that lags its partition, the lag (the partition named, as a duration) and when the record
    reached the task, at the earliest (``before``: the record it came after); else :data:`ARRIVAL_NOTE`, the caveat
    of a run that assumes every partition buffered."""
    arrival = config.arrival if config is not None else None
    lag = arrival.lag_ms(side, partition) if arrival is not None else 0
    if lag <= 0:
        return f"{ARRIVAL_NOTE}."
    own = partition if partition in arrival.partition_lags(side) else None
    lagged = lag_text(side, lag, own)
    text = (
        f"{lagged[0].upper()}{lagged[1:]} in this run: the record reached its task at {when(ts + lag)} at the earliest"
    )
    if before is not None and ts + lag > before.ts:
        text += f", {duration(ts + lag - before.ts)} after the {before.side.value} record's timestamp"
    return text + ", and with max.task.idle.ms = 0 the task processed what it had."


def span(lo: int, hi: int) -> str:
    """A join window's bounds, both inclusive."""
    return f"[{when(lo)}, {when(hi)}]" if abs(lo) >= DATE_FROM_MS else f"[{lo}, {hi}]"


@dataclass(frozen=True)
class Partner:
    """A record of the other side with the same key."""

    side: str
    partition: int
    offset: int
    ts: int
    value: Any
    step: int | None = None
    """Its step in the task's processing order (same partition only)."""
    home: int | None = None
    """The partition its key belongs in (:mod:`kjoin.spark.debug.audit`); ``None`` for a null key or when unknown."""
    key: Any = None
    """Its key, when it is not the record's own (the next record of a partition, which a tie is told by)."""

    @property
    def misrouted(self) -> bool:
        """Whether it is not in its key's partition."""
        return self.home is not None and self.home != self.partition

    def describe(self) -> str:
        what = "tombstone" if self.value is None else f"record {self.value!r}"
        home = f"; its key belongs in partition {self.home}" if self.misrouted else ""
        return f"{self.side} {what} (partition {self.partition}, offset {self.offset}, {when(self.ts)}{home})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "side": self.side,
            "partition": self.partition,
            "offset": self.offset,
            "ts": self.ts,
            "value": self.value,
            "step": self.step,
            "home": self.home,
        }


@dataclass(frozen=True)
class Diagnosis:
    """Why one input record came out as it did."""

    verdict: str
    text: str
    record: Record
    step: int | None
    """The record's step in its task's processing order."""
    partners: tuple[Partner, ...] = ()
    delay_ms: int | None = None
    """``partner-later``: how much later the partner's timestamp is; ``partner-outside-window``:
    the nearest partner's distance outside the window."""
    records_between: int | None = None
    """``partner-later``/``partner-processed-later``: how many of the task's records were
    processed between this record and its partner."""
    trace: Any = field(default=None, repr=False, compare=False)
    """The key's drill-down (:class:`KeyTrace`) the verdict was read from."""
    blocker: Partner | None = None
    """``partner-processed-later``/``partner-expired``: the record written out of order ahead of the partner in
    its partition (the highest timestamp there), which held the partner back."""
    cause: Partner | None = None
    """The record behind a co-partitioning verdict, named first in :attr:`text`: the record not in its key's
    partition (the partner, or this record itself as a :class:`Partner` of its own side), or the null-key
    record of ``partner-null-key``."""
    repro: Scenario | None = field(default=None, repr=False, compare=False)
    """The records the diagnosis read, as a scenario (:meth:`scenario`); set by ``SparkRun.why``."""

    def __str__(self) -> str:
        return f"{self.verdict}: {self.text}"

    def scenario(self, name: str | None = None, one_task: bool = False) -> Scenario:
        """This record's drill-down as a kjoin :class:`~kjoin.scenario.Scenario` (:mod:`kjoin.spark.debug.repro`):
        ``kjoin.run`` and the Stepper take it, ``kjoin run`` its YAML (``yaml.safe_dump(d.scenario().to_dict())``).
        ``one_task=True``: the record's task alone, as one partition, which ``kjoin export --junit`` takes (a
        TopologyTestDriver runs one task). ``name``: the scenario's name (default: the record's place)."""
        if self.repro is None:
            raise ValueError("this diagnosis was not made by SparkRun.why, so it has no records to reproduce")
        r = self.record
        name = name or f"{r.side.value} partition {r.partition} offset {r.offset}"
        if not one_task:
            return replace(self.repro, name=name)
        from .repro import record_scenario

        return record_scenario(self.repro, self.repro.events, None, r.key, name=name, one_task=r.partition)


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

    def state_at(self, step: int) -> Any:
        if step < 0:
            step += len(self.steps)
        if not 0 <= step < len(self.steps):
            raise IndexError(f"step {step} is outside this trace (0 to {len(self.steps) - 1})")
        return StateSnapshot(self._states[step], step, self.task, frozenset({self.task}))

    def initial_state(self) -> Any:
        return StateSnapshot({}, -1, self.task, frozenset({self.task}))

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


# -- locating the key's records in the task's processing order (Spark) --------------------------
@dataclass(frozen=True)
class _Placed:
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


def _rank(side: str) -> int:
    return 0 if side == "left" else 1


def _decode(value: Any, as_json: bool) -> Any:
    return json.loads(value) if as_json and value is not None else value


def stand_in_key(key: Any) -> Any:
    """A key other than ``key`` of the same type, for the clock records."""
    if isinstance(key, bool) or not isinstance(key, int):
        return f"{key}\u0000(other keys)" if isinstance(key, str) else "\u0000(other keys)"
    return key + 1 if key < 2**63 - 1 else key - 1


def key_trace(
    config: Scenario,
    partition: int,
    key: Any,
    placed: Sequence[_Placed],
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


# -- the diagnosis ---------------------------------------------------------------------------------
def diagnose(
    record: Record,
    config: Scenario,
    trace: KeyTrace | None,
    elsewhere: Sequence[Partner],
    same: Sequence[Partner],
    home: int | None = None,
    null_key_partner: Callable[[], Partner | None] | None = None,
    find_blocker: Callable[[Partner, int], Partner | None] | None = None,
    taken_before: Callable[[int], Partner | None] | None = None,
    next_after: Callable[[int], Partner | None] | None = None,
) -> Diagnosis:
    """The verdict for ``record`` read from its key's drill-down ``trace``. ``same``: the other
    side's records of the key in the record's partition (with steps); ``elsewhere``: in other
    partitions; ``home``: the partition the record's key belongs in (partners carry theirs). Every partition
    of the other side is looked at first (:func:`_co_partitioning_verdict`). ``null_key_partner``: finds a
    null-key record of the other side that names the key, asked only when no record of the key exists there.
    ``find_blocker(partner, ts)``: the record ahead of ``partner`` in its partition with the highest timestamp
    above ``ts`` (what held it back), asked only for ``partner-processed-later`` and ``partner-expired``.
    ``taken_before(step)``: the task's record at ``step - 1`` (``None`` at 0), asked only when a partner with the
    same timestamp was processed after the record (the tie Kafka's ``PartitionGroup`` broke)."""
    side = record.side
    other_side = "right" if side is Side.LEFT else "left"
    who = (
        f"{side.value} record (partition {record.partition}, offset {record.offset}, key {record.key!r}, "
        f"{when(record.ts)})"
    )
    if record.key is None:
        return Diagnosis(
            "null-key",
            f"The {who} has a null key: Kafka Streams cannot join or store it, so it is skipped (or forwarded "
            "with null by an outer side, from 3.7).",
            record,
            None,
        )
    step = _record_step(trace, record)
    task_step = trace.task_steps[step.index] if step is not None else None  # type: ignore[union-attr]
    if step is None:
        raise ValueError(f"{who}: not found in its key's drill-down")
    assert trace is not None
    if step.reason is Reason.NULL_VALUE:
        return Diagnosis(
            "null-value",
            f"The {who} has a null value: a stream record with a null value is skipped.",
            record,
            task_step,
            trace=trace,
        )
    me = Partner(side.value, record.partition, record.offset, record.ts, record.value, task_step, home)
    kind = verdicts_of(config)
    produced = _produced(trace, step)
    matched = [o for o in produced if o.kind is OutputKind.JOINED]
    if matched and kind.looks_up_latest:
        found = _co_partitioning_verdict(
            record, who, other_side, config, task_step, trace, elsewhere, same, me, bool(matched)
        )
        if found is not None:
            return found
    if matched:
        partner_value = matched[0].right if side is Side.LEFT else matched[0].left
        return Diagnosis(
            "joined",
            f"The {who} joined: {len(matched)} result(s), the first with {other_side} value {partner_value!r}.",
            record,
            task_step,
            tuple(same),
            trace=trace,
        )
    if (
        step.fate is Fate.DROPPED
        and step.reason in (Reason.EXPIRED_PUT,)
        or step.reason is Reason.EXPIRED
        and not produced
    ):
        return _late(record, who, me, task_step, trace, same, find_blocker, config)
    nulls = [o for o in produced if o.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED)] or [
        o for o in produced if (o.right if side is Side.LEFT else o.left) is None
    ]
    later = _joined_by_later_partner(record, config, step, trace)
    if (nulls and kind.looks_up_latest) or (not kind.looks_up_latest and not matched and later is None):
        found = _co_partitioning_verdict(record, who, other_side, config, task_step, trace, elsewhere, same, me, False)
        if found is not None:
            return found
    if not nulls and later is not None:
        return _joined_later(record, who, other_side, later, task_step, trace, same)
    if not nulls and step.reason in _NO_RESULT_OF_ITS_OWN:
        return Diagnosis(
            "no-result",
            f"The {who} produced no result of its own: {step.explain}",
            record,
            task_step,
            tuple(same),
            trace=trace,
        )
    lost = null_key_partner() if not same and not elsewhere and null_key_partner is not None else None
    if lost is not None:
        return _partner_null_key(record, who, other_side, lost, task_step, trace)
    return _partner_verdict(
        record, who, other_side, config, step, task_step, trace, elsewhere, same, find_blocker, taken_before, next_after
    )


def _partner_null_key(
    record: Record, who: str, other_side: str, lost: Partner, task_step: int | None, trace: KeyTrace
) -> Diagnosis:
    """No record of the other side has the key, but a null-key one names it in its value: its producer lost the
    key."""
    return Diagnosis(
        "partner-null-key",
        f"No {other_side} record has key {record.key!r}, but the {lost.describe()} has a null key and "
        f"names {record.key!r} in its value: its producer wrote it without its key, and Kafka Streams "
        f"skipped it, so the {who} found no partner.",
        record,
        task_step,
        (lost,),
        trace=trace,
        cause=lost,
    )


_NO_RESULT_OF_ITS_OWN = (
    Reason.TABLE_UPDATE,
    Reason.NOT_A_TRIGGER,
    Reason.NOTHING_TO_DELETE,
    Reason.RECORD_CACHE,
    Reason.GRACE_PERIOD,
    Reason.WINDOW_OPEN,
)
"""The reasons of a record that produced no result of its own, by design (not for want of a partner)."""


def _record_step(trace: KeyTrace | None, record: Record) -> Step | None:
    """The step of the key's drill-down that processed ``record``."""
    if not trace:
        return None
    return next(
        (
            s
            for s in trace.steps
            if s.record.key == record.key and s.record.side is record.side and s.record.offset == record.offset
        ),
        None,
    )


def _produced(trace: KeyTrace, step: Step) -> list:
    """The results ``step``'s record produced: at its own step, and later ones carrying its value (a held
    outer-join result, a result emitted when a partner arrived)."""
    mine = [
        o
        for s in trace.steps
        for o in s.outputs
        if o.origin_step == step.index or (s.index == step.index and o.origin_step is None)
    ]
    own = [o for o in step.outputs]
    return [o for o in {id(o): o for o in (*own, *mine)}.values()]


def _late(
    record: Record,
    who: str,
    me: Partner,
    task_step: int | None,
    trace: KeyTrace,
    same: Sequence[Partner],
    find_blocker: Callable[[Partner, int], Partner | None] | None,
    config: Scenario | None = None,
) -> Diagnosis:
    """A record that came after its window (or history) had closed, and what held it back: written out of order, or
    (in a run with ``arrival=``) its partition's lag."""
    blocker = find_blocker(me, record.ts) if find_blocker is not None else None
    held = (
        f"it was written out of order: the {blocker.describe()} is ahead of it in its partition with a "
        f"timestamp {duration(blocker.ts - record.ts)} later."
        if blocker is not None
        else arrival_note(config, record.side.value, record.partition, record.ts)
    )
    return Diagnosis(
        "late",
        f"The {who} came after its window (or history) had closed: stream time was already past it; it was "
        f"skipped; " + held,
        record,
        task_step,
        tuple(same),
        trace=trace,
        blocker=blocker,
    )


def _joined_later(
    record: Record,
    who: str,
    other_side: str,
    later: Step,
    task_step: int | None,
    trace: KeyTrace,
    same: Sequence[Partner],
) -> Diagnosis:
    """A stream-stream record joined by a partner processed after it (which found it in the window store)."""
    partner = later.record
    at = trace.task_steps[later.index]
    between = "some" if task_step is None or at is None else at - task_step - 1
    return Diagnosis(
        "joined",
        f"The {who} joined when its {other_side} partner (offset {partner.offset}, {when(partner.ts)}) was "
        f"processed {between} record(s) later and found it in the window store.",
        record,
        task_step,
        tuple(same),
        trace=trace,
    )


def _co_partitioning_verdict(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    task_step: int | None,
    trace: KeyTrace,
    elsewhere: Sequence[Partner],
    same: Sequence[Partner],
    me: Partner,
    joined: bool,
) -> Diagnosis | None:
    """The verdict had every record of the key been in one partition, where that differs from what the task
    saw: a partner in another partition (``partner-other-partition``), or a lookup that found an older value or
    a deleted one because the key's later update or tombstone went elsewhere (``joined-stale``,
    ``joined-deleted``). ``None``: the other partitions change nothing."""
    if not elsewhere:
        return None
    blame = _Blame(me, who, other_side)
    return verdicts_of(config).co_partitioning(
        record, who, other_side, config, task_step, trace, elsewhere, same, blame, joined
    )


class _Blame:
    """Which record of a pair the co-partitioning verdicts blame: the partner if it is misrouted or the record is
    not, else the record itself."""

    def __init__(self, me: Partner, who: str, other_side: str) -> None:
        self.me, self.who, self.other_side = me, who, other_side

    def culprit(self, partner: Partner) -> Partner:
        return partner if partner.misrouted or not self.me.misrouted else self.me

    def placement(self, partner: Partner) -> str:
        blamed = self.culprit(partner)
        if blamed is self.me:
            return (
                f"the {self.who} is not in its key's partition {self.me.home}, where the key's {self.other_side} "
                "records are: its task never sees them. "
            )
        return f"the {partner.describe()} went to another partition: the task of the {self.who} never sees it. "


def _windowed_co_partitioning(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    task_step: int | None,
    trace: KeyTrace,
    elsewhere: Sequence[Partner],
    same: Sequence[Partner],
    blame: _Blame,
    joined: bool,
) -> Diagnosis | None:
    """A stream-stream record without a partner: one inside its window in another partition, or none inside it
    anywhere (``None`` for a record that joined: a window holds every partner, so another partition's changes
    nothing it found)."""
    if joined:
        return None
    lo, hi = _window_bounds(record, config.window)
    inside = [p for p in elsewhere if lo <= p.ts <= hi and p.value is not None]
    if inside:
        first = min(inside, key=lambda p: (p.ts, p.partition, p.offset))
        return Diagnosis(
            "partner-other-partition",
            "Not co-partitioned: "
            + blame.placement(first)
            + f"It is inside the join window {span(lo, hi)} of the {who} "
            f"({len(inside)} {other_side} record(s) of the key are, all in other partitions).",
            record,
            task_step,
            (blame.culprit(first), *(p for p in inside if p is not first)),
            trace=trace,
            cause=blame.culprit(first),
        )
    if not same:
        nearest = min(elsewhere, key=lambda p: min(abs(p.ts - lo), abs(p.ts - hi)))
        distance = lo - nearest.ts if nearest.ts < lo else nearest.ts - hi
        return Diagnosis(
            "partner-outside-window",
            f"Two reasons: every {other_side} record with key {record.key!r} is in another partition than the "
            f"{who} (" + ", ".join(p.describe() for p in elsewhere[:3]) + "), and all lie outside its join "
            f"window {span(lo, hi)}; the nearest is {duration(distance)} outside it, so even in one partition they "
            "would not join.",
            record,
            task_step,
            (nearest, *(p for p in elsewhere if p is not nearest)),
            delay_ms=distance,
            trace=trace,
            cause=blame.culprit(nearest),
        )
    return None


def _table_co_partitioning(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    task_step: int | None,
    trace: KeyTrace,
    elsewhere: Sequence[Partner],
    same: Sequence[Partner],
    blame: _Blame,
    joined: bool,
) -> Diagnosis | None:
    """A table lookup: the key's latest value before the record (by timestamp) in another partition, which it missed
    (a null partner, a stale or deleted value joined)."""
    seen = [p for p in same if p.step is not None and task_step is not None and p.step < task_step]
    last = max(seen, key=lambda p: p.step) if seen else None
    earlier = [p for p in elsewhere if p.ts <= record.ts]
    if not earlier:
        if same or not joined and not any(p.value is not None for p in elsewhere):
            return None
        first = min(elsewhere, key=lambda p: (p.ts, p.partition, p.offset))
        return Diagnosis(
            "partner-other-partition",
            "Not co-partitioned: " + blame.placement(first) + f"No {other_side} record with key {record.key!r} is in "
            f"partition {record.partition}, the {who}'s.",
            record,
            task_step,
            (blame.culprit(first), *(p for p in elsewhere if p is not first)),
            trace=trace,
            cause=blame.culprit(first),
        )
    missed = max(earlier, key=lambda p: (p.ts, p.offset))
    if last is not None and missed.ts <= last.ts:
        return None
    cause = blame.culprit(missed)
    if joined:
        found = f"the {last.describe()}" if last is not None else "an older value"
        if missed.value is None:
            return Diagnosis(
                "joined-deleted",
                "Not co-partitioned: "
                + blame.placement(missed)
                + f"It deleted the key before the {who} (by timestamp), "
                f"but the {who} joined {found}, a value that no longer existed.",
                record,
                task_step,
                (cause, *([last] if last is not None else [])),
                trace=trace,
                cause=cause,
            )
        return Diagnosis(
            "joined-stale",
            "Not co-partitioned: " + blame.placement(missed) + f"It was the key's latest {other_side} value before the "
            f"{who} (by timestamp), but the {who} joined {found}, an older one.",
            record,
            task_step,
            (cause, *([last] if last is not None else [])),
            trace=trace,
            cause=cause,
        )
    if missed.value is None:
        return Diagnosis(
            "partner-deleted",
            f"The key's latest {other_side} record before the {who} is a tombstone in another partition "
            f"({missed.describe()}): the key was deleted, so a null partner is what one partition would have "
            "given too; the topics are still not co-partitioned for this key.",
            record,
            task_step,
            (cause,),
            trace=trace,
            cause=cause,
        )
    return Diagnosis(
        "partner-other-partition",
        "Not co-partitioned: "
        + blame.placement(missed)
        + f"It was the key's latest {other_side} value before the {who} "
        "(by timestamp), so in one partition the record would have joined it.",
        record,
        task_step,
        (cause, *(p for p in elsewhere if p is not missed)),
        trace=trace,
        cause=cause,
    )


def _window_bounds(record: Record, window: Any) -> tuple[int, int]:
    """The timestamps of the other side's records that ``record`` joins with (both bounds inclusive)."""
    if record.side is Side.LEFT:
        return record.ts - window.before_ms, record.ts + window.after_ms
    return record.ts - window.after_ms, record.ts + window.before_ms


def _partner_verdict(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    step: Step,
    task_step: int | None,
    trace: KeyTrace,
    elsewhere: Sequence[Partner],
    same: Sequence[Partner],
    find_blocker: Callable[[Partner, int], Partner | None] | None = None,
    taken_before: Callable[[int], Partner | None] | None = None,
    next_after: Callable[[int], Partner | None] | None = None,
) -> Diagnosis:
    """The verdict from the other side's records of the key: none here (elsewhere or nowhere), or what the kind's
    :attr:`JoinVerdicts.partners` reads from those in the record's partition (outside the window, expired, deleted
    before, or processed after the record)."""
    if not same:
        if elsewhere:
            parts = sorted({p.partition for p in elsewhere})
            return Diagnosis(
                "partner-other-partition",
                f"No {other_side} record with key {record.key!r} is in partition {record.partition}, but "
                f"{len(elsewhere)} are in partition(s) "
                f"{', '.join(map(str, parts))}: the topics are not co-partitioned for this key (a different key "
                "serializer or partitioner "
                f"on one producer), so the task that holds this record never sees its partner.",
                record,
                task_step,
                tuple(elsewhere[:10]),
                trace=trace,
            )
        return Diagnosis(
            "partner-never",
            f"No {other_side} record with key {record.key!r} exists in any partition: the partner never arrived.",
            record,
            task_step,
            trace=trace,
        )
    return verdicts_of(config).partners(
        record, who, other_side, config, step, task_step, trace, same, find_blocker, taken_before, next_after
    )


def _table_partner_verdict(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    step: Step,
    task_step: int | None,
    trace: KeyTrace,
    same: Sequence[Partner],
    find_blocker: Callable[[Partner, int], Partner | None] | None,
    taken_before: Callable[[int], Partner | None] | None = None,
    next_after: Callable[[int], Partner | None] | None = None,
) -> Diagnosis:
    """A table lookup's partners in the record's partition: deleted before the record, or processed after it."""
    before = [p for p in same if p.step is not None and task_step is not None and p.step < task_step]
    after = [
        p for p in same if p.step is not None and task_step is not None and p.step > task_step and p.value is not None
    ]
    if before:
        last = max(before, key=lambda p: p.step)
        if last.value is None:
            return Diagnosis(
                "partner-deleted",
                f"The {other_side} record with key {record.key!r} was deleted before the {who} was processed: a "
                "tombstone "
                f"(offset {last.offset}, {when(last.ts)}) came {task_step - last.step - 1} record(s) earlier.",
                record,
                task_step,
                (last,),
                trace=trace,
            )
    if after:
        first = min(after, key=lambda p: p.step)
        return _later(record, who, other_side, first, task_step, trace, find_blocker, taken_before, config, next_after)
    return Diagnosis("no-result", f"The {who}: {step.explain}", record, task_step, tuple(same), trace=trace)


def _windowed_partner_verdict(
    record: Record,
    who: str,
    other_side: str,
    config: Scenario,
    step: Step,
    task_step: int | None,
    trace: KeyTrace,
    same: Sequence[Partner],
    find_blocker: Callable[[Partner, int], Partner | None] | None,
    taken_before: Callable[[int], Partner | None] | None = None,
    next_after: Callable[[int], Partner | None] | None = None,
) -> Diagnosis:
    """A stream-stream record's partners in its partition: all outside its window, expired before they were
    processed, processed later, or inside it without joining."""
    window = config.window
    lo, hi = _window_bounds(record, window)
    inside = [p for p in same if lo <= p.ts <= hi and p.value is not None]
    if not inside:
        nearest = min(same, key=lambda p: min(abs(p.ts - lo), abs(p.ts - hi)))
        distance = lo - nearest.ts if nearest.ts < lo else nearest.ts - hi
        return Diagnosis(
            "partner-outside-window",
            f"The {other_side} records with key {record.key!r} are all outside the join window {span(lo, hi)} "
            f"of the {who}; the nearest "
            f"(offset {nearest.offset}, {when(nearest.ts)}) is {duration(distance)} outside it.",
            record,
            task_step,
            (nearest,),
            delay_ms=distance,
            trace=trace,
        )
    late = [p for p in inside if p.step is not None and task_step is not None and p.step > task_step]
    partner_steps = {s.record.offset: s for s in trace.key_steps() if s.record.side.value == other_side}
    expired = [
        p
        for p in late
        if p.offset in partner_steps and partner_steps[p.offset].reason in (Reason.EXPIRED, Reason.EXPIRED_PUT)
    ]
    if expired or (late and len(late) == len(inside) and _closed_before(trace, step, late[0])):
        p = (expired or late)[0]
        blocker = find_blocker(p, p.ts) if find_blocker is not None else None
        held = (
            f" It was written out of order: the {blocker.describe()} is ahead of it in partition "
            f"{blocker.partition} with a timestamp {duration(blocker.ts - p.ts)} later, so the task reached it "
            "only after stream time had passed its window."
            if blocker is not None
            else " " + arrival_note(config, other_side, p.partition, p.ts)
        )
        return Diagnosis(
            "partner-expired",
            f"The {other_side} record (offset {p.offset}, {when(p.ts)}) is inside the window of the {who} but "
            "was processed after the window "
            f"closed plus grace ({duration(window.effective_grace_ms)}): the {record.side.value} record had "
            "left the window store." + held,
            record,
            task_step,
            (p,),
            trace=trace,
            blocker=blocker,
        )
    if late:
        p = late[0]
        return _later(record, who, other_side, p, task_step, trace, find_blocker, taken_before, config, next_after)
    return Diagnosis(
        "no-result",
        f"The {who} has partners inside its window but none joined: {step.explain}",
        record,
        task_step,
        tuple(inside),
        trace=trace,
    )


def _joined_by_later_partner(record: Record, config: Scenario, step: Step, trace: KeyTrace) -> Step | None:
    """A windowed join: the later step of the other side whose lookup found this record."""
    window = config.window
    if window is None:
        return None
    lo, hi = (
        (record.ts - window.before_ms, record.ts + window.after_ms)
        if record.side is Side.LEFT
        else (record.ts - window.after_ms, record.ts + window.before_ms)
    )
    for later in trace.steps[step.index + 1 :]:
        if later.record.key != record.key or later.record.side is record.side or not lo <= later.record.ts <= hi:
            continue
        for output in later.outputs:
            mine = output.left if record.side is Side.LEFT else output.right
            if output.kind is OutputKind.JOINED and mine == record.value:
                return later
    return None


def _closed_before(trace: KeyTrace, step: Step, partner: Partner) -> bool:
    """Whether the record's held null result was emitted (its window closed) before the partner came."""
    emitted = [
        s for s in trace.steps for o in s.outputs if o.origin_step == step.index and o.kind is OutputKind.WINDOW_CLOSED
    ]
    if not emitted:
        return False
    at = trace.task_steps[emitted[0].index]
    return at is None or partner.step is None or at < partner.step


def _later(
    record: Record,
    who: str,
    other_side: str,
    partner: Partner,
    task_step: int | None,
    trace: KeyTrace,
    find_blocker: Callable[[Partner, int], Partner | None] | None = None,
    taken_before: Callable[[int], Partner | None] | None = None,
    config: Scenario | None = None,
    next_after: Callable[[int], Partner | None] | None = None,
) -> Diagnosis:
    between = None if task_step is None or partner.step is None else partner.step - task_step - 1
    if partner.ts == record.ts and taken_before is not None and task_step is not None:
        return _tie(record, who, other_side, partner, task_step, between, trace, taken_before, config)
    head = next_after(task_step) if next_after is not None and task_step is not None else None
    if (
        partner.ts < record.ts
        and head is not None
        and head.ts == record.ts
        and head.offset <= partner.offset
        and taken_before is not None
        and task_step is not None
    ):  # an earlier partner behind a record that tied with this one (kjoin.ordering.ties_taken_first)
        return _tie(record, who, other_side, partner, task_step, between, trace, taken_before, config, head)
    if partner.ts >= record.ts:
        delay = partner.ts - record.ts
        return Diagnosis(
            "partner-later",
            f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) was "
            f"processed after the {who}: "
            f"its timestamp is {duration(delay)} later, and {between} record(s) of the task came between them.",
            record,
            task_step,
            (partner,),
            delay_ms=delay,
            records_between=between,
            trace=trace,
        )
    blocker = find_blocker(partner, record.ts) if find_blocker is not None else None
    if blocker is not None:
        held = (
            f"the {blocker.describe()} is ahead of it in partition {blocker.partition}: it was written "
            f"{duration(blocker.ts - partner.ts)} out of order (its timestamp that much later than the partner's, "
            f"{duration(blocker.ts - record.ts)} after the {record.side.value} record's), and the task takes, of its "
            "two input partitions, the one whose next record has the lower timestamp, so it took the "
            f"{record.side.value} record first."
        )
    elif config is not None and config.arrival is not None and config.arrival.lag_ms(other_side, partner.partition):
        held = arrival_note(config, other_side, partner.partition, partner.ts, record)
    else:
        held = (
            "the task takes, of its two input partitions, the one whose next record has the lower timestamp, and a "
            f"record with a higher timestamp ahead of it in the {other_side} partition held it back. {ARRIVAL_NOTE}."
        )
    return Diagnosis(
        "partner-processed-later",
        f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) has a "
        f"timestamp {duration(record.ts - partner.ts)} earlier than the {who}, but the task processed it "
        f"{between} record(s) later: " + held,
        record,
        task_step,
        (partner, *([blocker] if blocker is not None else [])),
        delay_ms=partner.ts - record.ts,
        records_between=between,
        trace=trace,
        blocker=blocker,
    )


def _tie(
    record: Record,
    who: str,
    other_side: str,
    partner: Partner,
    task_step: int,
    between: int | None,
    trace: KeyTrace,
    taken_before: Callable[[int], Partner | None],
    config: Scenario | None,
    head: Partner | None = None,
) -> Diagnosis:
    """A partner with the record's own timestamp processed after it, or (``head``: the other partition's next
    record, which had the record's timestamp) an earlier partner behind such a record: the tie Kafka's
    ``PartitionGroup`` broke (:class:`kjoin.ordering.TakenFirst` says how, as the reference engine's step does), or
    the arrival that kept the partner out of the task."""
    before = taken_before(task_step)
    previous = None if before is None else Record(Side(before.side), None, before.value, before.ts, 0, before.offset)
    as_record = Record(Side(other_side), record.key, partner.value, partner.ts, partner.partition, partner.offset)
    ahead = as_record
    if head is not None:
        ahead = Record(Side(other_side), head.key, head.value, head.ts, head.partition, head.offset)
    arrival = config.arrival if config is not None else None
    lag = arrival.lag_ms(other_side, partner.partition) if arrival is not None else 0
    own = partner.partition if arrival is not None and partner.partition in arrival.partition_lags(other_side) else None
    taken = TakenFirst(other_side, ahead, as_record, previous, lag, False, own)
    earlier = partner.ts < record.ts
    return Diagnosis(
        "partner-processed-later" if earlier else "partner-later",
        f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) was "
        f"processed after the {who}, {between} record(s) later, though its timestamp is "
        + (f"{duration(record.ts - partner.ts)} earlier. " if earlier else "the same. ")
        + taken.explain(record),
        record,
        task_step,
        (partner,) if head is None else (partner, head),
        delay_ms=partner.ts - record.ts,
        records_between=between,
        trace=trace,
        blocker=head,
    )


# -- the kinds: what differs between joins, one entry each ------------------------------------------
@dataclass(frozen=True)
class JoinVerdicts:
    """How one kind of join explains its records: the shape every kind fills (:mod:`kjoin.spark.debug.kinds`
    lists the entries). :func:`diagnose` runs the shared steps (a null key, a null value, a result, a late record,
    a partner that joined later) and asks the kind's hooks where kinds differ."""

    name: str
    serves: Callable[[Scenario], bool]
    """Whether this kind explains the join of ``config`` (the first entry of :data:`kjoin.spark.debug.kinds.KINDS`
    that serves it does)."""
    null_verdicts: Callable[[Scenario], tuple[str, ...]]
    """The verdicts a result with a null partner can have (the summary's columns; an inner join has none)."""
    lookup_verdicts: tuple[str, ...] = ()
    """The verdicts of a result that joined something other than what one partition would have given."""
    forwards_null_keys: bool = True
    """Whether a left or outer join of this kind forwards a null-key record with null (KIP-962's ``null-key``)."""
    audited: bool = True
    """Whether a record of this kind must be in its key's partition (the co-partitioning audit applies)."""
    looks_up_latest: bool = False
    """A lookup of the latest value (a table): a record that joined may have joined a stale value, and a null
    result is checked against the other partitions; ``False``: a window holds every partner in it."""
    co_partitioning: Callable[..., Diagnosis | None] | None = None
    """``(record, who, other_side, config, task_step, trace, elsewhere, same, blame, joined)``: the verdict had every
    record of the key been in one partition, where it differs (``None``: it does not)."""
    partners: Callable[..., Diagnosis] | None = None
    """``(record, who, other_side, config, step, task_step, trace, same, find_blocker, taken_before, next_after)``:
    the verdict read from the other side's records of the key in the record's partition."""
    whole_trace: Callable[[Trace, Step, Any], Diagnosis] | None = None
    """``(full, step, drill)``: the verdict of a kind whose records are explained from the whole scenario's trace
    rather than one task's key drill-down (its records cross tasks); ``None``: :func:`diagnose` with the two hooks
    above."""


WINDOWED_NULL_VERDICTS = (
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "partner-outside-window",
    "partner-later",
    "partner-expired",
    "unexplained",
)
TABLE_NULL_VERDICTS = (
    "partner-later",
    "partner-processed-later",
    "partner-deleted",
    "partner-never",
    "partner-null-key",
    "partner-other-partition",
    "unexplained",
)

WINDOWED = JoinVerdicts(
    "windowed",
    serves=lambda config: config.window is not None,
    null_verdicts=lambda config: WINDOWED_NULL_VERDICTS,
    co_partitioning=_windowed_co_partitioning,
    partners=_windowed_partner_verdict,
)
"""Stream-stream joins (a join window, both sides stored in window stores)."""

TABLE = JoinVerdicts(
    "table",
    serves=lambda config: config.window is None,
    null_verdicts=lambda config: TABLE_NULL_VERDICTS,
    lookup_verdicts=("joined-stale", "joined-deleted"),
    looks_up_latest=True,
    co_partitioning=_table_co_partitioning,
    partners=_table_partner_verdict,
)
"""Stream-table and table-table joins (a lookup of the table's latest value, plain or versioned)."""


def verdicts_of(config: Scenario) -> JoinVerdicts:
    """The primary-key kind that explains ``config``'s join (:func:`diagnose` reads one record of a task; a
    foreign-key join's verdicts read the whole scenario: :data:`kjoin.spark.debug.fk.FOREIGN_KEY`)."""
    return WINDOWED if WINDOWED.serves(config) else TABLE
