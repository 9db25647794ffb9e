"""Every era boundary kjoin models is declared once (``kjoin.semantics.since``), and the Kafka versions that judge
kjoin are derived from those declarations (``kafka_oracle.oracle_check.judged_versions``): adding a boundary adds
its judges. No JVM here: these are the rules that choose what the oracle runs."""

from __future__ import annotations

import pytest

import kjoin
from kjoin.semantics import Boundary, Rule, Semantics, boundaries, since
from kafka_oracle import oracle_check
from kafka_oracle.oracle_check import CI_SHARE, FIRST_JUDGED, RELEASES, VERSIONS, ci_versions, judged_versions


def _numbers(version: oracle_check.KafkaVersion) -> tuple[int, int, int]:
    return version.numbers


def test_every_behaviour_of_semantics_is_a_declared_boundary() -> None:
    """A behaviour written as a bare ``at_least`` would give the oracle no judge for its boundary."""
    # computed from declared behaviours, or the version itself
    derived = {"era", "release", "is_release", "drops_idempotent_table_updates"}
    for name, member in vars(Semantics).items():
        if isinstance(member, property) and not name.startswith("_") and name not in derived:
            raise AssertionError(
                f"Semantics.{name} is a plain property: declare it with @since(first release, ticket=...) so that "
                "kafka_oracle/oracle_check.py judges its boundary and kjoin diff can switch it"
            )
    rules = [member for member in vars(Semantics).values() if isinstance(member, Rule)]
    assert {rule.name for rule in rules if not rule.feature} == {boundary.name for boundary in boundaries()}
    assert all(boundary.ticket for boundary in boundaries(features=True))


def test_a_fix_released_on_two_lines_holds_from_each_fix_version_and_on_every_later_line() -> None:
    boundary = Boundary("fix", ((3, 9, 1), (4, 0, 1)), "KAFKA-16394")
    holds = {version: boundary.holds(version) for version in [(3, 8, 1), (3, 9, 0), (3, 9, 1), (3, 9, 2)]}
    holds |= {version: boundary.holds(version) for version in [(4, 0, 0), (4, 0, 1), (4, 1, 0), (4, 4, 0)]}
    assert [version for version, held in holds.items() if held] == [
        (3, 9, 1),
        (3, 9, 2),
        (4, 0, 1),
        (4, 1, 0),
        (4, 4, 0),
    ]
    assert Semantics((4, 0, 0)).fk_change_only_unsubscribes is False
    assert Semantics((4, 0, 1)).fk_change_only_unsubscribes is Semantics((3, 9, 1)).fk_change_only_unsubscribes is True


def test_since_keeps_the_docstring_and_needs_a_release() -> None:
    assert "KAFKA-12960" in Semantics.window_store_hides_expired.__doc__
    with pytest.raises(ValueError, match="first release"):
        since(ticket="KAFKA-1")


def test_every_boundary_from_2_4_has_a_judge_on_each_side() -> None:
    judges = [version.numbers for version in VERSIONS]
    for boundary in boundaries():
        for first in boundary.fixed_in:
            if first[:2] < FIRST_JUDGED:
                assert any(boundary.holds(judge) for judge in judges), boundary
                continue
            line = first[:2]
            before = [judge for judge in judges if judge < first and not boundary.holds(judge)]
            after = [judge for judge in judges if judge[:2] == line and judge >= first and boundary.holds(judge)]
            assert before and after, (boundary, first)
            # the judge before is the release just before: the same line's previous patch, or the line before's newest
            nearest = max(before)
            assert nearest[:2] == line or nearest[:2] == max(known for known in RELEASES if known < line), boundary
    assert VERSIONS[0].version == oracle_check.LATEST_JUDGE.version and VERSIONS[0].why == ("latest",)
    assert judges == sorted(judges, reverse=True) and len(set(judges)) == len(judges)


def test_the_judges_are_releases_and_the_latest_is_kjoins_latest() -> None:
    for version in VERSIONS:
        major, minor, patch = version.numbers
        assert patch <= RELEASES[major, minor], f"Kafka {version.version} is not released"
    assert kjoin.parse_semantics("latest").version[:2] == max(RELEASES), "a new LATEST needs its release in RELEASES"
    assert kjoin.parse_semantics(oracle_check.LATEST_JUDGE.version).version[:2] == max(RELEASES)


