"""``split()`` and the legacy ``branch(*predicates)``: one stream cut into branches (KIP-418).

How a record is routed (Kafka's ``KStreamBranch``):

- the predicates are asked in the order the branches were added; the first that holds takes the record, and only
  that branch sees it (``context.forward(record, childName)``: the later predicates are not called);
- none holds: the default branch takes it, if there is one; else the record is dropped (``not-forwarded``).

Each branch is a pass-through node named prefix+name (``BranchedKStream``: the split's ``Named`` prefix, the
``Branched`` name, or the branch's position from 1); the legacy ``branch`` names its children after the split.
"""

from __future__ import annotations

from typing import Any

from ..fates import Fate, Reason
from .processors import NodeProcessor, Outcome, Rec, said

__all__ = ["SplitNode", "BranchNode", "BRANCH_OPS"]

BRANCH_OPS = ("split", "branch")


class SplitNode(NodeProcessor):
    """The split (``KSTREAM-BRANCH``): asks the branches' predicates in order, forwards to the first that holds."""

    def handle(self, port: Any, rec: Rec, step: int) -> Outcome:
        for fn, child in self.node.params["branches"]:
            if fn(rec.key, rec.value):
                to = Rec(rec.key, rec.value, rec.ts, to=child)
                return Outcome(Fate.FORWARDED, None, lambda: f"{fn.text}: true for {said(rec)}; to {child}.", [to])
        default = self.node.params.get("default")
        if default is not None:
            to = Rec(rec.key, rec.value, rec.ts, to=default)
            return Outcome(
                Fate.FORWARDED, None, lambda: f"no predicate holds for {said(rec)}; to the default {default}.", [to]
            )
        return Outcome(
            Fate.DROPPED,
            Reason.NOT_FORWARDED,
            lambda: f"no predicate holds for {said(rec)} and the split has no default branch: dropped.",
        )


class BranchNode(NodeProcessor):
    """One branch (Kafka's ``KStreamPassThrough``): the record as the split sent it."""

    def handle(self, port: Any, rec: Rec, step: int) -> Outcome:
        plain = Rec(rec.key, rec.value, rec.ts)
        return Outcome(Fate.FORWARDED, None, lambda: f"branch {self.node.name} took {said(rec)}.", [plain])
