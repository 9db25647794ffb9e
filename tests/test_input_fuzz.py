"""Fuzzing kjoin's input boundary: whatever a scenario holds, whatever a file's bytes,
kjoin either refuses it with a ScenarioError or runs it with every record accounted for, within
a time bound; never a traceback from inside, never a hang. The harness is :mod:`tests.input_fuzz`
(``make fuzz-inputs`` runs a bigger sweep and prints the counts)."""

from __future__ import annotations

import datetime
import random

import kjoin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import input_fuzz

SECONDS = 10.0
"""The bound of one case: the slowest valid case here runs in milliseconds."""

ANY_VALUE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.integers(min_value=2**62, max_value=2**70),
        st.floats(),
        st.text(max_size=12),
        st.binary(max_size=4),
        st.dates(),
        st.datetimes(),
        st.sampled_from(["left", "right", "inner", "k", "0.10", "3.1", "fk", ""]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers(), st.booleans()), inner, max_size=3),
        st.frozensets(st.integers(), max_size=2),
    ),
    max_leaves=8,
)


def _assert_clear(outcome: str, detail: str) -> None:
    assert outcome in ("refused", "ran"), f"{outcome}: {detail}"


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    seed=st.integers(0, 2**32),
    base=st.integers(0, 10),
    path=st.integers(0, 1000),
    value=ANY_VALUE,
    action=st.integers(0, 3),
)
def test_any_one_change_to_a_valid_scenario_is_refused_or_runs_accounting_for_every_record(
    seed, base, path, value, action
):
    rng = random.Random(seed)
    doc = input_fuzz.base_scenarios(rng)[base]
    paths = [p for p in input_fuzz._paths(doc) if p]
    chosen = paths[path % len(paths)]
    parent = doc
    for part in chosen[:-1]:
        parent = parent[part]
    last = chosen[-1]
    if action == 0 or not isinstance(parent, dict):
        parent[last] = value
    elif action == 1:
        del parent[last]
    elif action == 2 and isinstance(last, str):
        parent[last + "s"] = parent.pop(last)
    else:
        parent[value if isinstance(value, (str, int)) else "extra"] = value
    _assert_clear(*input_fuzz.run_case(input_fuzz.through_api(doc), SECONDS))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    base=st.integers(0, 10),
    suffix=st.sampled_from([".yaml", ".json"]),
    cut=st.integers(0, 10_000),
    noise=st.binary(max_size=16),
    mode=st.integers(0, 2),
)
def test_any_bytes_in_a_scenario_file_are_refused_or_run(base, suffix, cut, noise, mode):
    doc = input_fuzz.base_scenarios(random.Random(base))[base]
    text = input_fuzz.dump(doc, suffix)
    assert text is not None
    at = cut % (len(text) + 1)
    if mode == 0:
        text = text[:at] + noise + text[at:]
    elif mode == 1:
        text = text[:at] + noise + text[at + len(noise) :]
    else:
        text = noise
    _assert_clear(*input_fuzz.run_case(input_fuzz.through_file(text, suffix, cli=at % 3 == 0), SECONDS))


@pytest.mark.parametrize("index", range(len(input_fuzz.BYTE_CASES)))
def test_hostile_files_are_refused_in_kjoins_words(index):
    text, suffix = input_fuzz.BYTE_CASES[index]
    outcome, detail = input_fuzz.run_case(input_fuzz.through_file(text, suffix), SECONDS)
    assert outcome == "refused", detail


@pytest.mark.parametrize("index", range(len(input_fuzz.BIG_CASES)))
def test_sizes_beyond_the_bounds_are_refused_at_once_naming_the_limit(index):
    outcome, detail = input_fuzz.run_case(input_fuzz.through_api(input_fuzz.BIG_CASES[index]), 2.0)
    assert outcome == "refused", detail
    assert any(word in detail for word in ("partitions", "windows")), detail


@pytest.mark.parametrize("join", ["table-aggregate", "window-aggregate", "wtable-table"])
def test_seed_000_over_a_million_partitions_builds_only_the_tasks_of_its_records(join):
    doc = {
        "join": join,
        "partitions": 1_000_000,
        "events": [
            {"side": "left", "key": "a", "value": {"g": "x"}, "ts": 1},
            {"side": "left", "key": "b", "value": {"g": "y"}, "ts": 2},
        ],
        **({"group_by": "g"} if join == "table-aggregate" else {"window": {"size_ms": 10}}),
    }
    outcome, detail = input_fuzz.run_case(input_fuzz.through_api(doc), 5.0)
    assert (outcome, detail) == ("ran", "")


def test_a_fifo_is_refused_before_it_is_opened():
    outcome, detail = input_fuzz.run_case(input_fuzz._through_fifo, 2.0)
    assert (outcome, "not a regular file") == ("refused", detail.split(": it is ")[-1][:18])


@pytest.mark.parametrize(
    "name, text, expect", input_fuzz.COERCION_PROBES, ids=[p[0] for p in input_fuzz.COERCION_PROBES]
)
def test_no_silent_coercion(name, text, expect):
    assert input_fuzz.probe(name, text, expect) == "ok"


def test_a_date_in_a_document_built_in_python_is_refused_naming_the_field():
    doc = {
        "join": "stream-table",
        "variant": "left",
        "events": [{"side": "left", "key": "k", "value": datetime.date(2020, 1, 1), "ts": 1}],
    }
    with pytest.raises(kjoin.ScenarioError, match=r"events\[0\]\.value: a date is not plain data"):
        kjoin.Scenario.from_dict(doc)


def test_a_misspelled_field_gets_a_did_you_mean():
    with pytest.raises(kjoin.ScenarioError, match=r"unknown field 'widow' \(did you mean 'window'\?\)"):
        kjoin.Scenario.from_dict({"join": "stream-stream", "variant": "inner", "widow": {}, "events": []})
    with pytest.raises(kjoin.ScenarioError, match=r"events\[0\]\.vale: unknown field \(did you mean 'value'\?\)"):
        kjoin.Scenario.from_dict(
            {"join": "stream-table", "variant": "left", "events": [{"side": "left", "key": "k", "vale": 1, "ts": 1}]}
        )
    from kjoin.scenario import AggregateSpec

    with pytest.raises(kjoin.ScenarioError, match=r"did you mean 'size_ms'"):
        AggregateSpec.from_dict({"join": "window-aggregate", "window": {"sise_ms": 10}, "events": []})


@pytest.mark.parametrize("partitions", [1, 2, 3])
@pytest.mark.parametrize("join", ["stream-stream", "stream-table", "table-table"])
def test_keys_1_1_0_and_true_are_three_keys_with_any_number_of_partitions(join, partitions):
    """Kafka compares serialized keys: a long 1, a double 1.0 and a boolean true never meet, though
    Python finds them equal. Each key joins only its own partner."""
    events = [
        {"side": "right", "key": 1, "value": "a", "ts": 1},
        {"side": "right", "key": 1.0, "value": "b", "ts": 2},
        {"side": "left", "key": True, "value": "A", "ts": 3},
        {"side": "left", "key": 1, "value": "B", "ts": 4},
        {"side": "left", "key": 1.0, "value": "C", "ts": 5},
    ]
    window = {"before_ms": 10, "after_ms": 10, "grace_ms": 0} if join == "stream-stream" else None
    scenario = kjoin.Scenario.from_records(join, "inner", events, partitions=partitions, window=window)
    outputs = [(o.render(), kjoin.records.key_identity(o.key)) for o in kjoin.run(scenario).outputs]
    assert outputs == [("B-a", ("long", "1")), ("C-b", ("double", "1.0"))]
