"""``kafka_oracle.oracle_check.build`` runs Maven once per process for the same inputs (the Java sources, the pom, the
versions it resolves), again when one of them changes, and again after a failed build. Maven itself never runs here:
each test hands ``build`` a recorder of the commands it would run, over a harness folder of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_oracle import oracle_check
from kafka_oracle.oracle_check import HarnessError


class Maven:
    """Records every Maven command ``build`` asks for, as (first argument, offline), and writes what it would (the
    compiled Oracle class, a classpath file); fails offline when told to."""

    def __init__(self, offline_fails: bool = False) -> None:
        self.calls: list[tuple[str, bool]] = []
        self.offline_fails = offline_fails

    def __call__(self, args: list[str], offline: bool) -> None:
        self.calls.append((args[0], offline))
        if offline and self.offline_fails:
            raise HarnessError("offline: a jar is not in ~/.m2")
        target = oracle_check.HARNESS / "target"
        if args[0] == "compile":
            (target / "classes" / "kjoin" / "oracle").mkdir(parents=True, exist_ok=True)
            (target / "classes" / "kjoin" / "oracle" / "Oracle.class").write_bytes(b"\xca\xfe")
        else:
            output = next(arg.split("=", 1)[1] for arg in args if arg.startswith("-Dmdep.outputFile="))
            (oracle_check.HARNESS / output).write_text("a.jar:b.jar\n")

    @property
    def compiles(self) -> int:
        return sum(goal == "compile" for goal, _ in self.calls)


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A harness folder with a pom and one Java source, and a process that has built nothing yet."""
    (tmp_path / "pom.xml").write_text("<project/>")
    source = tmp_path / "src" / "main" / "java" / "kjoin" / "oracle" / "Oracle.java"
    source.parent.mkdir(parents=True)
    source.write_text("class Oracle {}")
    monkeypatch.setattr(oracle_check, "HARNESS", tmp_path)
    monkeypatch.setattr(oracle_check, "_built_from", None)
    return tmp_path


def test_a_second_build_of_the_same_sources_runs_no_maven(harness: Path) -> None:
    maven = Maven()
    oracle_check.build(mvn=maven)
    assert maven.compiles == 1
    resolved = {goal for goal, _ in maven.calls} - {"compile"}
    assert resolved == {"dependency:build-classpath"}
    assert len(maven.calls) == 1 + len(oracle_check.harness_versions())
    maven.calls.clear()
    oracle_check.build(mvn=maven)
    oracle_check.build(offline=False, mvn=maven)
    assert maven.calls == []


@pytest.mark.parametrize("change", ["a Java source", "a new Java source", "the pom"])
def test_a_changed_source_or_pom_builds_again(harness: Path, change: str) -> None:
    maven = Maven()
    oracle_check.build(mvn=maven)
    if change == "a Java source":
        (harness / "src" / "main" / "java" / "kjoin" / "oracle" / "Oracle.java").write_text("class Oracle { int x; }")
    elif change == "a new Java source":
        (harness / "src" / "main" / "java" / "kjoin" / "oracle" / "Json.java").write_text("class Json {}")
    else:
        (harness / "pom.xml").write_text("<project><version>2</version></project>")
    oracle_check.build(mvn=maven)
    assert maven.compiles == 2


def test_a_version_asked_for_anew_builds_again(harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    maven = Maven()
    oracle_check.build(mvn=maven)
    monkeypatch.setattr(oracle_check, "FK_JUDGES", (*oracle_check.FK_JUDGES, "9.9.9"))
    oracle_check.build(mvn=maven)
    assert maven.compiles == 2
    assert "9.9.9" in oracle_check.harness_versions()


def test_a_failed_build_is_not_remembered(harness: Path) -> None:
    def broken(args: list[str], offline: bool) -> None:
        raise HarnessError("mvn failed")

    with pytest.raises(HarnessError, match="mvn failed"):
        oracle_check.build(mvn=broken)
    maven = Maven()
    oracle_check.build(mvn=maven)
    assert maven.compiles == 1


def test_an_offline_build_that_fails_fetches_once_and_is_then_remembered(harness: Path) -> None:
    maven = Maven(offline_fails=True)
    oracle_check.build(mvn=maven)
    assert maven.calls[:2] == [("compile", True), ("compile", False)]
    assert all(not offline for _, offline in maven.calls[1:])
    maven.calls.clear()
    oracle_check.build(mvn=maven)
    assert maven.calls == []


def test_a_later_process_runs_no_maven_while_the_stamped_build_is_all_there(
    harness: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    maven = Maven()
    oracle_check.build(mvn=maven)
    assert (harness / "target" / oracle_check.BUILT_FROM).exists()
    monkeypatch.setattr(oracle_check, "_built_from", None)  # a new process
    maven.calls.clear()
    oracle_check.build(mvn=maven)
    assert maven.calls == []
    # the classes gone (make clean, a half-copied target): it builds again, and the stamp follows
    (harness / "target" / "classes" / "kjoin" / "oracle" / "Oracle.class").unlink()
    monkeypatch.setattr(oracle_check, "_built_from", None)
    oracle_check.build(mvn=maven)
    assert maven.compiles == 1
    # a source changed since the stamp: a later process builds again
    (harness / "src" / "main" / "java" / "kjoin" / "oracle" / "Oracle.java").write_text("class Oracle { int y; }")
    monkeypatch.setattr(oracle_check, "_built_from", None)
    oracle_check.build(mvn=maven)
    assert maven.compiles == 2


def test_a_build_that_fails_halfway_leaves_no_stamp(harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    oracle_check.build(mvn=Maven())
    (harness / "pom.xml").write_text("<project><version>3</version></project>")

    def broken(args: list[str], offline: bool) -> None:
        if args[0] != "compile":
            raise HarnessError("a jar is missing")

    with pytest.raises(HarnessError):
        oracle_check.build(mvn=broken)
    assert not (harness / "target" / oracle_check.BUILT_FROM).exists()
    monkeypatch.setattr(oracle_check, "_built_from", None)
    maven = Maven()
    oracle_check.build(mvn=maven)
    assert maven.compiles == 1
