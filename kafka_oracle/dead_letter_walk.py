"""Random walks that write dead letters, judged by the real library: :mod:`kafka_oracle.topology_walk`'s walks with
its throwing mapper (``map_values {fail_on: ...}``) drawn for one mapper in two, the handler ``continue`` and a
dead-letter queue on every walk, kept only when kjoin writes a dead-letter record (the walk's own draw throws for one
mapper in ten and writes one on a few walks in a thousand).

``python -m kafka_oracle.dead_letter_walk COUNT --seed SEED`` judges ``COUNT`` such walks on each version of
``KJOIN_ORACLE_VERSIONS`` that has a dead-letter queue (default 4.4.0) and prints the mismatches' first differences.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
from typing import Any, Iterator

from kjoin.semantics import parse_semantics
from kjoin.topology.document import TopologyScenario

from . import topology_walk

__all__ = ["dead_letter_walks", "main"]

DEAD_LETTERS = "walk-dead-letters"


class _Throwing(topology_walk._Walker):
    """The walk's walker, drawing the throwing mapper for one mapper in two."""

    def mapper(self) -> dict[str, Any]:
        if self.rng.random() < 0.5:
            return {"fail_on": self.rng.choice(["1", "a", "é", '"v"'])}
        return super().mapper()


def _writes_dead_letters(document: dict[str, Any]) -> bool:
    """Does kjoin write a dead-letter record for ``document`` (and run it without its own error)?"""
    try:
        trace = TopologyScenario.from_dict(document).run()
    except Exception:  # a walk kjoin refuses or stops (a failure the walk's judge compares): not one of these
        return False
    return any(record.topic == DEAD_LETTERS for event in trace.outputs_by_event() for record in event)


def dead_letter_walks(seed: int, version: str) -> Iterator[topology_walk.Walk]:
    """The walks of ``version`` from ``seed`` (the walk's stream, its walker throwing more often, a dead-letter
    queue on each) on which kjoin writes at least one dead-letter record."""
    original = topology_walk._Walker
    topology_walk._Walker = _Throwing  # type: ignore[misc]  # draw() builds its walker by this name
    try:
        rng = random.Random(f"dead-letters-{seed}-{version}")
        while True:
            walk = topology_walk._judgeable(topology_walk.draw(rng, version))
            document = {**walk.document, "processing_exception_handler": "continue", "dead_letter_queue": DEAD_LETTERS}
            if _writes_dead_letters(document):
                yield topology_walk.Walk(document, walk.operations, walk.oddities)
    finally:
        topology_walk._Walker = original  # type: ignore[misc]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_oracle.dead_letter_walk", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("count", type=int, nargs="?", default=200, help="walks per Kafka version (default 200)")
    parser.add_argument("--seed", type=int, default=None, help="repeat a run (default: a new seed, printed)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    names = [name.strip() for name in os.environ.get("KJOIN_ORACLE_VERSIONS", "4.4.0").split(",") if name.strip()]
    refused = [name for name in names if not parse_semantics(name).dead_letter_queue]
    if refused:
        parser.error(f"KJOIN_ORACLE_VERSIONS names {', '.join(refused)}, which has no dead-letter queue (4.2+)")
    failed = 0
    for version in names:
        walks = list(itertools.islice(dead_letter_walks(seed, version), args.count))
        verdicts = []
        for start in range(0, len(walks), 50):
            verdicts += topology_walk.judge(version, [walk.document for walk in walks[start : start + 50]])
        mismatches = [(w, v) for w, v in zip(walks, verdicts) if v.kind not in (None, "refused")]
        refusals = sum(1 for v in verdicts if v.kind == "refused")
        print(
            f"kafka-streams {version}: seed {seed}, {len(walks)} walks writing dead letters, "
            f"{len(mismatches)} mismatches, {refusals} refused",
            flush=True,
        )
        for walk, verdict in mismatches:
            print(f"  {verdict.text[:2000]}\n    {walk.document}", file=sys.stderr, flush=True)
        failed += len(mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
