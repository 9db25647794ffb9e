"""Debug a foreign-key join: one left key's drill-down, the diagnosis of one record, and a reason
for every result.

A foreign-key join (KIP-213, :mod:`kjoin.joins.foreign_key`) is not a per-task computation: a
left row subscribes to the task of its foreign key, which answers back. On Spark each FK
scenario already runs whole in one group (:mod:`kjoin.spark.passes.fk_task`), so here the whole
scenario runs through the reference engine and the answers are read off its trace:

* :func:`fk_key_trace`: the drill-down of left key ``k`` of partition ``p`` is the whole trace
  restricted to ``k``: ``k``'s left records, the right records of every foreign key ``k``'s
  left values ever name, the delivery of every message about ``k`` (subscriptions from ``k``,
  responses to ``k``), and any other step that emitted a result of ``k``; every state is
  restricted to ``k``'s left row, its subscriptions, the right rows of its foreign keys and the
  messages about it. Exact by construction: nothing is run apart.
* :func:`diagnose_fk`: the verdict for one input record, from the chain of messages it set off.
* :func:`output_reasons`: a ``reason`` for every result (``matched``, ``tombstone`` or, for a
  result with a null right value, the verdict that explains it).
* :data:`FOREIGN_KEY`: the foreign-key join's entry of :mod:`kjoin.spark.debug.kinds` (the shape of
  :class:`kjoin.spark.debug.diagnosis.JoinVerdicts`), whose verdicts read the whole trace.

Foreign keys are compared by their serialized bytes, as Kafka compares them. No verdict here is
``partner-other-partition``: a scenario puts every right record on its key's partition (Kafka's
default partitioner, as the subscription topic is partitioned), so a subscription always reaches
its foreign key's right records.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace
from typing import Any

from ...fates import Reason
from ...joins.fk_protocol import RESPONSE, SUBSCRIPTION, Instruction, Message, extract_foreign_key, fk_bytes
from ...records import OutputKind, Record, Side, render_value
from ...scenario import Scenario
from ...state import DELETED
from ...stores import CLOCK, IN_FLIGHT, SUBSCRIPTIONS
from ...trace import Step, Trace
from .diagnosis import Diagnosis, JoinVerdicts, Partner
from .key_trace import KeyTrace

__all__ = [
    "FkKeyTrace",
    "fk_key_trace",
    "left_partitions",
    "diagnose_fk",
    "output_reasons",
    "fk_null_verdicts",
    "FOREIGN_KEY",
]


def _same(a: Any, b: Any) -> bool:
    """Kafka compares keys by their serialized bytes."""
    if a is None or b is None:
        return a is None and b is None
    return fk_bytes(a) == fk_bytes(b)


def _foreign_key(config: Scenario, value: Any) -> Any:
    return None if value is None else extract_foreign_key(config.foreign_key or "", value)


# -- the drill-down --------------------------------------------------------------------------------
class FkKeyTrace(KeyTrace):
    """One left key's part of a foreign-key join: its steps across every task, with the exact
    states Kafka has for it (the whole scenario's, restricted to the key).

    ``task_steps[i]`` is step ``i``'s index in the whole scenario's trace (the ``step`` of the
    Spark frames); ``foreign_keys`` the foreign keys the key's left values name. A step's
    ``task`` is the task it ran at: the key's partition for its left records and responses, a
    foreign key's partition for subscriptions and right records."""

    def __init__(
        self,
        scenario: Scenario,
        steps: list[Step],
        states: list[dict],
        changes: list[list],
        task_steps: list[int],
        key: Any,
        task: int,
        foreign_keys: tuple[Any, ...],
    ) -> None:
        super().__init__(scenario, steps, states, changes, task_steps, key, task)
        self.foreign_keys = foreign_keys
        self.caveat = None

    def _task_at(self, step: int) -> Any:
        return self.steps[step].task

    def _tasks_seen(self) -> frozenset:
        return frozenset({self.task, *(step.task for step in self.steps)})

    def key_steps(self) -> list[Step]:
        """The key's own left records (right records and message deliveries left out)."""
        return [s for s in self.steps if s.message is None and s.record.side is Side.LEFT]


def fk_key_trace(full: Trace, key: Any, partition: int) -> FkKeyTrace:
    """The drill-down of left key ``key`` of ``partition``: ``full`` (the whole scenario's trace)
    restricted to the key (see the module's docstring). One pass over the trace's changes: the
    restricted state is kept up to date change by change, and copied at the key's steps."""
    config = full.scenario
    is_key = _KeyTest(key)
    fks = {}
    for step in full.steps:
        record = step.record
        if step.message is None and record.side is Side.LEFT and record.partition == partition:
            if is_key(record.key):
                fk = _foreign_key(config, record.value)
                if fk is not None:
                    fks.setdefault(fk_bytes(fk), fk)

    def about(message: Message) -> bool:
        if message.topic == SUBSCRIPTION:
            return message.value.primary_partition == partition and is_key(message.value.pk)
        return message.partition == partition and is_key(message.key)

    def concerns(step: Step) -> bool:
        record = step.record
        if step.message is not None:
            if about(step.message):
                return True
        elif record.side is Side.LEFT:
            if record.partition == partition and is_key(record.key):
                return True
        elif record.key is not None and fk_bytes(record.key) in fks:
            return True
        return any(o.partition == partition and is_key(o.key) for o in step.outputs)

    def keeps(store: Any, entry: Any, row: Any) -> bool:
        """Does the restricted state hold this row (put)?"""
        name = store.name
        if name == CLOCK or name.endswith(CLOCK):
            return True
        if name == SUBSCRIPTIONS:
            return row[0].primary_partition == partition and is_key(entry.pk)
        if name == IN_FLIGHT:
            return about(row)
        first = entry[0] if isinstance(entry, tuple) else entry
        if name.startswith("right"):
            return first is not None and fk_bytes(first) in fks
        # the left table (plain or versioned), a materialized result, their caches: keyed by the left key
        return store.task == partition and is_key(first)

    state = {
        store: {entry: row for entry, row in entries.items() if keeps(store, entry, row)}
        for store, entries in full.initial_state().stores.items()
    }
    steps, states, changes, task_steps = [], [], [], []
    kept: dict[int, int] = {}
    for i, step in enumerate(full.steps):
        mine_changes = []
        for store, entry, row in full.changed_rows(i):
            entries = state.setdefault(store, {})
            if row is DELETED:
                if entry in entries:
                    del entries[entry]
                    mine_changes.append((store, entry, False))
            elif keeps(store, entry, row):
                entries[entry] = row
                mine_changes.append((store, entry, True))
            elif entry in entries:  # a row that no longer concerns the key (never happens in practice)
                del entries[entry]
        if not concerns(step):
            continue
        kept[i] = len(steps)
        mine = tuple(
            replace(o, origin_step=kept.get(o.origin_step, o.origin_step))
            for o in step.outputs
            if o.partition == partition and is_key(o.key)
        )
        steps.append(replace(step, index=kept[i], outputs=mine))
        states.append({store: dict(entries) for store, entries in state.items()})
        changes.append(mine_changes)
        task_steps.append(i)
    events = tuple(
        e
        for e in config.events
        if getattr(e, "side", None) is not None
        and (
            (e.side is Side.LEFT and e.partition == partition and is_key(e.key))
            or (e.side is Side.RIGHT and e.key is not None and fk_bytes(e.key) in fks)
        )
    )
    return FkKeyTrace(
        replace(config, events=events), steps, states, changes, task_steps, key, partition, tuple(fks.values())
    )


def left_partitions(full: Trace, key: Any) -> list[int]:
    """The partitions that hold left records with key ``key``."""
    is_key = _KeyTest(key)
    return sorted(
        {
            s.record.partition
            for s in full.steps
            if s.message is None and s.record.side is Side.LEFT and is_key(s.record.key)
        }
    )


class _KeyTest:
    """``is_key(x)``: is ``x`` the key ``key`` (by its serialized bytes, as Kafka compares keys)?
    Remembers the answer per distinct value."""

    def __init__(self, key: Any) -> None:
        self._bytes = fk_bytes(key)
        self._seen: dict[tuple[type, Any], bool] = {}

    def __call__(self, value: Any) -> bool:
        if value is None:
            return False
        memo = (type(value), value)  # 1, 1.0 and True are one dict key, not one serialized key
        try:
            known = self._seen.get(memo)
        except TypeError:  # an unhashable key: compare it afresh
            return fk_bytes(value) == self._bytes
        if known is None:
            known = self._seen[memo] = fk_bytes(value) == self._bytes
        return known


# -- the index of a whole trace that the diagnoses read --------------------------------------------
class _Chains:
    """Where each message went and what it did, and each foreign key's right records, for one trace."""

    def __init__(self, full: Trace) -> None:
        self.full = full
        self.config = full.scenario
        self.delivered: dict[str, Step] = {}  # message id -> its delivery step
        self.responses: dict[int, list[Step]] = {}  # input step -> the deliveries of the responses it set off
        self.sent_by: dict[int, list[Message]] = {}  # step -> the messages it sent (delivered ones)
        self.rights: dict[bytes, list[Step]] = {}  # foreign key -> its right input steps, in order
        self.lefts: dict[tuple[int, bytes], list[Step]] = {}  # (partition, left key) -> its left input steps
        self.inputs: list[int] = []  # indexes of input steps (not deliveries), ascending
        for step in full.steps:
            message = step.message
            if message is not None:
                self.delivered[message.id] = step
                if message.topic == RESPONSE:
                    self.responses.setdefault(message.origin_step, []).append(step)
                self.sent_by.setdefault(message.sent_step, []).append(message)
                continue
            self.inputs.append(step.index)
            record = step.record
            if record.key is None:
                continue
            if record.side is Side.RIGHT:
                self.rights.setdefault(fk_bytes(record.key), []).append(step)
            else:
                self.lefts.setdefault((record.partition, fk_bytes(record.key)), []).append(step)
        last = full.state_at(-1) if full.steps else None
        self.pending = [] if last is None else last.in_flight()

    def between(self, a: int, b: int) -> int:
        """How many input records were processed strictly between steps ``a`` and ``b``."""
        lo, hi = sorted((a, b))
        return max(0, bisect_left(self.inputs, hi) - bisect_right(self.inputs, lo))

    def chain(self, index: int) -> tuple[list[Step], list[Message]]:
        """The delivery steps of the messages set off by input step ``index`` (subscriptions it
        sent, responses to them), and those of its messages still in flight at the end."""
        steps, todo = [], list(self.sent_by.get(index, []))
        while todo:
            message = todo.pop(0)
            step = self.delivered[message.id]
            steps.append(step)
            todo += self.sent_by.get(step.index, [])
        pending = [m for m in self.pending if m.origin_step == index]
        return sorted(steps, key=lambda s: s.index), pending

    def partner(self, step: Step, side: str) -> Partner:
        r = step.record
        return Partner(side, r.partition, r.offset, r.ts, r.value, step.index)


def _chains_of(full: Trace) -> _Chains:
    """The trace's :class:`_Chains`, built once per trace (a run keeps its FK traces, so every
    later ``why`` skips the pass over all steps)."""
    chains = getattr(full, "_fk_chains", None)
    if chains is None:
        chains = _Chains(full)
        full._fk_chains = chains  # type: ignore[attr-defined]
    return chains


def _who(record: Record) -> str:
    return (
        f"{record.side.value} record (partition {record.partition}, offset {record.offset}, key "
        f"{render_value(record.key)}, ts {record.ts})"
    )


def _lookup_verdict(chains: _Chains, fk: Any, lookup: int, subject: Step) -> tuple[str, str, tuple[Partner, ...], dict]:
    """Why the lookup of foreign key ``fk`` at step ``lookup`` (a subscription's delivery) found no
    right value, for the left record of step ``subject``: a verdict, the text, the partners and
    ``delay_ms``/``records_between``."""
    rights = chains.rights.get(fk_bytes(fk), [])
    f = render_value(fk)
    if not rights:
        return (
            "partner-never",
            f"No right record with key {f} exists in any partition: the partner never arrived.",
            (),
            {},
        )
    before = [s for s in rights if s.index < lookup]
    after = [s for s in rights if s.index > lookup]
    if before and before[-1].record.value is None:
        last = before[-1]
        return (
            "partner-deleted",
            f"The right record with key {f} was deleted before the lookup: its tombstone (partition "
            f"{last.record.partition}, offset {last.record.offset}, ts {last.record.ts}) was processed before the "
            f"left record, {chains.between(last.index, subject.index)} record(s) between them.",
            (chains.partner(last, "right"),),
            {},
        )
    if after:
        first = after[0]
        between = chains.between(subject.index, first.index)
        answered = [chains.delivered[m.id] for m in chains.sent_by.get(first.index, [])]  # its prefix scan's
        joined = [
            s
            for s in answered
            if _same(s.message.key, subject.record.key) and any(o.kind is OutputKind.JOINED for o in s.outputs)
        ]
        then = f" When it came, its answer joined the left row (step {joined[0].index})." if joined else ""
        partner = (chains.partner(first, "right"),)
        numbers = {"delay_ms": first.record.ts - subject.record.ts, "records_between": between}
        if first.record.ts >= subject.record.ts:
            return (
                "partner-later",
                f"The right record with key {f} (partition {first.record.partition}, offset {first.record.offset}, "
                f"ts {first.record.ts}) was processed after the lookup: its timestamp is "
                f"{first.record.ts - subject.record.ts} ms later, and {between} record(s) came between them.{then}",
                partner,
                numbers,
            )
        return (
            "partner-processed-later",
            f"The right record with key {f} (partition {first.record.partition}, offset {first.record.offset}, "
            f"ts {first.record.ts}) has an earlier timestamp than the left record, but was processed "
            f"{between} record(s) after it, when the lookup had already found nothing.{then} Kafka processes "
            "the right topic's records at their own task, in their own partition's order: a right partition that "
            "lags (a consumer behind, a producer late) delivers its records after left records with later "
            "timestamps.",
            partner,
            numbers,
        )
    return (
        "no-result",
        f"The lookup of foreign key {f} found no right value: {chains.full.steps[lookup].explain}",
        tuple(chains.partner(s, "right") for s in before[-1:]),
        {},
    )


def _null_result_verdict(chains: _Chains, step: Step, output: Any) -> str:
    """The verdict of ``output``, a result with a null right value emitted at ``step``: the
    delivery of its response, or a later step that flushed it from a record cache."""
    response = step.message
    if response is None or response.topic != RESPONSE:  # a cache flush: the last response of its origin
        answers = [s for s in chains.responses.get(output.origin_step, []) if s.index <= step.index]
        if not answers:
            return "unexplained"
        response = answers[-1].message
    if response.value.arrives_as_null:  # a right value of zero bytes, read back as null
        return "empty-foreign-value"
    output_left = output.left
    origin = chains.full.steps[response.origin_step]
    if origin.message is None and origin.record.side is Side.RIGHT:
        return "partner-deleted"  # a right tombstone answered its subscribers
    lookup = chains.full.steps[response.sent_step]
    subscription = lookup.message
    if subscription is None or subscription.topic != SUBSCRIPTION:
        return "unexplained"
    if subscription.value.instruction is Instruction.DELETE_KEY_AND_PROPAGATE:
        return "foreign-key-changed"  # the row still exists (a deleted row's answer is a tombstone)
    if _foreign_key(chains.config, output_left) is None:
        return "null-foreign-key"
    return _lookup_verdict(chains, subscription.key, lookup.index, origin)[0]


def output_reasons(full: Trace) -> list[list[str]]:
    """A reason for every output of every step of ``full`` (a foreign-key join's trace), as
    :attr:`kjoin.spark.SparkRun.explained_outputs` gives them: ``matched``, ``tombstone``,
    ``null-key``, or for a result with a null right value its verdict (``null-foreign-key``,
    ``foreign-key-changed``, ``empty-foreign-value``, ``partner-later``, ``partner-processed-later``,
    ``partner-deleted``, ``partner-never``, ``partner-other-partition``; ``unexplained`` if none applies)."""
    chains = _chains_of(full)
    reasons = []
    for step in full.steps:
        mine = []
        for o in step.outputs:
            if o.tombstone or o.kind is OutputKind.TOMBSTONE:
                mine.append("tombstone")
            elif o.kind is OutputKind.NULL_KEY:
                mine.append("null-key")
            elif o.right is not None:
                mine.append("matched")
            else:
                mine.append(_null_result_verdict(chains, step, o))
        reasons.append(mine)
    return reasons


def fk_null_verdicts(config: Scenario) -> tuple[str, ...]:
    """The verdicts a foreign-key join's null-right result can have (none for an inner join)."""
    if config.variant == "inner":
        return ()
    verdicts = ["partner-later", "partner-processed-later", "partner-deleted", "partner-never", "empty-foreign-value"]
    if config.semantics.relaxed_null_keys:  # KIP-962: a left join emits a null foreign key with null
        verdicts.append("null-foreign-key")
        if not config.semantics.fk_change_only_unsubscribes:  # 3.7.0 to 3.9.0, 4.0.0: KAFKA-16394
            verdicts.append("foreign-key-changed")
    return (*verdicts, "unexplained")


# -- the diagnosis ---------------------------------------------------------------------------------
def diagnose_fk(full: Trace, step: Step, drill: FkKeyTrace | None) -> Diagnosis:
    """The verdict for the input record of ``step`` of ``full`` (a foreign-key join's whole trace);
    ``drill``: the left key's drill-down, handed back with the diagnosis."""
    chains = _chains_of(full)
    record = step.record
    who = _who(record)
    if record.key is None:
        return Diagnosis(
            "null-key",
            f"The {who} has a null key: a table cannot store it, so Kafka Streams skips it.",
            record,
            step.index,
            trace=drill,
        )
    if step.reason in _SENDS_NOTHING:
        verdict, what = _SENDS_NOTHING[step.reason]
        return Diagnosis(verdict, f"The {who} {what}", record, step.index, trace=drill)
    if record.side is Side.LEFT:
        return _diagnose_left(chains, step, who, drill)
    return _diagnose_right(chains, step, who, drill)


_SENDS_NOTHING = {
    Reason.EXPIRED_PUT: (
        "late",
        "is older than its versioned table's history retention allows: not stored, nothing sent.",
    ),
    Reason.OUT_OF_ORDER_VERSION: (
        "no-result",
        "is an out-of-order version of its versioned table: stored as an older version, nothing sent (KIP-914).",
    ),
}
"""A versioned left or right table's update that sends no subscription and no response: its verdict and why."""


def _outcome(step: Step) -> str:
    """What a response's delivery did, in words."""
    if step.reason is Reason.STALE_RESPONSE:
        return "dropped as stale (the left row had changed since)"
    if not step.outputs:
        return "nothing"
    o = step.outputs[0]
    if o.tombstone:
        return "a tombstone (the result deleted)"
    if o.right is None:
        return f"the result {render_value(o.value)} with a null right value"
    return f"the result {render_value(o.value)}"


def _diagnose_left(chains: _Chains, step: Step, who: str, drill: FkKeyTrace | None) -> Diagnosis:
    config, record = chains.config, step.record
    delivered, pending = chains.chain(step.index)
    responses = [s for s in delivered if s.message.topic == RESPONSE and _same(s.message.key, record.key)]
    outputs = [o for s in responses for o in s.outputs]
    stale = [s for s in responses if s.reason is Reason.STALE_RESPONSE]
    if record.value is None:
        done = (
            f"its result was deleted by a tombstone at step {responses[0].index}"
            if any(o.tombstone for o in outputs)
            else "it emits no result of its own"
        )
        return Diagnosis(
            "no-result",
            f"The {who} is a tombstone: it deletes the left row; {done}. {step.explain}",
            record,
            step.index,
            trace=drill,
        )
    fk = _foreign_key(config, record.value)
    if fk is None:
        return _null_foreign_key(chains, step, who, drill, responses, outputs)
    f = render_value(fk)
    matched = [o for o in outputs if o.kind is OutputKind.JOINED and o.right is not None]
    lookups = [
        s
        for s in delivered
        if s.message.topic == SUBSCRIPTION
        and not s.message.value.instruction.deletes
        and s.message.key is not None
        and fk_bytes(s.message.key) == fk_bytes(fk)
    ]
    if matched:
        lookup = lookups[0].index if lookups else step.index
        rights = [s for s in chains.rights.get(fk_bytes(fk), []) if s.index < lookup]
        partners = tuple(chains.partner(s, "right") for s in rights[-1:])
        found = (
            f" (right record partition {rights[-1].record.partition}, offset {rights[-1].record.offset}, ts "
            f"{rights[-1].record.ts})"
            if rights
            else ""
        )
        return Diagnosis(
            "joined",
            f"The {who} joined: its subscription to foreign key {f} found right value {render_value(matched[0].right)}"
            f"{found}, and the response gave the result {render_value(matched[0].value)}.",
            record,
            step.index,
            partners,
            trace=drill,
        )
    if stale:
        return _stale_response(chains, step, who, drill, stale[0], f)
    empty = [s for s in responses if s.reason is not Reason.STALE_RESPONSE and s.message.value.arrives_as_null]
    if empty:
        return _empty_foreign_value(chains, step, who, drill, empty[0], fk, f)
    if pending and not lookups:
        ids = ", ".join(m.id for m in pending)
        return Diagnosis(
            "no-result",
            f"The {who} subscribed to foreign key {f}, but its message(s) {ids} were still in flight when the "
            "scenario ended: no answer yet.",
            record,
            step.index,
            trace=drill,
        )
    lookup = lookups[-1] if lookups else None
    if lookup is None:
        return Diagnosis("no-result", f"The {who}: {step.explain}", record, step.index, trace=drill)
    verdict, text, partners, numbers = _lookup_verdict(chains, fk, lookup.index, step)
    if config.variant == "inner" and verdict != "no-result":
        text += " An inner join emits nothing without a right value."
    elif outputs and verdict != "no-result":
        text += " The left join emitted the row with a null right value."
    return Diagnosis(
        verdict,
        f"The {who} subscribed to foreign key {f}, and the lookup found no right value. {text}",
        record,
        step.index,
        partners,
        trace=drill,
        **numbers,
    )


def _null_foreign_key(
    chains: _Chains, step: Step, who: str, drill: FkKeyTrace | None, responses: list, outputs: list
) -> Diagnosis:
    """A left row whose extractor returned null: dropped, unsubscribed (inner, KAFKA-16407) or emitted with null
    (left, KIP-962)."""
    config, record = chains.config, step.record
    path = config.foreign_key
    if step.reason is Reason.NULL_FOREIGN_KEY:
        rule = (
            "an inner join drops it"
            if config.variant == "inner"
            else "a left join before Kafka 3.7 drops it too (KIP-962 made it emit such rows with null)"
        )
        text = (
            f"The {who} has a null foreign key: the extractor (field {path!r}) returned null, which cannot be "
            f"subscribed: {rule}. The update is skipped (the left table keeps it), so no result."
        )
        earlier = [t for t in chains.lefts.get((record.partition, fk_bytes(record.key)), []) if t.index < step.index]
        old_fk = _foreign_key(config, earlier[-1].record.value) if earlier else None
        if old_fk is not None:
            text += (
                f" Nothing is sent to its old foreign key {render_value(old_fk)} either, so a result the row had "
                "stays in place"
                + (
                    " (an inner join deletes it from Kafka 3.9.1 and 4.0.1, KAFKA-16407)."
                    if config.variant == "inner"
                    else "."
                )
            )
    elif step.reason is Reason.NULL_FOREIGN_KEY_UNSUBSCRIBED:
        gone = (
            f"; the answer deleted the old result (a tombstone at step {responses[0].index})"
            if any(o.tombstone for o in outputs)
            else ""
        )
        text = (
            f"The {who} has a null foreign key: the extractor (field {path!r}) returned null. An inner join "
            "(Kafka 3.9.1 and 4.0.1 on, KAFKA-16407) subscribes it nowhere and unsubscribes the row from its "
            f"old foreign key{gone}. No result."
        )
    else:
        at = f" (step {responses[-1].index})" if responses else ""
        text = (
            f"The {who} has a null foreign key: the extractor (field {path!r}) returned null. A left join (Kafka "
            f"3.7 on, KIP-962) still emits the row, with a null right value{at}."
        )
    return Diagnosis("null-foreign-key", text, record, step.index, trace=drill)


def _stale_response(chains: _Chains, step: Step, who: str, drill: FkKeyTrace | None, s: Step, f: str) -> Diagnosis:
    """A response dropped because the left row changed while its messages were in flight (the hash check)."""
    record = step.record
    newer = [
        t for t in chains.lefts.get((record.partition, fk_bytes(record.key)), []) if step.index < t.index < s.index
    ]
    changed = (
        f" by the left record at offset {newer[0].record.offset} (ts {newer[0].record.ts}, step {newer[0].index})"
        if newer
        else ""
    )
    return Diagnosis(
        "stale-response",
        f"The {who} subscribed to foreign key {f}, but while the messages were in flight the left row changed"
        f"{changed}: the response {s.message.id} (step {s.index}) carried the hash of this value, not of the "
        "current one, so Kafka dropped it as stale. The newer row's own response answers for the key.",
        record,
        step.index,
        tuple(chains.partner(t, "left") for t in newer[:1]),
        trace=drill,
    )


def _empty_foreign_value(
    chains: _Chains, step: Step, who: str, drill: FkKeyTrace | None, s: Step, fk: Any, f: str
) -> Diagnosis:
    """A right value of zero bytes: the response writes a missing value as zero bytes too, so it arrives as null."""
    config, record = chains.config, step.record
    rights = [t for t in chains.rights.get(fk_bytes(fk), []) if t.index < s.index]
    result = (
        "a tombstone (an inner join has no result without a right value)"
        if config.variant == "inner"
        else "the row joined with null"
    )
    return Diagnosis(
        "empty-foreign-value",
        f'The {who} subscribed to foreign key {f}, whose right value is "": it serializes to zero bytes '
        f"(String serde), and a subscription response writes a missing right value as zero bytes too, so the "
        f"response {s.message.id} (step {s.index}) reached the left row as null: {result}.",
        record,
        step.index,
        tuple(chains.partner(t, "right") for t in rights[-1:]),
        trace=drill,
    )


def _diagnose_right(chains: _Chains, step: Step, who: str, drill: Any) -> Diagnosis:
    config, record = chains.config, step.record
    f = render_value(record.key)
    delivered, pending = chains.chain(step.index)
    answers = [s for s in delivered if s.message.topic == RESPONSE]
    partners: list[Partner] = []
    told = []
    for s in answers:
        lefts = [
            t for t in chains.lefts.get((s.message.partition, fk_bytes(s.message.key)), []) if t.index < step.index
        ]
        if lefts:
            partners.append(chains.partner(lefts[-1], "left"))
        told.append(f"{render_value(s.message.key)} (step {s.index}: {_outcome(s)})")
    told += [f"{render_value(m.key)} ({m.id} still in flight at the end)" for m in pending if m.topic == RESPONSE]
    joined = any(o.kind is OutputKind.JOINED and o.right is not None for s in answers for o in s.outputs)
    change = (
        f"deleted the right row {f}"
        if record.value is None
        else f"set the right row {f} to {render_value(record.value)}"
    )
    if told:
        return Diagnosis(
            "joined" if joined else "no-result",
            f"The {who} {change}; the prefix scan of the subscription store found "
            f"{len(told)} subscribed left key(s), each answered with a response: {'; '.join(told)}.",
            record,
            step.index,
            tuple(partners),
            trace=drill,
        )
    naming = [
        t
        for steps in chains.lefts.values()
        for t in steps
        if t.record.value is not None and _same(_foreign_key(config, t.record.value), record.key)
    ]
    later = [t for t in naming if t.index > step.index]
    also = (
        f" {len(later)} left record(s) naming {f} came later; their own subscriptions look the right table up."
        if later
        else ""
    )
    return Diagnosis(
        "no-result",
        f"The {who} {change}; no left row subscribed to {f} when it was processed, so nothing was answered.{also}",
        record,
        step.index,
        tuple(chains.partner(t, "left") for t in sorted(later, key=lambda t: t.index)[:10]),
        trace=drill,
    )


def find_input_step(full: Trace, side: str, partition: int, offset: int) -> Step | None:
    """The step of the input record at ``side``/``partition``/``offset`` (deliveries are not input records)."""
    for step in full.steps:
        r = step.record
        if step.message is None and r.side.value == side and r.partition == partition and r.offset == offset:
            return step
    return None


FOREIGN_KEY = JoinVerdicts(
    "foreign-key",
    serves=lambda config: config.join == "fk",
    null_verdicts=fk_null_verdicts,
    forwards_null_keys=False,
    audited=False,
    whole_trace=diagnose_fk,
)
"""Foreign-key joins: a left row's lookup crosses tasks, so a record is explained from the whole scenario's trace
(:func:`diagnose_fk`); a subscription reaches its foreign key wherever the left row is, so no co-partitioning
verdict applies."""