def test_kafka_4_4_is_known_and_the_latest() -> None:
    """``semantics: "4.4"`` is known: 4.4.0 is on Maven Central."""
    assert kjoin.parse_semantics("4.4") == kjoin.parse_semantics("latest") == kjoin.parse_semantics("4.4.0")
    scenario = kjoin.Scenario.from_dict(
        {
            "join": "stream-table",
            "variant": "left",
            "semantics": "4.4",
            "events": [{"side": "left", "key": "k", "value": "A", "ts": 1}],
        }
    )
    assert [output.value for step in kjoin.run(scenario).steps for output in step.outputs] == ["A-null"]
    with pytest.raises(ValueError, match="not a Kafka release kjoin knows"):
        kjoin.parse_semantics("4.5")


def test_a_new_boundary_adds_its_judges() -> None:
    """A boundary at 4.2 brings in 4.1's newest patch and 4.2's; a patch fix at 3.5.1 brings in 3.5.0 and 3.5.1; a
    boundary at a line's first release that a later patch boundary splits is judged by that first release."""
    base = {version.version for version in judged_versions()}
    added = judged_versions((*boundaries(), Boundary("new", ((4, 2, 0),), "KAFKA-1")))
    assert {version.version for version in added} - base == {"4.1.2", "4.2.2"}
    patched = judged_versions((*boundaries(), Boundary("fix", ((3, 5, 1),), "KAFKA-2")))
    assert {version.version for version in patched} - base == {"3.5.0", "3.5.1"}
    split = judged_versions((Boundary("a", ((4, 1, 0),), "A"), Boundary("b", ((4, 1, 2),), "B")))
    assert [version.version for version in split] == ["4.4.0", "4.1.2", "4.1.1", "4.0.2"]


def test_each_judge_knows_what_its_api_can_express() -> None:
    by_name = {version.version: version for version in VERSIONS}
    # Kafka 4.0 kept JoinWindows.of (KAFKA-16332); javap lists it in the 4.0.0 and 4.4.0 jars.
    assert by_name["3.9.1"].deprecated_window_api and by_name["4.0.0"].deprecated_window_api
    assert by_name["4.4.0"].deprecated_window_api
    assert by_name["3.1.0"].window_grace_api and not by_name["3.0.2"].window_grace_api
    assert by_name["3.6.2"].versioned and not by_name["3.4.1"].versioned
    assert by_name["3.4.1"].self_join_optimization and not by_name["3.3.2"].self_join_optimization
    assert by_name["3.0.2"].era == "0.10.2" and by_name["3.1.0"].era == "3.1"


def test_ci_judges_the_latest_and_every_version_in_turn(monkeypatch) -> None:
    monkeypatch.delenv("KJOIN_ORACLE_VERSIONS", raising=False)
    shares = -(-(len(VERSIONS) - 1) // CI_SHARE)
    seen: set[str] = set()
    for turn in range(shares):
        chosen = ci_versions(turn)
        assert chosen[0] == oracle_check.LATEST_JUDGE and len(set(chosen)) == len(chosen) == 1 + CI_SHARE
        seen |= {version.version for version in chosen}
    assert seen == {version.version for version in VERSIONS}
    assert ci_versions(shares) == ci_versions(0)
    monkeypatch.setenv("KJOIN_ORACLE_VERSIONS", "all")
    assert ci_versions() == VERSIONS
    monkeypatch.setenv("KJOIN_ORACLE_VERSIONS", "3.3.2, 4.4.0")
    assert [version.version for version in ci_versions()] == ["4.4.0", "3.3.2"]
    monkeypatch.setenv("KJOIN_ORACLE_VERSIONS", "3.5.0")
    with pytest.raises(oracle_check.HarnessError, match="3.5.0, which no judge is"):
        ci_versions()


def test_the_rotation_is_fixed_by_the_commit_not_by_the_day(monkeypatch) -> None:
    """A commit collects the same oracle tests on every machine: without git history the rotation is 0 (never the
    day), and KJOIN_ORACLE_ROTATION chooses."""
    monkeypatch.delenv("KJOIN_ORACLE_ROTATION", raising=False)
    found = oracle_check.rotation()
    assert found == oracle_check.rotation() and found >= 0
    monkeypatch.setattr(oracle_check.shutil, "which", lambda name: None)
    assert oracle_check.rotation() == 0
    monkeypatch.setenv("KJOIN_ORACLE_ROTATION", "7")
    assert oracle_check.rotation() == 7 and ci_versions() == ci_versions(7)
