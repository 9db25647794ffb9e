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
    assert {cls for kind, cls, *_ in results if kind == "seed"} == {"ran"}


@pytest.mark.parametrize("seed", range(2))
def test_a_sample_of_perturbed_documents_files_and_functions_is_answered(seed):
    assert _failures([fuzz.case(job) for job in fuzz.jobs(40, seed + 100, fixed=False)]) == []


def test_each_function_kind_with_each_odd_return_is_answered():
    """One builder program per DSL function, each with a random odd return, so every kind is met in CI."""
    rng = random.Random(5)
    jobs = [("fn", index, rng.randrange(10**9)) for index in range(len(fuzz.FN_KINDS))]
    assert _failures([fuzz.case(job) for job in jobs]) == []
