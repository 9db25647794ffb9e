"""A sample of the second topology fuzzer (:mod:`tests.topology_fuzz_independent`, written apart from
:mod:`tests.topology_fuzz`): every builder misuse and every seed, then perturbed documents, files through
``kjoin run`` and builder programs whose functions raise or return what no serde writes. Each is refused in kjoin's
words or runs with outputs Kafka could write; ``make fuzz-inputs`` runs it at a real N."""

from __future__ import annotations

import random

import pytest

from tests import topology_fuzz_independent as fuzz

FIXED = [job for job in fuzz.jobs(0) if job[0] in ("api", "seed")]


def _failures(results):
    return [
        f"{cls} [{kind}] {label}: {info}"
        for kind, cls, label, info, _ in results
        if cls not in ("refused", "ran", "skip")
    ]


def test_every_builder_misuse_is_refused_and_every_seed_runs():
    results = [fuzz.case(job) for job in FIXED]
    assert _failures(results) == []
    seeds = [(cls, label, info) for kind, cls, label, info, _ in results if kind == "seed"]
    # a seed whose Kafka task fails stops kjoin's run there too, in kjoin's words (the two null keys into a grace
    # buffer of tests/topology_walk_cases/); every other seed runs
    stopped = {label for cls, label, info in seeds if cls == "refused" and info.startswith("ProcessingError: ")}
    assert stopped == {
        "seed null-key-into-a-stream-table-join-with-grace.yaml",
        "seed rekey-to-null-into-a-stream-table-join-with-grace.yaml",
    }
    assert {cls for cls, label, _ in seeds if label not in stopped} == {"ran"}


@pytest.mark.parametrize("seed", range(2))
def test_a_sample_of_perturbed_documents_files_and_functions_is_answered(seed):
    assert _failures([fuzz.case(job) for job in fuzz.jobs(40, seed + 100, fixed=False)]) == []


def test_each_function_kind_with_each_odd_return_is_answered():
    """One builder program per DSL function, each with a random odd return, so every kind is met in CI."""
    rng = random.Random(5)
    jobs = [("fn", index, rng.randrange(10**9)) for index in range(len(fuzz.FN_KINDS))]
    assert _failures([fuzz.case(job) for job in jobs]) == []
