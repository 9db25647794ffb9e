"""Eras of Kafka Streams join semantics, chosen by the Kafka version a user names.

A :class:`Semantics` is a Kafka version plus the behaviours that version has. The
processors ask it questions (``kip77``, ``spurious_result_fix``, …) rather than compare
version numbers themselves, so every version boundary is written down once, here.

The eras (era, versions: what changes):

- old, 0.10.0 and 0.10.1: null values trigger lookups, stream-stream left joins are driven
  only by the left side, table-table joins send tombstones for every null result, no
  KStream-KTable inner join
- KIP-77, 0.10.2 – 3.0: null values are dropped, both sides trigger, no unnecessary
  tombstones; left/outer stream-stream results are emitted eagerly (the "spurious" results)
- 3.1+, 3.1 and newer: left/outer stream-stream results without a partner are held until
  the window closes plus grace (KAFKA-10847), unless the window uses the deprecated
  ``JoinWindows.of`` API

Within an era, smaller boundaries are properties too (``relaxed_null_keys``,
``fk_change_only_unsubscribes``, ``fk_inner_follows_null_foreign_keys``, …).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

__all__ = ["Semantics", "LATEST", "KNOWN_VERSIONS", "parse_semantics"]

LATEST = "4.3"
"""The newest Kafka version kjoin models; the default semantics."""

KNOWN_VERSIONS = (
    "0.10.0",
    "0.10.1",
    "0.10.2",
    "0.11.0",
    "1.0",
    "1.1",
    *(f"2.{minor}" for minor in range(9)),
    *(f"3.{minor}" for minor in range(10)),
    *(f"4.{minor}" for minor in range(4)),
)
"""Every Kafka release line (major.minor) kjoin knows, oldest first; a patch release of one is accepted."""

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?(?:\.x)?\s*$")


@total_ordering
@dataclass(frozen=True)
class Semantics:
    """The join semantics of one Kafka version.

    Build it with :func:`parse_semantics`; ``Semantics.parse("0.10.2")`` is the same.
    """

    version: tuple[int, int, int]

    @classmethod
    def parse(cls, text: "str | Semantics | None") -> "Semantics":
        return parse_semantics(text)

    def __lt__(self, other: "Semantics") -> bool:
        return self.version < other.version

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return self.version >= (major, minor, patch)

    def __str__(self) -> str:
        major, minor, patch = self.version
        # Kafka's own names: 0.10.0 and 0.10.2 (before 1.0 the third number is the release), 3.1, 3.1.2.
        return f"{major}.{minor}.{patch}" if patch or major == 0 else f"{major}.{minor}"

    @property
    def era(self) -> str:
        """``"0.10.0"`` (old), ``"0.10.2"`` (KIP-77) or ``"3.1"`` (spurious-result fix)."""
        if not self.kip77:
            return "0.10.0"
        return "3.1" if self.spurious_result_fix else "0.10.2"

    # -- the behaviours -------------------------------------------------------------
    @property
    def kip77(self) -> bool:
        """KIP-77 (0.10.2): null values are dropped instead of triggering lookups, both sides
        of every stream-stream join trigger, KStream-KTable inner join exists, and table-table
        joins stop sending unnecessary tombstones."""
        return self.at_least(0, 10, 2)

    @property
    def spurious_result_fix(self) -> bool:
        """KAFKA-10847 (3.1): left/outer stream-stream joins hold unmatched records in an
        outer-join buffer until their window closes plus grace (windows with a grace set
        through ``ofTimeDifferenceAndGrace``/``ofTimeDifferenceWithNoGrace`` only)."""
        return self.at_least(3, 1)

    @property
    def relaxed_null_keys(self) -> bool:
        """KIP-962 (3.7): a null-key record on an outer side of a stream-stream join, or the
        stream side of a stream-table left join, is joined with null instead of dropped."""
        return self.at_least(3, 7)

    @property
    def outer_join_sweep_gate_looks_back(self) -> bool:
        """KAFKA-13721 (3.1.1): the outer-join buffer's sweep runs only if ``minTime + before + grace`` of the
        processing side (its look-back: ``before`` for a left record, ``after`` for a right one) is behind stream
        time; 3.1.0 gated with the processing side's ``after`` (harness: 3.1.0 after, 3.1.1 before). Superseded by
        ``outer_join_sweep_per_side`` from 3.8."""
        return self.at_least(3, 1, 1)

    @property
    def outer_join_sweep_per_side(self) -> bool:
        """KAFKA-15417 (3.8): the sweep is gated by ``minTime + after + grace`` of the processing side, judges each
        entry by its own side's bound (``ts + after + grace`` for a left entry, ``ts + before + grace`` for a right
        one) and stops once both sides have an open entry. 3.1 to 3.7 close every entry at ``ts + after + grace`` of
        the processing side and stop at the first open one (harness: 3.7.1 stops, 3.8.1 judges per side)."""
        return self.at_least(3, 8)

    @property
    def skipped_records_advance_stream_time(self) -> bool:
        """KIP-962 (3.7): the stream-stream join processor advances its shared stream time before the null-key and
        null-value check, so a record it then skips still moves stream time (which decides the outer-join buffer's
        sweep and whether an unmatched record's window already passed). 3.1 to 3.6 check first
        (``StreamStreamJoinUtil.skipRecord`` before ``advanceStreamTime``): a skipped record leaves stream time where
        it was (harness: 3.6.2 skips first, 3.7.0 advances first)."""
        return self.at_least(3, 7)

    @property
    def fk_change_only_unsubscribes(self) -> bool:
        """KAFKA-16394 (3.9.1 and 4.0.1; 4.0.0 was released before the fix): in a foreign-key left
        join, a changed or deleted foreign key only unsubscribes from the old one; 3.7.0 to 3.9.0
        (and 4.0.0) also propagated that unsubscription, so the row's result was emitted twice
        (once joined with null). Harness: 3.7.1, 3.8.1, 3.9.0 and 4.0.0 emit it twice, 3.9.1,
        4.0.1 and 4.3.1 once."""
        return self._fk_fixes_of_3_9_1

    @property
    def fk_inner_follows_null_foreign_keys(self) -> bool:
        """KAFKA-16407 and KAFKA-16434 (3.9.1 and 4.0.1; 4.0.0 was released before the fix): a
        foreign-key inner join treats a row whose foreign key was null as new (it subscribes, where
        before the update was skipped), and a row whose foreign key becomes null unsubscribes from
        the old one with ``DELETE_KEY_AND_PROPAGATE`` (its old result is deleted; before, the update
        was skipped and the old result stayed). An update that keeps its foreign key asks only for
        an existing result (``PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE``): it never joined before if it
        does not join now, so no tombstone is needed. Harness: 3.9.0 and 4.0.0 behave the old way,
        3.9.1, 4.0.1 and 4.3.1 the new."""
        return self._fk_fixes_of_3_9_1

    @property
    def _fk_fixes_of_3_9_1(self) -> bool:
        """The foreign-key join fixes released in 3.9.1, 4.0.1 and 4.1.0 (not in 4.0.0, which
        came out before them)."""
        return self.at_least(3, 9, 1) and self.version != (4, 0, 0)

    @property
    def stream_stream_output_ts_is_max(self) -> bool:
        """Since 2.0 (KIP-251 made output timestamps settable) a stream-stream result carries
        max(left ts, right ts); before, the timestamp of the record being processed."""
        return self.at_least(2, 0)

    @property
    def table_table_output_ts_is_max(self) -> bool:
        """Since 2.3 (KIP-258, timestamped key-value stores) a table-table result carries
        max(update ts, other side's ts); before, the timestamp of the update."""
        return self.at_least(2, 3)

    # -- seed 000: windowed aggregates and their window stores ---------------------------
    @property
    def windowed_aggregate_counts_null_values(self) -> bool:
        """Every version (0.10.0 to 4.3): a time-windowed aggregate (``KStreamWindowAggregate``,
        tumbling and hopping ``TimeWindows``) skips only a null key; a null value advances stream
        time and reaches the aggregator (``count()`` counts it), though ``TimeWindowedKStream``'s
        javadoc says such records are ignored. A non-windowed KStream aggregate and a sliding-window
        aggregate skip null values; a KTable aggregate reads one as a delete."""
        return self.at_least(0, 10, 0)

    @property
    def window_store_hides_expired(self) -> bool:
        """KAFKA-12960 (3.4): a RocksDB window store's fetch returns only records newer than its
        observed stream time - retention. Before, a record older than the retention was still
        stored and found until its whole segment expired (segments of max(retention / 2, 60 s)).
        Stream-stream joins: each side's window store finds such a partner while its segment lives
        (harness: 3.3.2 finds it, 3.4.1 hides it). Seed 000: a lookup in a windowed aggregate's
        store skips a window starting at or before observed - retention while its segment lives
        (harness: 3.3.2 finds it, 3.4.1 hides it)."""
        return self.at_least(3, 4)


def parse_semantics(text: "str | Semantics | None") -> Semantics:
    """Parse ``"0.10.0"``, ``"2.8"``, ``"3.1.x"``, ``"latest"`` or ``None`` (the latest)."""
    if isinstance(text, Semantics):
        return text
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "latest", "current")):
        text = LATEST
    if not isinstance(text, str):
        text = str(text)
    match = _VERSION.match(text)
    if not match:
        raise ValueError(
            f'semantics {text!r} is not a Kafka version: expected e.g. "0.10.0", "0.10.2", "3.1" or "latest"'
        )
    if match.group(1, 2) == ("0", "10") and match.group(3) is None:
        raise ValueError(
            f"semantics {text!r} names the 0.10 line, whose releases join differently (0.10.2 brought KIP-77's "
            'stream-table and table-table rules); name one: "0.10.0", "0.10.1" or "0.10.2"'
        )
    major, minor, patch = (int(part) if part else 0 for part in match.groups())
    if (major, minor) < (0, 10):
        raise ValueError(f"semantics {text!r}: Kafka Streams joins start at 0.10.0")
    known = {tuple(int(part) for part in version.split(".")[:2]) for version in KNOWN_VERSIONS}
    if (major, minor) not in known:
        known_ones = ", ".join(KNOWN_VERSIONS)
        raise ValueError(
            f'semantics {text!r} is not a Kafka release kjoin knows; the known ones are {known_ones} or "latest"'
        )
    return Semantics((major, minor, patch))
