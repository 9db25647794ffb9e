"""Why one input record came out as it did: the verdicts, the :class:`Diagnosis`, and the one shape every kind of join
fills (:class:`JoinVerdicts`).

:meth:`JoinVerdicts.diagnose` runs the steps every primary-key kind shares, in order: a null key, a null value, a
result (checked against the other partitions first when the kind looks up a table's latest value), a late record, a
partner that joined it later, a record that gives no result of its own by design, a partner whose producer dropped
its key, no partner anywhere, then the kind's two hooks, each reading one :class:`Case`: what the other partitions
would have changed (``co_partitioning``) and what the partners in the record's own partition say (``partners``).
The kinds are listed in :mod:`kjoin.spark.debug.kinds` (:mod:`~kjoin.spark.debug.windowed`,
:mod:`~kjoin.spark.debug.table`, :mod:`~kjoin.spark.debug.fk`); the drill-down they read is
:mod:`kjoin.spark.debug.key_trace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from ...fates import Fate, Reason
from ...ordering import TakenFirst
from ...records import OutputKind, Record, Side
from ...scenario import Scenario
from ...times import DATE_FROM_MS, duration, lag_text, when
from ...trace import Step, Trace
from .key_trace import KeyTrace

__all__ = [
    "VERDICTS", "ARRIVAL_NOTE", "arrival_note", "span", "Partner", "Diagnosis", "Case", "JoinVerdicts",
    "window_bounds", "processed_later",
]  # fmt: skip

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


# -- one record under diagnosis ------------------------------------------------------------------
Finder = Callable[[int], "Partner | None"]


@dataclass(frozen=True)
class Case:
    """One record under diagnosis, found in its key's drill-down: what the shared steps and a kind's hooks read.

    ``same``: the other side's records of the key in the record's partition (with their steps); ``elsewhere``: in
    other partitions; ``me``: the record as a :class:`Partner` (its step and its key's partition).
    ``find_blocker(partner, ts)``: the record ahead of ``partner`` in its partition with the highest timestamp above
    ``ts`` (what held it back); ``taken_before(step)``: the task's record at ``step - 1``; ``next_after(step)``: the
    other side's next record in the task after ``step``. Each is asked only when a verdict needs it."""

    record: Record
    config: Scenario
    step: Step
    trace: KeyTrace
    elsewhere: Sequence[Partner]
    same: Sequence[Partner]
    me: Partner
    find_blocker: Callable[[Partner, int], Partner | None] | None = None
    taken_before: Finder | None = None
    next_after: Finder | None = None

    @property
    def who(self) -> str:
        """The record in words, as every verdict's text names it."""
        return _who(self.record)

    @property
    def other_side(self) -> str:
        return "right" if self.record.side is Side.LEFT else "left"

    @property
    def task_step(self) -> int | None:
        """The record's step in its task's processing order."""
        return self.trace.task_steps[self.step.index]

    def verdict(self, verdict: str, text: str, partners: Sequence[Partner] = (), **found: Any) -> Diagnosis:
        """The diagnosis of this record: ``verdict``, its ``text``, the ``partners`` it names, and what else it found
        (``delay_ms``, ``records_between``, ``blocker``, ``cause``)."""
        return Diagnosis(verdict, text, self.record, self.task_step, tuple(partners), trace=self.trace, **found)

    def blocker(self, partner: Partner, ts: int) -> Partner | None:
        return self.find_blocker(partner, ts) if self.find_blocker is not None else None

    def culprit(self, partner: Partner) -> Partner:
        """Which record of a pair a co-partitioning verdict blames: the partner if it is misrouted or the record is
        not, else the record itself."""
        return partner if partner.misrouted or not self.me.misrouted else self.me

    def placement(self, partner: Partner) -> str:
        """The co-partitioning verdict's first sentence: which of the two is not where its key belongs."""
        if self.culprit(partner) is self.me:
            return (
                f"the {self.who} is not in its key's partition {self.me.home}, where the key's {self.other_side} "
                "records are: its task never sees them. "
            )
        return f"the {partner.describe()} went to another partition: the task of the {self.who} never sees it. "


def _who(record: Record) -> str:
    return (
        f"{record.side.value} record (partition {record.partition}, offset {record.offset}, key {record.key!r}, "
        f"{when(record.ts)})"
    )


def window_bounds(record: Record, window: Any) -> tuple[int, int]:
    """The timestamps of the other side's records that ``record`` joins with (both bounds inclusive)."""
    if record.side is Side.LEFT:
        return record.ts - window.before_ms, record.ts + window.after_ms
    return record.ts - window.after_ms, record.ts + window.before_ms


# -- the kinds' shape ----------------------------------------------------------------------------
@dataclass(frozen=True)
class JoinVerdicts:
    """How one kind of join explains its records: the shape every kind fills (:mod:`kjoin.spark.debug.kinds`
    lists the entries). :meth:`diagnose` runs the shared steps (a null key, a null value, a result, a late record,
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
    co_partitioning: Callable[[Case, bool], Diagnosis | None] | None = None
    """``(case, joined)``: the verdict had every record of the key been in one partition, where it differs from what
    the task saw (``None``: it does not); asked only when the key has records of the other side elsewhere."""
    partners: Callable[[Case], Diagnosis] | None = None
    """``(case)``: the verdict read from the other side's records of the key in the record's partition (there is at
    least one)."""
    whole_trace: Callable[[Trace, Step, Any], Diagnosis] | None = None
    """``(full, step, drill)``: the verdict of a kind whose records are explained from the whole scenario's trace
    rather than one task's key drill-down (its records cross tasks); ``None``: :meth:`diagnose` with the two hooks
    above."""

    def diagnose(
        self,
        record: Record,
        config: Scenario,
        trace: KeyTrace | None,
        elsewhere: Sequence[Partner],
        same: Sequence[Partner],
        home: int | None = None,
        null_key_partner: Callable[[], Partner | None] | None = None,
        find_blocker: Callable[[Partner, int], Partner | None] | None = None,
        taken_before: Finder | None = None,
        next_after: Finder | None = None,
    ) -> Diagnosis:
        """The verdict for ``record`` read from its key's drill-down ``trace`` (see :class:`Case` for the
        arguments; ``home``: the partition the record's key belongs in, partners carry theirs). Every partition of
        the other side is looked at first (the ``co_partitioning`` hook). ``null_key_partner``: finds a null-key
        record of the other side that names the key, asked only when no record of the key exists there."""
        who = _who(record)
        if record.key is None:
            return Diagnosis(
                "null-key",
                f"The {who} has a null key: Kafka Streams cannot join or store it, so it is skipped (or forwarded "
                "with null by an outer side, from 3.7).",
                record,
                None,
            )
        step = _record_step(trace, record)
        if step is None:
            raise ValueError(f"{who}: not found in its key's drill-down")
        assert trace is not None
        task_step = trace.task_steps[step.index]
        me = Partner(record.side.value, record.partition, record.offset, record.ts, record.value, task_step, home)
        case = Case(record, config, step, trace, elsewhere, same, me, find_blocker, taken_before, next_after)
        if step.reason is Reason.NULL_VALUE:
            return case.verdict(
                "null-value", f"The {who} has a null value: a stream record with a null value is skipped."
            )
        produced = _produced(trace, step)
        matched = [o for o in produced if o.kind is OutputKind.JOINED]
        if matched and self.looks_up_latest:
            found = self._co_partitioning(case, True)
            if found is not None:
                return found
        if matched:
            partner_value = matched[0].right if record.side is Side.LEFT else matched[0].left
            return case.verdict(
                "joined",
                f"The {who} joined: {len(matched)} result(s), the first with {case.other_side} value "
                f"{partner_value!r}.",
                same,
            )
        if (
            step.fate is Fate.DROPPED
            and step.reason in (Reason.EXPIRED_PUT,)
            or (step.reason is Reason.EXPIRED and not produced)
        ):
            return _late(case)
        nulls = [o for o in produced if o.kind in (OutputKind.UNMATCHED, OutputKind.WINDOW_CLOSED)] or [
            o for o in produced if (o.right if record.side is Side.LEFT else o.left) is None
        ]
        later = _joined_by_later_partner(case)
        if (nulls and self.looks_up_latest) or (not self.looks_up_latest and later is None):
            found = self._co_partitioning(case, False)
            if found is not None:
                return found
        if not nulls and later is not None:
            return _joined_later(case, later)
        if not nulls and step.reason in _NO_RESULT_OF_ITS_OWN:
            return case.verdict("no-result", f"The {who} produced no result of its own: {step.explain}", same)
        lost = null_key_partner() if not same and not elsewhere and null_key_partner is not None else None
        if lost is not None:
            return _partner_null_key(case, lost)
        return self._partner_verdict(case)

    def _co_partitioning(self, case: Case, joined: bool) -> Diagnosis | None:
        if not case.elsewhere or self.co_partitioning is None:
            return None
        return self.co_partitioning(case, joined)

    def _partner_verdict(self, case: Case) -> Diagnosis:
        """The verdict from the other side's records of the key: none here (elsewhere or nowhere), or what the
        kind's ``partners`` hook reads from those in the record's partition."""
        record, other_side = case.record, case.other_side
        if case.same:
            assert self.partners is not None, f"the {self.name} kind reads its verdicts from the whole trace"
            return self.partners(case)
        if case.elsewhere:
            parts = sorted({p.partition for p in case.elsewhere})
            return case.verdict(
                "partner-other-partition",
                f"No {other_side} record with key {record.key!r} is in partition {record.partition}, but "
                f"{len(case.elsewhere)} are in partition(s) "
                f"{', '.join(map(str, parts))}: the topics are not co-partitioned for this key (a different key "
                "serializer or partitioner "
                f"on one producer), so the task that holds this record never sees its partner.",
                case.elsewhere[:10],
            )
        return case.verdict(
            "partner-never",
            f"No {other_side} record with key {record.key!r} exists in any partition: the partner never arrived.",
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


# -- the shared steps ----------------------------------------------------------------------------
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


def _partner_null_key(case: Case, lost: Partner) -> Diagnosis:
    """No record of the other side has the key, but a null-key one names it in its value: its producer lost the
    key."""
    key = case.record.key
    return case.verdict(
        "partner-null-key",
        f"No {case.other_side} record has key {key!r}, but the {lost.describe()} has a null key and "
        f"names {key!r} in its value: its producer wrote it without its key, and Kafka Streams "
        f"skipped it, so the {case.who} found no partner.",
        (lost,),
        cause=lost,
    )


def _late(case: Case) -> Diagnosis:
    """A record that came after its window (or history) had closed, and what held it back: written out of order, or
    (in a run with ``arrival=``) its partition's lag."""
    record = case.record
    blocker = case.blocker(case.me, record.ts)
    held = (
        f"it was written out of order: the {blocker.describe()} is ahead of it in its partition with a "
        f"timestamp {duration(blocker.ts - record.ts)} later."
        if blocker is not None
        else arrival_note(case.config, record.side.value, record.partition, record.ts)
    )
    return case.verdict(
        "late",
        f"The {case.who} came after its window (or history) had closed: stream time was already past it; it was "
        f"skipped; " + held,
        case.same,
        blocker=blocker,
    )


def _joined_by_later_partner(case: Case) -> Step | None:
    """A windowed join: the later step of the other side whose lookup found this record."""
    record, window = case.record, case.config.window
    if window is None:
        return None
    lo, hi = window_bounds(record, window)
    for later in case.trace.steps[case.step.index + 1 :]:
        if later.record.key != record.key or later.record.side is record.side or not lo <= later.record.ts <= hi:
            continue
        for output in later.outputs:
            mine = output.left if record.side is Side.LEFT else output.right
            if output.kind is OutputKind.JOINED and mine == record.value:
                return later
    return None


def _joined_later(case: Case, later: Step) -> Diagnosis:
    """A stream-stream record joined by a partner processed after it (which found it in the window store)."""
    partner = later.record
    at = case.trace.task_steps[later.index]
    task_step = case.task_step
    between = "some" if task_step is None or at is None else at - task_step - 1
    return case.verdict(
        "joined",
        f"The {case.who} joined when its {case.other_side} partner (offset {partner.offset}, {when(partner.ts)}) was "
        f"processed {between} record(s) later and found it in the window store.",
        case.same,
    )


def processed_later(case: Case, partner: Partner) -> Diagnosis:
    """The verdict of a partner in the record's partition that the task processed after the record: a later
    timestamp (``partner-later``), a tie Kafka's ``PartitionGroup`` broke, or an earlier timestamp held back in its
    partition (``partner-processed-later``: by a record written out of order, or by its partition's lag)."""
    record, other_side, task_step = case.record, case.other_side, case.task_step
    between = None if task_step is None or partner.step is None else partner.step - task_step - 1
    if partner.ts == record.ts and case.taken_before is not None and task_step is not None:
        return _tie(case, partner, between)
    head = case.next_after(task_step) if case.next_after is not None and task_step is not None else None
    if (
        partner.ts < record.ts
        and head is not None
        and head.ts == record.ts
        and head.offset <= partner.offset
        and case.taken_before is not None
        and task_step is not None
    ):  # an earlier partner behind a record that tied with this one (kjoin.ordering.ties_taken_first)
        return _tie(case, partner, between, head)
    if partner.ts >= record.ts:
        delay = partner.ts - record.ts
        return case.verdict(
            "partner-later",
            f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) was "
            f"processed after the {case.who}: "
            f"its timestamp is {duration(delay)} later, and {between} record(s) of the task came between them.",
            (partner,),
            delay_ms=delay,
            records_between=between,
        )
    blocker = case.blocker(partner, record.ts)
    config = case.config
    if blocker is not None:
        held = (
            f"the {blocker.describe()} is ahead of it in partition {blocker.partition}: it was written "
            f"{duration(blocker.ts - partner.ts)} out of order (its timestamp that much later than the partner's, "
            f"{duration(blocker.ts - record.ts)} after the {record.side.value} record's), and the task takes, of its "
            "two input partitions, the one whose next record has the lower timestamp, so it took the "
            f"{record.side.value} record first."
        )
    elif config.arrival is not None and config.arrival.lag_ms(other_side, partner.partition):
        held = arrival_note(config, other_side, partner.partition, partner.ts, record)
    else:
        held = (
            "the task takes, of its two input partitions, the one whose next record has the lower timestamp, and a "
            f"record with a higher timestamp ahead of it in the {other_side} partition held it back. {ARRIVAL_NOTE}."
        )
    return case.verdict(
        "partner-processed-later",
        f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) has a "
        f"timestamp {duration(record.ts - partner.ts)} earlier than the {case.who}, but the task processed it "
        f"{between} record(s) later: " + held,
        (partner, *([blocker] if blocker is not None else [])),
        delay_ms=partner.ts - record.ts,
        records_between=between,
        blocker=blocker,
    )


