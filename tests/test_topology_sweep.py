"""The topology judges' memory (kafka_oracle/topology_sweep.py): seeds that never repeat, runs planned toward a goal and
cut by a deadline, rows appended as runs end, the page summed per version; and the harness's JVM kept up between
batches answering as a fresh one does."""

from __future__ import annotations

import json
import random
import time

import pytest

from benchmarks.history import read
from kafka_oracle import oracle_check, topology_oracle, topology_sweep


def _row(generator: str, version: str, seed: int, topologies: int, mismatches: int = 0) -> dict:
    return {
        "kind": "topology-run", "commit": "abc1234def", "dirty": False, "date": f"2026-11-29T10:{seed:02d}:00+00:00",
        "generator": generator, "version": version, "seed": seed, "topologies": topologies, "mismatches": mismatches,
        "seconds": 10.0, "load": 1.0, "differences": ["event 3: Kafka emitted x, kjoin y"] * mismatches,
    }  # fmt: skip


def test_a_run_takes_the_seed_after_the_highest_recorded_for_its_generator_and_version():
    rows = [_row("walk", "4.4.0", 1, 500), _row("walk", "4.4.0", 3, 500), _row("oracle", "4.4.0", 7, 500),
            _row("walk", "3.3.2", 9, 500)]  # fmt: skip
    assert topology_sweep.next_seed(rows, "walk", "4.4.0") == 4
    assert topology_sweep.next_seed(rows, "oracle", "4.4.0") == 8
    assert topology_sweep.next_seed(rows, "oracle", "3.3.2") == 1
    assert topology_sweep.judged(rows, "walk", "4.4.0") == 1000


def test_a_round_plans_a_chunk_of_each_pair_still_short_of_the_goal_and_no_more_than_it_lacks():
    rows = [_row("walk", "4.4.0", 1, 9800), _row("oracle", "4.4.0", 1, 10000)]
    planned = topology_sweep.plan(rows, ["4.4.0", "3.3.2"], ["oracle", "walk"], 500, 10000, 0)
    assert planned == [("oracle", "3.3.2", 500), ("walk", "3.3.2", 500), ("walk", "4.4.0", 200)]  # thinnest first
    assert topology_sweep.plan(rows, ["4.4.0"], ["oracle"], 500, None, 300) == [("oracle", "4.4.0", 300)]


@pytest.mark.parametrize("given", ["both", "oracle,walk", "walk"])
def test_the_generators_option_takes_both_as_its_help_says(given, capsys):
    with pytest.raises(SystemExit):  # stops at the missing --toward/--more, past the generators
        topology_sweep.main(["--generators", given, "--versions", "4.4.0"])
    error = capsys.readouterr().err.splitlines()[-1]
    assert "give --toward N" in error and "--generators" not in error


def test_the_generators_option_names_an_unknown_generator(capsys):
    with pytest.raises(SystemExit):
        topology_sweep.main(["--generators", "walk,bothh", "--versions", "4.4.0", "--more", "1"])
    assert "oracle, walk or both (got bothh)" in capsys.readouterr().err


def test_a_sweep_appends_a_row_per_run_with_new_seeds_until_the_goal(tmp_path):
    history = tmp_path / "judging-history.jsonl"
    calls = []

    def fake(version, count, seed):
        calls.append((version.version, count, seed))
        return count, 0, 0.01, []

    judges = {"oracle": fake, "walk": fake}
    failed = topology_sweep.sweep(["4.4.0"], ["oracle", "walk"], 40, 100, 0, None, history, judges)
    rows = read(history)
    assert failed == 0
    assert [(row["generator"], row["seed"], row["topologies"]) for row in rows] == [
        ("oracle", 1, 40), ("walk", 1, 40), ("oracle", 2, 40), ("walk", 2, 40), ("oracle", 3, 20), ("walk", 3, 20),
    ]  # fmt: skip
    assert list(rows[0]) == list(topology_sweep.ROW_FIELDS)
    again = topology_sweep.sweep(["4.4.0"], ["walk"], 40, None, 10, None, history, judges)  # a later session
    assert again == 0 and read(history)[-1]["seed"] == 4 and len(calls) == 7