def _tie(case: Case, partner: Partner, between: int | None, head: Partner | None = None) -> Diagnosis:
    """A partner with the record's own timestamp processed after it, or (``head``: the other partition's next
    record, which had the record's timestamp) an earlier partner behind such a record: the tie Kafka's
    ``PartitionGroup`` broke (:class:`kjoin.ordering.TakenFirst` says how, as the reference engine's step does), or
    the arrival that kept the partner out of the task."""
    record, other_side, config = case.record, case.other_side, case.config
    assert case.taken_before is not None and case.task_step is not None
    before = case.taken_before(case.task_step)
    previous = None if before is None else Record(Side(before.side), None, before.value, before.ts, 0, before.offset)
    as_record = Record(Side(other_side), record.key, partner.value, partner.ts, partner.partition, partner.offset)
    ahead = as_record
    if head is not None:
        ahead = Record(Side(other_side), head.key, head.value, head.ts, head.partition, head.offset)
    arrival = config.arrival
    lag = arrival.lag_ms(other_side, partner.partition) if arrival is not None else 0
    own = partner.partition if arrival is not None and partner.partition in arrival.partition_lags(other_side) else None
    taken = TakenFirst(other_side, ahead, as_record, previous, lag, False, own)
    earlier = partner.ts < record.ts
    return case.verdict(
        "partner-processed-later" if earlier else "partner-later",
        f"The {other_side} record with key {record.key!r} (offset {partner.offset}, {when(partner.ts)}) was "
        f"processed after the {case.who}, {between} record(s) later, though its timestamp is "
        + (f"{duration(record.ts - partner.ts)} earlier. " if earlier else "the same. ")
        + taken.explain(record),
        (partner,) if head is None else (partner, head),
        delay_ms=partner.ts - record.ts,
        records_between=between,
        blocker=head,
    )