def test_a_sweep_starts_no_run_that_the_last_one_says_would_end_after_the_deadline(tmp_path):
    history = tmp_path / "judging-history.jsonl"

    def slow(version, count, seed):
        return count, 1, 3600.0, ["event 0: Kafka 4.4.0 emitted [], kjoin [x]"]

    deadline = time.time() + 60
    failed = topology_sweep.sweep(["4.4.0"], ["walk"], 10, 100, 0, deadline, history, {"walk": slow})
    assert failed == 1 and len(read(history)) == 1  # the first run measures; the second would end in an hour


def test_an_until_already_past_today_means_tomorrow_so_a_late_evening_sweep_runs_past_midnight():
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    passed, coming = now - timedelta(minutes=2), now + timedelta(minutes=2)
    for then in (passed, coming):
        deadline = topology_sweep._deadline(f"{then:%H:%M}", None)
        assert now.timestamp() < deadline <= now.timestamp() + 86400  # always ahead, never more than a day
    assert topology_sweep._deadline(None, 1.5) == pytest.approx(time.time() + 90, abs=5)
    assert topology_sweep._deadline(None, None) is None


def test_the_page_sums_each_version_and_generator_toward_the_goal_and_lists_the_mismatches():
    rows = [_row("walk", "4.4.0", 1, 4000), _row("walk", "4.4.0", 2, 1000, mismatches=2), _row("walk", "4.4.0", 3, 500),
            _row("oracle", "3.3.2", 1, 10000), _row("walk", "3.3.2", 1, 700)]  # fmt: skip
    text = topology_sweep.page(rows)
    lines = text.splitlines()
    assert "| 4.4.0 | walk | 5,500 | 55.0% | 2 | 500 | 30 | 3 | 1-3 |" in text  # clean: the run after the mismatch
    assert "| 3.3.2 | oracle | 10,000 | 100.0% | 0 | 10,000 | 10 |" in text
    assert lines.index(next(line for line in lines if line.startswith("| 4.4.0"))) < lines.index(
        next(line for line in lines if line.startswith("| 3.3.2"))
    )
    assert "In all: 16,200 topologies judged, 2 mismatches." in text
    assert "Kafka 4.4.0, walk seed 2, commit abc1234: 2 of 1,000" in text
    rows[1]["differences"][0] = "event 0: Kafka 4.4.0 emitted ['v\x01'], kjoin ['v']"
    assert "emitted ['v\\x01'], kjoin" in topology_sweep.page(rows)  # a flag byte shown, not written
    assert topology_sweep.page([]).endswith("No run recorded yet.\n")


def test_the_history_page_in_the_repository_is_made_from_its_history():
    """docs/judging.md is what ``python -m kafka_oracle.topology_sweep --page`` writes from the recorded rows."""
    assert topology_sweep.PAGE.read_text(encoding="utf-8") == topology_sweep.page(read(topology_sweep.HISTORY))
    for row in read(topology_sweep.HISTORY):
        assert list(row) == list(topology_sweep.ROW_FIELDS), row
        assert row["version"] in {version.version for version in topology_oracle.JUDGES}


@pytest.mark.oracle
def test_the_kept_up_jvm_answers_batch_after_batch_as_a_fresh_one_does():
    oracle_check.build()
    rng = random.Random(7)
    batch = [topology_oracle.random_scenario(rng, "4.4", stream_steps=True) for _ in range(6)]
    kept = topology_oracle.harness("4.4.0")
    first = topology_oracle.run_batch("4.4.0", batch[:3])
    second = topology_oracle.run_batch("4.4.0", batch[3:])
    assert topology_oracle.harness("4.4.0") is kept and kept._process.poll() is None  # one JVM for both batches
    kept.close()
    assert kept._process.poll() is not None
    fresh = topology_oracle.run_batch("4.4.0", batch)  # a new JVM, all six at once

    def unnumbered(answers):  # each batch numbers its documents from 0
        return json.dumps([{key: value for key, value in answer.items() if key != "id"} for answer in answers])

    assert unnumbered(first + second) == unnumbered(fresh)
    assert all(topology_oracle.difference(s, a, "4.4.0") is None for s, a in zip(batch, fresh))
