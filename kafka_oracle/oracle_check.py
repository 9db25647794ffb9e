"""kjoin against the real Kafka Streams library: the driver of ``kafka_oracle/`` (the Java harness).

``python -m kafka_oracle.oracle_check [N]`` (``make kafka-check``) builds the harness, generates N random scenarios per
Kafka version, runs each through kjoin and, in one JVM per version, through TopologyTestDriver, and prints one
line per version: ``kafka-streams <version>: <N> scenarios, <M> mismatches``, then the file of each mismatch.
``tests/test_kafka_oracle.py`` runs the same comparison under pytest, where hypothesis shrinks a failure.

It lives with the tests, not in the ``kjoin`` package: it needs hypothesis, Maven and a JDK, none of which
kjoin's users need.

What the harness can see: each Kafka task alone (TopologyTestDriver has one partition per topic, so a scenario
with several partitions is cut into one harness run per task), except a foreign-key join's, whose tasks talk
through its subscription and response topics: it runs as one task that delivers every message at once, in the order
sent (kjoin's ``delivery: immediate``, or ``explicit`` instructions in that order), or, for a scenario run with
``task_idle_ms`` and ``{"advance": true}`` events (``Harness.run_task``), in the order a task that waits
max.task.idle.ms takes them: lowest timestamp first, until a partition runs dry (kjoin: ``delivery: explicit`` in that
order); the records on the output topic, and with ``send_old_values`` the old value of each ``Change`` (``[key,
value, ts, old]``, read by the harness's ``OldValues`` beside the output topic, 2.7+). Not: a commit after more than
one record (the driver commits after every record), other delivery orders, a versioned table's per-task stream time
in a foreign-key join over several partitions. Which Kafka version judges which of kjoin's eras is ``VERSIONS``
below.

Seed 000 (``kjoin.scenario.aggregate``): the harness builds what today's DSL expresses (``aggregate_specs``):
``window-aggregate`` (a windowed count), ``table-aggregate`` (a count grouped by a field, one partition: its
repartition topic crosses tasks) and the same-window ``wtable-wtable`` join; a windowed key is compared as
``[key, value, ts, {start_ms, end_ms}]``. ``SEED_000_VERSIONS`` judge them.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml
from hypothesis import strategies as st

import kjoin
from kjoin.scenario import AggregateSpec
from kjoin.trace import output_to_dict
from kjoin.records import render_value

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "kafka_oracle"


RELEASES = {
    (2, 4): 1, (2, 5): 1, (2, 6): 3, (2, 7): 2, (2, 8): 2,
    (3, 0): 2, (3, 1): 2, (3, 2): 3, (3, 3): 2, (3, 4): 1, (3, 5): 2, (3, 6): 2, (3, 7): 2, (3, 8): 1, (3, 9): 2,
    (4, 0): 2, (4, 1): 2, (4, 2): 2, (4, 3): 1, (4, 4): 0,
}  # fmt: skip
"""The newest patch release of every Kafka line the harness can run (2.4+: ``TestInputTopic``, ``StreamJoined``),
as Maven Central lists ``kafka-streams`` (checked 2026-11-25). A new release: add it here."""

FIRST_JUDGED = (2, 4)
"""The oldest line the harness can run: ``TestInputTopic`` and ``StreamJoined`` arrived in 2.4 (KIP-470, KIP-479)."""


def _name(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


@dataclass(frozen=True)
class KafkaVersion:
    """One Kafka version on the harness's classpath, and what it can judge (all derived from its number)."""

    version: str
    why: tuple[str, ...] = ()
    """The boundaries it stands beside: ``"before KAFKA-12960 (3.4)"``, ``"latest"``, ..."""

    @property
    def numbers(self) -> tuple[int, int, int]:
        major, minor, patch = (int(part) for part in self.version.split("."))
        return major, minor, patch

    @property
    def era(self) -> str:
        """The kjoin era this version judges (:attr:`kjoin.Semantics.era`)."""
        return kjoin.parse_semantics(self.version).era

    @property
    def deprecated_window_api(self) -> bool:
        """``JoinWindows.of`` (kjoin's ``grace_ms: null``) and ``of(..).grace(..)`` exist: in every judge. Deprecated
        in 3.0 (KIP-633) but kept in 4.0, when the other windows' deprecated builders went (KAFKA-16332,
        apache/kafka#17126): they are the only way to switch the spurious-result fix off (KAFKA-13813)."""
        return self.numbers >= (2, 1, 0)

    @property
    def window_grace_api(self) -> bool:
        """``JoinWindows.ofTimeDifferenceAndGrace`` exists (3.1+: KIP-633's join windows were reverted from 3.0 with
        KAFKA-10847); before, a grace is ``of(..).grace(..)``."""
        return self.numbers >= (3, 1, 0)

    @property
    def versioned(self) -> bool:
        """Versioned tables (3.5+, KIP-889) and the stream-table grace buffer (3.6+, KIP-923): both from 3.6."""
        return self.numbers >= (3, 6, 0)

    @property
    def old_values(self) -> bool:
        """The harness reads a table-table result's old values (``send_old_values``) through the Processor API of
        2.7+ (KIP-478; ``kafka_oracle/.../OldValues.java``)."""
        return self.numbers >= (2, 7, 0)

    @property
    def self_join_optimization(self) -> bool:
        """The single-store self-join (3.4+, KIP-862)."""
        return self.numbers >= (3, 4, 0)


def judged_versions(
    declared: tuple[kjoin.semantics.Boundary, ...] | None = None, releases: dict[tuple[int, int], int] = RELEASES
) -> tuple[KafkaVersion, ...]:
    """The Kafka versions that judge kjoin, derived from ``kjoin.semantics.boundaries()``: for each release a
    boundary names, the release just before it and a release with it. A boundary at a line's first release (3.4.0)
    is judged by the newest patch of the line before (3.3.2) and of its own line (3.4.1), unless a later boundary in
    that line needs an older patch (3.1.0 has the spurious-result fix but not KAFKA-13721 of 3.1.1); a boundary at a
    patch release (3.9.1) by that patch and the one before it (3.9.0). Boundaries older than the harness's first
    line (2.4) are judged by its newest patch (2.4.1) from the side after them; the latest release always judges.
    Newest first."""
    declared = kjoin.semantics.boundaries() if declared is None else declared
    latest = max(releases)
    firsts = sorted({(first, boundary) for boundary in declared for first in boundary.fixed_in}, key=lambda p: p[0])
    patches = {}  # line -> the patch releases some boundary starts at
    for first, _ in firsts:
        if first[2]:
            patches.setdefault(first[:2], set()).add(first[2])

    def newest(line: tuple[int, int]) -> tuple[int, int, int]:
        """The newest patch of ``line`` before any boundary inside the line (after its first release)."""
        top = releases[line]
        return (*line, min([top, *(patch - 1 for patch in patches.get(line, ()))]))

    def previous(line: tuple[int, int]) -> tuple[int, int] | None:
        older = [candidate for candidate in releases if candidate < line]
        return max(older) if older else None

    why: dict[tuple[int, int, int], list[str]] = {}

    def judge(version: tuple[int, int, int] | None, reason: str) -> None:
        if version is not None and version[:2] in releases and version[2] <= releases[version[:2]]:
            why.setdefault(version, []).append(reason)

    for first, boundary in firsts:
        label = f"{boundary.name} ({boundary.ticket}, {_name(first)})"
        if first[:2] < FIRST_JUDGED:
            judge(newest(FIRST_JUDGED), f"after {label}")
            continue
        if first[2]:
            judge((*first[:2], first[2] - 1), f"before {label}")
            judge(first, f"after {label}")
        else:
            line = previous(first[:2])
            before = None if line is None else (*line, releases[line])
            if before is not None and not boundary.holds(before):  # not when the line before has it from a patch
                judge(before, f"before {label}")
            judge(newest(first[:2]), f"after {label}")
    judge((*latest, releases[latest]), "latest")
    return tuple(KafkaVersion(_name(version), tuple(why[version])) for version in sorted(why, reverse=True))


VERSIONS = judged_versions()
"""The versions that judge kjoin, newest first (:func:`judged_versions`). kjoin's era 0.10.0 (0.10.0 and 0.10.1)
has no judge: TopologyTestDriver arrived in 1.1, and the 0.10 libraries need a broker."""

LATEST_JUDGE = VERSIONS[0]

CI_SHARE = 2
"""How many versions besides the latest one CI run judges (``tests/test_kafka_oracle.py``)."""


def rotation() -> int:
    """Which share of the judges this run takes, fixed by the commit so that a commit collects the same tests on every
    machine: ``KJOIN_ORACLE_ROTATION`` if set, else the number of commits (``git rev-list --count HEAD``: consecutive
    commits take consecutive shares), in a shallow clone (whose count is its depth) the commit's hash, and 0 where
    there is no git history at all."""
    if os.environ.get("KJOIN_ORACLE_ROTATION"):
        return int(os.environ["KJOIN_ORACLE_ROTATION"])
    git = shutil.which("git")
    if git is None:
        return 0

    def ask(*args: str) -> str:
        done = subprocess.run([git, *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    if ask("rev-parse", "--is-shallow-repository") == "true":
        head = ask("rev-parse", "HEAD")
        return int(head[:12], 16) if head else 0
    count = ask("rev-list", "--count", "HEAD")
    return int(count) if count.isdigit() else 0


def ci_versions(turn: int | None = None, share: int = CI_SHARE) -> tuple[KafkaVersion, ...]:
    """The versions one CI run judges: always the latest, and ``share`` of the others, taken in turn so that every
    version is judged once every ``ceil(others / share)`` runs (each share mixes old and new lines). Every share has
    ``share`` versions (the last one wraps around to the first others), so every commit collects as many tests.
    ``KJOIN_ORACLE_VERSIONS=all`` (or ``4.4.0,3.3.2``) chooses instead."""
    chosen = os.environ.get("KJOIN_ORACLE_VERSIONS", "").strip()
    if chosen:
        if chosen == "all":
            return VERSIONS
        names = [name.strip() for name in chosen.split(",") if name.strip()]
        unknown = [name for name in names if name not in {version.version for version in VERSIONS}]
        if unknown:
            raise HarnessError(
                f"KJOIN_ORACLE_VERSIONS names {', '.join(unknown)}, which no judge is; the judges are "
                f"{', '.join(version.version for version in VERSIONS)} (or all)"
            )
        return tuple(version for version in VERSIONS if version.version in names)
    others = VERSIONS[1:]
    shares = -(-len(others) // share)
    slot = (rotation() if turn is None else turn) % shares
    return (LATEST_JUDGE, *dict.fromkeys(others[(slot + shares * step) % len(others)] for step in range(share)))


FK_JUDGES = ("3.6.2", "3.7.0", "3.9.0", "3.9.1", "4.0.0", "4.0.1")
"""Extra classpaths for the foreign-key era tests of ``tests/test_kafka_oracle.py`` (not random sweeps): both sides
of KIP-962's left join (3.6.2, 3.7.0) and of KAFKA-16394's fix (3.9.0 and 4.0.0 double a changed row's result, 3.9.1
and 4.0.1 do not)."""

HANDLER_JUDGES = tuple(
    name
    for line, top in sorted(RELEASES.items(), reverse=True)
    for patch in range(top, -1, -1)
    if kjoin.parse_semantics(name := _name((*line, patch))).dead_letter_queue
    and name not in {version.version for version in VERSIONS}
)
"""Every release with the dead-letter queue (KIP-1034, 4.2) that no era boundary makes a judge (4.3.1 ... 4.2.0):
the exception handlers' records (the raw record a sink frees, KIP-1270's global switch of 4.3) are judged on each of
them by the topology oracle (``topology_oracle.JUDGES``) and ``tests/test_topology_dead_letters.py``."""


# -- building and running the harness ------------------------------------------------------------------------------
class HarnessError(RuntimeError):
    """The harness cannot be built or run: Java, Maven or the Kafka jars are missing."""


def _mvn(args: list[str], offline: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise HarnessError(
            "mvn is not on PATH: install Maven (apt-get install maven) and Java 17 to run the Kafka oracle"
        )
    command = [mvn, "-q", "-B", *(["-o"] if offline else []), *args]
    done = subprocess.run(command, cwd=HARNESS, capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(f"{' '.join(command)} failed in {HARNESS}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def harness_versions() -> tuple[str, ...]:
    """Every Kafka version the harness writes a classpath for: the derived judges, then the extra foreign-key judges
    (patch releases the FK fixes' tests name) and the releases with a dead-letter queue."""
    return tuple(dict.fromkeys([*(v.version for v in VERSIONS), *FK_JUDGES, *HANDLER_JUDGES]))


def harness_inputs() -> tuple[str, tuple[str, ...]]:
    """What a build of the harness depends on: a digest of the pom and every file under ``src/`` (path and bytes),
    and the versions it resolves (:func:`harness_versions`)."""
    digest = hashlib.sha256()
    for path in sorted([HARNESS / "pom.xml", *(HARNESS / "src").rglob("*")]):
        if path.is_file():
            digest.update(f"{path.relative_to(HARNESS).as_posix()}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest(), harness_versions()


_built_from: tuple[str, tuple[str, ...]] | None = None
"""The inputs (:func:`harness_inputs`) of the last build this process finished; ``None`` before the first."""

BUILT_FROM = "built-from.json"
"""The file under the harness's ``target/`` that names the inputs of the last finished build, for later processes."""


def _stamp_text(inputs: tuple[str, tuple[str, ...]]) -> str:
    return json.dumps([inputs[0], list(inputs[1])]) + "\n"


def _stamped(inputs: tuple[str, tuple[str, ...]]) -> bool:
    """A build of ``inputs`` finished in an earlier process and its output is all there: the stamp names them, the
    classes are compiled and every version's classpath file is written."""
    target = HARNESS / "target"
    try:
        if (target / BUILT_FROM).read_text() != _stamp_text(inputs):
            return False
    except (OSError, ValueError):  # missing, unreadable or not text: no stamp
        return False
    if not (target / "classes" / "kjoin" / "oracle" / "Oracle.class").exists():
        return False
    return all((target / f"cp-{version}.txt").exists() for version in inputs[1])


def build(offline: bool | None = None, *, mvn: Callable[[list[str], bool], None] | None = None) -> None:
    """Compile the harness and write one classpath file per version (a version whose file is newer than the pom is
    not resolved again). Offline when every jar is in ~/.m2 already; a first run (``offline=False``, or when the
    offline build fails) fetches from Maven Central.

    Once: tests, sweeps and benchmarks each call it so that each can run alone, and a Maven compile costs a minute
    or two of JVM on a busy machine, so a call whose inputs (:func:`harness_inputs`: the Java sources, the pom, the
    versions) are those of the last finished build returns at once: of this process, or of an earlier one whose
    stamp (``target/built-from.json``) names them and whose classes and classpath files are all there. A changed
    source builds again; a failed build is not remembered, so the next call tries again. ``mvn`` runs one Maven
    command (arguments, offline); tests give their own."""
    global _built_from
    run = _mvn if mvn is None else mvn
    inputs = harness_inputs()
    if inputs == _built_from or _stamped(inputs):
        _built_from = inputs
        return
    (HARNESS / "target" / BUILT_FROM).unlink(missing_ok=True)  # a build that fails halfway is not stamped
    if offline is None:
        try:
            _compile(True, run)
        except HarnessError:
            _compile(False, run)
    else:
        _compile(offline, run)
    _built_from = inputs
    (HARNESS / "target").mkdir(exist_ok=True)
    (HARNESS / "target" / BUILT_FROM).write_text(_stamp_text(inputs))


def _compile(offline: bool, mvn: Callable[[list[str], bool], None]) -> None:
    mvn(["compile"], offline)
    pom = (HARNESS / "pom.xml").stat().st_mtime
    for version in harness_versions():
        path = HARNESS / "target" / f"cp-{version}.txt"
        if path.exists() and path.stat().st_mtime > pom and path.read_text().strip():
            continue
        mvn(
            [
                "dependency:build-classpath",
                f"-Dkafka.version={version}",
                f"-Dmdep.outputFile=target/cp-{version}.txt",
            ],
            offline,
        )


def classpath(version: str) -> str:
    path = HARNESS / "target" / f"cp-{version}.txt"
    classes = HARNESS / "target" / "classes"
    if not path.exists() or not (classes / "kjoin" / "oracle" / "Oracle.class").exists():
        raise HarnessError(
            f"the harness is not built for Kafka {version}: run `make kafka-oracle` "
            "(or kafka_oracle.oracle_check.build())"
        )
    return f"{classes}{os.pathsep}{path.read_text().strip()}"


class Harness:
    """One JVM running the harness for one Kafka version; scenarios go in and come back one line at a time."""

    def __init__(self, version: str) -> None:
        java = shutil.which("java")
        if java is None:
            raise HarnessError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
        self.version = version
        self._process = subprocess.Popen(
            [
                java,
                "-Xshare:auto",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                classpath(version),
                "kjoin.oracle.Oracle",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._next_id = 0

    def run_task(self, data: dict[str, Any]) -> list[list[list[Any]]]:
        """The output records (``[key, value, ts]``) after each event of a one-task scenario."""
        self._next_id += 1
        line = json.dumps({**data, "id": self._next_id}, separators=(",", ":"))
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        if not answer:
            error = self._process.stderr.read() if self._process.stderr else ""
            raise HarnessError(f"the Kafka {self.version} harness stopped:\n{error[-3000:]}")
        result = json.loads(answer)
        if "error" in result:
            raise HarnessError(f"Kafka {self.version} refused the scenario: {result['error']}\n{line}")
        return result["outputs"]

    def run(self, scenario: kjoin.Scenario | AggregateSpec) -> list[list[list[Any]]]:
        """Kafka's outputs after each event of ``scenario``, task by task."""
        if isinstance(scenario, AggregateSpec):
            outputs = [[] for _ in scenario.data["events"]]
            for indexes, data in _tasks(scenario):
                for index, emitted in zip(indexes, self.run_task(data)):
                    outputs[index] = emitted
            return _decode(scenario, outputs)
        if scenario.join == "stream-globaltable" and scenario.partitions == 1:  # the global topic with its task
            return self.run_task(scenario.to_dict())
        outputs: list[list[list[Any]]] = [[] for _ in _input_events(scenario)]
        for indexes, data in _tasks(scenario):
            for index, emitted in zip(indexes, self.run_task(data)):
                outputs[index] = emitted
        return outputs

    def close(self) -> None:
        if self._process.stdin:
            self._process.stdin.close()
        self._process.wait(timeout=60)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tasks(scenario: kjoin.Scenario | AggregateSpec) -> list[tuple[list[int], dict[str, Any]]]:
    """The scenario cut into one-partition scenarios, one per Kafka task, with the indexes of their events."""
    if isinstance(scenario, AggregateSpec):
        data = dict(scenario.data)
        if data.get("partitions", 1) == 1:
            return [(list(range(len(data["events"]))), data)]
        steps = kjoin.run(scenario).steps
        return [
            (indexes, {**data, "partitions": 1, "events": [data["events"][i] for i in indexes]})
            for task in range(data["partitions"])
            if (indexes := [step.index for step in steps if step.task == task])
        ]
    data = scenario.to_dict()
    if scenario.join == "fk" and scenario.delivery.mode == "explicit":
        # Judged only in Kafka's order (``_explicit_in_kafka_order``): the instructions go, TopologyTestDriver
        # delivers at once. Any other order no TopologyTestDriver can show (docs/fidelity.md).
        data = {k: v for k, v in data.items() if k != "delivery"}
        data["events"] = [event for event in data["events"] if "deliver" not in event]
    if scenario.partitions == 1:
        return [(list(range(len(data["events"]))), data)]
    if scenario.tasks_share_time:
        raise HarnessError(
            "one_instance: on this version the tasks of one instance share a left/outer stream-stream join's time "
            "tracker (KAFKA-14862), so they cannot be cut apart, and TopologyTestDriver runs one task; judge it on "
            "the broker (kafka_oracle/broker_check.py, tests/test_broker_instance_time.py)"
        )
    if scenario.join == "fk":
        # A foreign-key join's tasks talk through its subscription and response topics, so they cannot be cut
        # apart; TopologyTestDriver runs them as one task that delivers every message at once, in the order sent:
        # kjoin's immediate delivery over any number of partitions (the messages' partitions change no order then).
        # Not so a versioned table's store, which keeps one observed stream time per task: one task would merge them.
        if scenario.left.versioned or scenario.right.versioned:
            raise HarnessError(
                "a fk join over a versioned table on several partitions: each task's versioned store has a stream "
                "time of its own, which TopologyTestDriver's one task cannot show; judge it on one partition"
            )
        events = [{k: v for k, v in event.items() if k not in ("partition", "offset")} for event in data["events"]]
        return [(list(range(len(events))), {**data, "partitions": 1, "events": events})]
    records = scenario.records()
    tasks = []
    for task in range(scenario.partitions):
        indexes = [i for i, record in enumerate(records) if record.partition == task and _in_task(scenario, record)]
        if indexes:
            if scenario.join == "stream-globaltable":  # every task reads the whole global topic, in the same order
                indexes = [i for i, record in enumerate(records) if i in indexes or record.side.value == "right"]
            events = [{k: v for k, v in data["events"][i].items() if k not in ("partition", "offset")} for i in indexes]
            tasks.append((indexes, {**data, "partitions": 1, "events": events}))
    return tasks


def _in_task(scenario: kjoin.Scenario, record: Any) -> bool:
    """Does ``record`` belong to its partition's task? A global topic's records belong to no task (the global
    thread reads them for every task)."""
    return scenario.join != "stream-globaltable" or record.side.value == "left"


def _input_events(scenario: kjoin.Scenario | AggregateSpec) -> list[dict[str, Any]]:
    """The input records (an explicit delivery's ``{deliver: ...}`` instructions are none: TopologyTestDriver
    delivers every message at once, and kjoin counts a delivery's outputs with the record that sent it)."""
    if isinstance(scenario, AggregateSpec):
        return list(scenario.data["events"])
    return [event for event in scenario.to_dict()["events"] if "deliver" not in event]


def _decode(scenario: kjoin.Scenario | AggregateSpec, outputs: list[list[list[Any]]]) -> list[list[list[Any]]]:
    """Kafka's outputs as :func:`kjoin_outputs` writes them: a windowed key (the harness writes the JSON
    ``[key, start_ms, end_ms]``) becomes ``[key, value, ts, {start_ms, end_ms}]``."""
    if not isinstance(scenario, AggregateSpec) or scenario.join == "table-aggregate":
        return outputs
    decoded = []
    for emitted in outputs:
        records = []
        for key, value, ts in emitted:
            inner, start_ms, end_ms = json.loads(key)
            records.append([inner, value, ts, {"start_ms": start_ms, "end_ms": end_ms}])
        decoded.append(records)
    return decoded


JVM_TASKS = 4000
"""Tasks one harness JVM runs. A JVM given all of ``N=10000``'s tasks (about 15,000) grew to its default heap limit
(a quarter of the machine's memory) on 3.0.1 and spent most of its time in full garbage collections."""


def _harness(version: str, lines: list[str], threads: int) -> list[dict[str, Any]]:
    """The harness's answers to ``lines`` (one task each), from one JVM."""
    java = shutil.which("java")
    if java is None:
        raise HarnessError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
    command = [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath(version)]
    done = subprocess.run(
        [*command, "kjoin.oracle.Oracle", "--threads", str(threads)],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if done.returncode != 0 or len(answers) != len(lines):
        raise HarnessError(f"the Kafka {version} harness failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return answers


def run_batch(version: str, batch: list[kjoin.Scenario], threads: int = 8) -> list[list[list[list[Any]]] | str]:
    """Kafka's outputs after each event of every scenario in ``batch`` (one JVM, ``threads`` TopologyTestDriver at
    a time, :data:`JVM_TASKS` tasks per JVM), or the error Kafka raised for a scenario."""
    plan = [_tasks(scenario) for scenario in batch]
    lines = [json.dumps(data, separators=(",", ":")) for tasks in plan for _, data in tasks]
    answers = []
    for start in range(0, len(lines), JVM_TASKS):  # one JVM per chunk: its heap stays bounded whatever N is
        answers += _harness(version, lines[start : start + JVM_TASKS], threads)
    results: list[list[list[list[Any]]] | str] = []
    position = 0
    for scenario, tasks in zip(batch, plan):
        outputs: list[list[list[Any]]] = [[] for _ in _input_events(scenario)]
        error = None
        for indexes, _ in tasks:
            answer = answers[position]
            position += 1
            if "error" in answer:
                error = f"Kafka {version} raised {answer['error']}"
                continue
            for index, emitted in zip(indexes, answer["outputs"]):
                outputs[index] = emitted
        results.append(error if error is not None else _decode(scenario, outputs))
    return results


def difference(scenario: kjoin.Scenario, kafka: list[list[list[Any]]] | str, version: str) -> str | None:
    """None when kjoin's outputs are Kafka's, event by event; else the first difference, in words."""
    if isinstance(kafka, str):
        return kafka
    ours = kjoin_outputs(scenario)
    if kafka == ours:
        return None
    events = _input_events(scenario)
    for index, (theirs, mine) in enumerate(zip(kafka, ours)):
        if theirs != mine:
            return f"event {index} ({events[index]}): Kafka {version} emitted {theirs}, kjoin {mine}"
    return f"Kafka gave outputs for {len(kafka)} events, kjoin for {len(ours)}"


def shrink(scenario: kjoin.Scenario | AggregateSpec, harness: Harness, budget: int = 400) -> kjoin.Scenario:
    """A small scenario that still differs from Kafka (``harness``), within ``budget`` runs of the harness.

    In turn, while each step keeps a difference: the events of the one task that differs, alone on one partition
    (a seed-000 window aggregate's or WTable join's too);
    fewer joins in a chain, and no caching, materialization or optimization; events dropped in chunks, halving the
    chunk down to single events (delta debugging, so a 150-event scenario takes tens of runs, not hundreds); then
    the timestamps moved down to start near 0, and values and keys renamed to plain ones."""
    spec = isinstance(scenario, AggregateSpec)
    load = AggregateSpec.from_dict if spec else kjoin.Scenario.from_dict
    data = dict(scenario.data) if spec else scenario.to_dict()
    runs = [budget]

    def differs(candidate: dict[str, Any]) -> bool:
        if runs[0] <= 0:
            return False
        runs[0] -= 1
        try:
            return compare(load(candidate), harness) is not None
        except Exception:  # noqa: BLE001 - a candidate Kafka or kjoin refuses, or that breaks kjoin, is not smaller
            return False

    # a foreign-key join's and a table aggregate's tasks talk through internal topics: they are never cut apart
    if data.get("partitions", 1) > 1 and data["join"] not in ("fk", "table-aggregate"):
        for _, task in _tasks(scenario):
            if differs(task):
                data = task
                break
    if not spec and data["join"] == "fk":
        for simpler in _simpler_fk(data):
            if differs(simpler):
                data = simpler
    for field in ("then", "caching", "materialized", "optimize", "send_old_values"):
        while data.get(field):
            smaller = dict(data)
            if field == "then" and len(data["then"]) > 1:
                smaller["then"] = data["then"][:-1]
            else:
                del smaller[field]
            if not differs(smaller):
                break
            data = smaller
    data = {**data, "events": _fewer_events(data, differs)}
    for rewrite in (_from_zero, _plain_values, _plain_keys):
        smaller = rewrite(data)
        if smaller != data and differs(smaller):
            data = smaller
    return load(data)


def _simpler_fk(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A fk scenario with immediate delivery in place of explicit, then on one partition (each only if it is not
    so already)."""
    simpler = []
    if data.get("delivery") == "explicit":
        immediate = {k: v for k, v in data.items() if k != "delivery"}
        data = {**immediate, "events": [event for event in data["events"] if "deliver" not in event]}
        simpler.append(data)
    if data.get("partitions", 1) > 1:
        one = [{k: v for k, v in event.items() if k not in ("partition", "offset")} for event in data["events"]]
        simpler.append({**data, "partitions": 1, "events": one})
    return simpler


def _fewer_events(data: dict[str, Any], differs: Any) -> list[dict[str, Any]]:
    """Delta debugging over the events: drop chunks of ``size`` events while a difference stays, then halve."""
    events = list(data["events"])
    size = max(len(events) // 2, 1)
    while events:
        start = len(events) - size
        dropped = False
        while start > -size:
            candidate = events[: max(start, 0)] + events[start + size :]
            if candidate != events and differs({**data, "events": candidate}):
                events = candidate
                dropped = True
            start -= size
        if not dropped:
            if size == 1:
                break
            size //= 2
    return events


def _from_zero(data: dict[str, Any]) -> dict[str, Any]:
    """The timestamps moved down by whole minutes (a window store's segments stay where they were)."""
    stamps = [event["ts"] for event in data["events"] if "ts" in event]
    shift = min(stamps, default=0) // 60_000 * 60_000
    if not shift:
        return data
    return {**data, "events": [{**e, "ts": e["ts"] - shift} if "ts" in e else e for e in data["events"]]}


def _plain_values(data: dict[str, Any]) -> dict[str, Any]:
    """Each side's text values renamed ``L0``, ``L1`` ..., ``R0`` ... in order of appearance (nulls and structured
    values stay)."""
    names: dict[tuple[str, str], str] = {}
    events = []
    for event in data["events"]:
        value = event.get("value")
        if isinstance(value, str):
            side = event["side"][0].upper()
            value = names.setdefault((side, value), f"{side}{sum(1 for s, _ in names if s == side)}")
        events.append({**event, "value": value} if "value" in event else event)
    return {**data, "events": events}


def _plain_keys(data: dict[str, Any]) -> dict[str, Any]:
    """Keys renamed ``k1``, ``k2`` ... in order of appearance, on one partition only (a key's partition and a
    foreign key's text would change)."""
    if data.get("partitions", 1) != 1 or data["join"] == "fk":
        return data
    names: dict[str, str] = {}
    events = []
    for event in data["events"]:
        key = event.get("key")
        if isinstance(key, str):
            key = names.setdefault(key, f"k{len(names) + 1}")
        events.append({**event, "key": key} if "key" in event else event)
    return {**data, "events": events}


def shrunk_yaml(version: str, mismatches: list[tuple[kjoin.Scenario, str]], limit: int = 25) -> list[str]:
    """Each mismatch as kjoin's YAML, headed by its first difference: the first ``limit`` shrunk against Kafka
    ``version`` (one harness JVM for them all; seconds each), and so headed by the shrunk scenario's difference and
    the size of the scenario it came from; any further ones as they are."""
    texts = []
    if not mismatches:
        return texts
    with Harness(version) as harness:
        for number, (scenario, found) in enumerate(mismatches):
            if number >= limit:
                texts.append(f"# {found}\n# not shrunk (only the first {limit} are)\n" + scenario_yaml(scenario))
                continue
            smaller = shrink(scenario, harness)
            try:
                found = compare(smaller, harness) or found
            except HarnessError:
                pass
            size = len(_input_events(scenario))
            texts.append(f"# {found}\n# shrunk from {size} events\n" + scenario_yaml(smaller))
    return texts


def generate(version: KafkaVersion, count: int, seed_000: bool = False) -> list[kjoin.Scenario]:
    """``count`` random scenarios that ``version`` can judge (hypothesis, a fresh seed each call); with
    ``seed_000``, seed 000's aggregates and WTable joins (:func:`aggregate_specs`) instead."""
    from hypothesis import HealthCheck, Phase, given, settings

    found: list[kjoin.Scenario] = []

    @settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(aggregate_specs(version) if seed_000 else scenarios(version))
    def collect(scenario: kjoin.Scenario) -> None:
        found.append(scenario)

    collect()
    return found


def check(
    version: KafkaVersion, count: int, seed_000: bool = False
) -> tuple[list[kjoin.Scenario], list[tuple[kjoin.Scenario, str]]]:
    """Generate ``count`` scenarios (``seed_000``: seed 000's aggregates and WTable joins), run them through kjoin
    and Kafka; the scenarios and the mismatches. Nothing is set aside: every scenario is compared."""
    batch: list[kjoin.Scenario] = []
    for _ in range(10):  # hypothesis may stop short of max_examples; draw again until there are ``count``
        batch += generate(version, count - len(batch), seed_000)
        if len(batch) >= count:
            break
    mismatches = []
    for scenario, kafka in zip(batch, run_batch(version.version, batch)):
        found = difference(scenario, kafka, version.version)
        if found is not None:
            mismatches.append((scenario, found))
    return batch, mismatches


def kjoin_outputs(scenario: kjoin.Scenario) -> list[list[list[Any]]]:
    """kjoin's output records (``[key, value, ts]``, a tombstone's value null; with ``send_old_values``
    ``[key, value, ts, old]``) after each input record; a foreign-key join's deliveries count with the input record
    that sent them. A seed-000 scenario's windowed
    output is ``[key, value, ts, {start_ms, end_ms}]``."""
    if isinstance(scenario, AggregateSpec):
        per_spec_event = []
        for step in kjoin.run(scenario).steps:
            records = []
            for output in step.outputs:
                data = output_to_dict(output)
                value = None if output.tombstone else render_value(output.value)
                record = [render_value(data["key"]) if data["key"] is not None else None, value, output.ts]
                if "window" in data:
                    record.append(data["window"])
                records.append(record)
            per_spec_event.append(records)
        return per_spec_event
    per_event: list[list[list[Any]]] = []
    for step in kjoin.run(scenario).steps:
        if step.message is None:
            per_event.append([])
        for output in step.outputs:
            value = None if output.tombstone else render_value(output.value)
            record = [render_value(output.key) if output.key is not None else None, value, output.ts]
            if scenario.send_old_values:  # the old value of Kafka's Change (the harness's OldValues observer)
                record.append(None if output.old is None else render_value(output.old))
            per_event[-1].append(record)
    return per_event


def compare(scenario: kjoin.Scenario, harness: Harness) -> str | None:
    """None when kjoin and Kafka agree on every event's outputs; else a description of the first difference."""
    expected = harness.run(scenario)
    actual = kjoin_outputs(scenario)
    if expected == actual:
        return None
    for index, (kafka, ours) in enumerate(zip(expected, actual)):
        if kafka != ours:
            event = _input_events(scenario)[index]
            return f"event {index} ({event}): Kafka {harness.version} emitted {kafka}, kjoin {ours}"
    return f"Kafka gave outputs for {len(expected)} events, kjoin for {len(actual)}"


def scenario_yaml(scenario: kjoin.Scenario) -> str:
    """The scenario in kjoin's YAML format, events one a line."""
    data = dict(scenario.data) if isinstance(scenario, AggregateSpec) else scenario.to_dict()
    events = data.pop("events")

    def flow(value: Any) -> str:
        text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1000, allow_unicode=True)
        return text.strip().removesuffix("\n...")

    text = "".join(f"{key}: {flow(value)}\n" for key, value in data.items())
    return text + "events:\n" + "".join(f"  - {flow(event)}\n" for event in events)


# -- random scenarios ----------------------------------------------------------------------------------------------
KEYS = st.sampled_from(["k1", "k2", "k3", None])
"""Few keys, so that they meet; ``None`` is a null key. Strings only: the harness's serdes are strings."""


SPREAD_TIMESTAMPS = st.one_of(st.integers(0, 40), st.integers(59_980, 60_040), st.integers(119_990, 120_040))
"""Stream-stream timestamps around the first two minute boundaries: a window store's segments last at least 60 s
(``max(retention / 2, 60 s)``), so before 3.4 a record older than the retention is found until a put past the next
boundary drops its segment, and a put into a dropped segment is refused; late records meet closed windows."""


def _value(prefix: str) -> st.SearchStrategy:
    return st.one_of(st.none(), st.integers(0, 9).map(lambda i: f"{prefix}{i}"))


@st.composite
def _events(
    draw: Any,
    sides: tuple[str, ...],
    max_ts: int,
    left_value: st.SearchStrategy | None = None,
    keys: dict[str, st.SearchStrategy] | None = None,
    timestamps: st.SearchStrategy | None = None,
) -> list[dict[str, Any]]:
    result = []
    for _ in range(draw(st.integers(0, 16))):
        side = draw(st.sampled_from(sides))
        key = draw(keys[side] if keys else KEYS)
        value = draw(left_value if side == "left" and left_value is not None else _value(side[0].upper()))
        result.append(
            {
                "side": side,
                "key": key,
                "value": value,
                "ts": draw(st.integers(0, max_ts) if timestamps is None else timestamps),
            }
        )
    return result


@st.composite
def _window(draw: Any, version: KafkaVersion, small: bool = False) -> dict[str, Any]:
    window: dict[str, Any] = {"before_ms": draw(st.integers(0, 6)), "after_ms": draw(st.integers(0, 6))}
    graces = [st.integers(0, 6)]
    if version.deprecated_window_api:
        graces.append(st.none())
    window["grace_ms"] = draw(st.one_of(*graces))
    if (
        window["grace_ms"] is not None
        and version.window_grace_api
        and version.deprecated_window_api
        and draw(st.booleans())
    ):
        window["spurious_result_fix"] = False  # JoinWindows.of(..).grace(..): a grace, and the eager results
    return window


def _stream_stream_shape(
    draw: Any, data: dict[str, Any], version: KafkaVersion, window: st.SearchStrategy, chain: st.SearchStrategy
) -> tuple[str, ...]:
    """A stream-stream scenario's topology: a plain join, a self-join (optimized where ``version`` has it, inner
    only) or a chain of ``chain`` more joins (``then:``, each with its own ``window`` half the time). Returns the
    sides its events use."""
    shape = draw(st.sampled_from(["plain", "plain", "self", "chain"]))
    if shape == "self":
        data["self_join"] = True
        if version.self_join_optimization and data["variant"] == "inner" and draw(st.booleans()):
            data["optimize"] = True
    elif shape == "chain":
        data["then"] = [
            {
                "variant": draw(st.sampled_from(["inner", "left", "outer"])),
                **({"window": draw(window)} if draw(st.booleans()) else {}),
            }
            for _ in range(draw(chain))
        ]
    return ("left",) if shape == "self" else ("left", "right")


@st.composite
def narrow_scenarios(draw: Any, version: KafkaVersion) -> kjoin.Scenario:
    """A random scenario of the narrow generator that Kafka ``version`` can judge, with kjoin's semantics
    of that version: at most 16 events, windows of 0-6 ms, three keys."""
    join = draw(st.sampled_from(["stream-stream", "stream-table", "table-table", "fk", "stream-globaltable"]))
    data: dict[str, Any] = {"join": join, "semantics": version.version}
    if join == "stream-globaltable":
        return kjoin.Scenario.from_dict({**data, **draw(_global_table(version))})
    if join == "stream-stream":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
        data["window"] = draw(_window(version))
        sides = _stream_stream_shape(draw, data, version, _window(version), chain=st.just(1))
        spread = draw(st.booleans())
        data["events"] = draw(_events(sides, 40, timestamps=SPREAD_TIMESTAMPS if spread else None))
        data["partitions"] = draw(st.integers(1, 2))
    elif join == "stream-table":
        data["variant"] = draw(st.sampled_from(["inner", "left"]))
        if version.versioned and draw(st.booleans()):
            retention = draw(st.integers(0, 12))
            data["right"] = {"versioned": True, "history_retention_ms": retention}
            if draw(st.booleans()):
                data["grace_ms"] = draw(st.integers(0, retention))
        # Kafka (3.7 to 4.3 at least) throws a NullPointerException for a null-key stream record that meets the
        # grace buffer (KIP-962's null-key left join and KIP-923's buffer): no output to compare with.
        keys = {"left": st.sampled_from(["k1", "k2", "k3"]), "right": KEYS} if "grace_ms" in data else None
        data["events"] = draw(_events(("left", "right"), 30, keys=keys))
        data["partitions"] = draw(st.integers(1, 2))
    elif join == "table-table":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
        shape = draw(st.sampled_from(["plain", "versioned", "chain", "materialized"]))
        if shape == "versioned" and version.versioned:
            for side in ("left", "right"):
                if draw(st.booleans()):
                    data[side] = {"versioned": True, "history_retention_ms": draw(st.integers(0, 12))}
        elif shape == "chain":
            data["then"] = [{"variant": draw(st.sampled_from(["inner", "left", "outer"]))}]
        elif shape == "materialized":
            data["materialized"] = True
            caching = draw(st.lists(st.sampled_from(["left", "right", "result"]), unique=True, max_size=3))
            if caching:
                data["caching"] = sorted(caching)
        data["events"] = draw(_events(("left", "right"), 30))
        data["partitions"] = draw(st.integers(1, 2))
    else:
        data["variant"] = draw(st.sampled_from(["inner", "left"]))
        data["foreign_key"] = "fk"
        if draw(st.booleans()):
            data["materialized"] = True
            if draw(st.booleans()):
                data["caching"] = ["result"]
        foreign = st.sampled_from(["X", "Y", None])
        left_value = st.one_of(st.none(), st.builds(lambda fk, v: {"fk": fk, "v": v}, foreign, st.integers(0, 9)))
        keys = {"left": st.sampled_from(["A", "B", None]), "right": st.sampled_from(["X", "Y", None])}
        data["events"] = draw(_events(("left", "right"), 30, left_value, keys))
        for event in data["events"]:  # now and then a customer whose value is "": zero bytes, read back as null
            if event["side"] == "right" and event["value"] is not None and draw(st.integers(0, 5)) == 0:
                event["value"] = ""
    return kjoin.Scenario.from_dict(data)


# -- the wide generator ---------------------------------------------------------------------------------
# The narrow generator above never found these classes: they need long scenarios over many windows, several keys
# in a window at once, null values among them, odd keys and values, several partitions, longer chains and nested
# foreign keys. The wide one draws all of that; ``scenarios`` mixes both, so the narrow one's reach stays.
ODD_TEXTS = ("", "null", "NULL", "a,b", ",", "é", "ß✓", "日本", "🙂", " ", '"q"', "-", "x-y")
"""Keys and values that a serde, a joiner's ``-`` or a printed ``null`` could confuse: empty, the text ``null``,
commas, unicode (two-, three- and four-byte UTF-8), spaces, quotes."""

WIDE_WINDOW_SCALES = (
    st.integers(0, 6),
    st.integers(0, 60),
    st.integers(0, 2_000),
    st.integers(0, 30_000),
    st.sampled_from([60_000, 90_000, 120_000, 300_000]),
)
"""Window sizes and graces from 0 ms to minutes."""


@dataclass(frozen=True)
class _Pool:
    """What one side's keys or values are drawn from, by a seeded ``random.Random``: hypothesis draws a scenario's
    shape and pools, a seed draws its (up to 150) events, which keeps a long scenario cheap to generate. (Nothing
    relies on hypothesis's shrinking here: ``shrink`` shrinks a mismatch against Kafka itself.)"""

    choices: tuple[Any, ...]
    null_share: int = 0
    """About one draw in ``null_share`` is null (0: never)."""

    def __call__(self, rng: random.Random) -> Any:
        if self.null_share and rng.randrange(self.null_share) == 0:
            return None
        choice = rng.choice(self.choices)
        return choice(rng) if callable(choice) else choice


def _wide_keys(draw: Any, null_keys: bool = True) -> _Pool:
    """Up to eight keys for one scenario, plain and odd ones; a null key now and then."""
    pool = [f"k{i}" for i in range(1, 9)] + list(ODD_TEXTS)
    count = draw(st.integers(1, 8))
    chosen = draw(st.lists(st.sampled_from(pool), min_size=count, max_size=count, unique=True))
    return _Pool(tuple(chosen), draw(st.sampled_from([0, 6])) if null_keys else 0)


def _wide_values(prefix: str, null_share: int) -> _Pool:
    """Values like ``L3`` mostly, odd texts now and then, null about one in ``null_share`` (0: never)."""
    numbered = lambda rng: f"{prefix}{rng.randrange(100)}"  # noqa: E731
    return _Pool((numbered, numbered, numbered, lambda rng: rng.choice(ODD_TEXTS)), null_share)


def _timeline(rng: random.Random, count: int, span: int, dense: bool = False) -> list[int]:
    """``count`` timestamps in processing order over many windows of about ``span`` ms: mostly forward in small
    steps, with ties, jumps over several windows (or past a minute), and late records behind stream time; or (one
    in six) scattered at random over the whole stretch, on a grid now and then, so that many ties and late
    records meet; or (one in six) dense, several records a window and many at one ts."""
    span = max(span, 1)
    cursor = rng.choice([0, 0, 1, span, 59_990, 119_990])
    mode = 1 if dense else rng.randrange(6)
    if mode == 0:  # scattered: each timestamp anywhere over a few windows per ten records, often tied
        width = max(count * span // rng.choice([2, 5, 10]), 1)
        grid = rng.choice([1, 1, max(span // 4, 1)])
        return [cursor + rng.randint(0, width) // grid * grid for _ in range(count)]
    if mode == 1:  # dense: several records per window, many at one ts, late ones within a few windows
        step = max(span // 3, 1)
        result = []
        for _ in range(count):
            if rng.random() < 0.6:
                cursor += rng.choice([0, 0, rng.randint(0, step)])
                result.append(cursor)
            else:
                result.append(max(0, cursor - rng.randint(0, 3 * span)))
        return result
    result = []
    for _ in range(count):
        move = rng.choice(["tie", "step", "step", "step", "jump", "late", "late", "far"])
        if move == "tie":
            ts = cursor
        elif move == "step":
            cursor += rng.randint(0, span)
            ts = cursor
        elif move == "jump":
            cursor += rng.randint(span, 4 * span + 2)
            ts = cursor
        elif move == "far":
            cursor += rng.choice([60_000 - cursor % 60_000, 60_001, 3 * span + 50])
            ts = cursor
        else:  # late: behind stream time, within a few windows of it
            ts = max(0, cursor - rng.randint(1, 3 * span + 2))
        result.append(ts)
    return result


@st.composite
def _wide_events(
    draw: Any,
    sides: tuple[str, ...],
    span: int,
    keys: dict[str, _Pool],
    values: dict[str, _Pool],
    long: bool | None = None,
    dense: bool = False,
) -> list[dict[str, Any]]:
    """Events of a short (1-16) or a long (17-150) scenario (``long``: which; default either, half and half). Some
    scenarios repeat a record's side, key and ts with another value: a left/outer join's buffer then holds a list of
    values under one ``<ts, side, key>``, which Kafka's sweep reads value by value.

    The seeded ``rng`` draws the length too, uniformly: hypothesis favours the low end of a range (of 200 scenarios
    drawn with ``st.integers``, a quarter were empty and one in ten long), and the long ones find what short ones
    cannot."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if long is None:
        long = rng.random() < 0.5
    count = rng.randint(17, 150) if long else rng.randint(1, 16)
    weight = 2 if dense else rng.randint(1, 4)  # the left side's share, 1 to 4 in 5
    events = []
    again = rng.choice([0, 4, 8])  # now and then (one in ``again``) a record of the same side, key and ts as the last
    for ts in _timeline(rng, count, span, dense):
        if events and again and rng.randrange(again) == 0:
            last = events[-1]
            events.append({**last, "value": values[last["side"]](rng)})
            continue
        side = sides[0] if len(sides) == 1 else ("left" if rng.randrange(5) < weight else "right")
        events.append({"side": side, "key": keys[side](rng), "value": values[side](rng), "ts": ts})
    return events


@st.composite
def _wide_window(draw: Any, version: KafkaVersion) -> dict[str, Any]:
    scale = draw(st.sampled_from(WIDE_WINDOW_SCALES))
    window: dict[str, Any] = {"before_ms": draw(scale), "after_ms": draw(scale)}
    graces = [scale, st.just(0)]
    if version.deprecated_window_api:
        graces.append(st.none())
    window["grace_ms"] = draw(st.one_of(*graces))
    if window["grace_ms"] is not None and version.window_grace_api and version.deprecated_window_api:
        if draw(st.booleans()):
            window["spurious_result_fix"] = False
    return window


def _span(window: dict[str, Any]) -> int:
    return window["before_ms"] + window["after_ms"] + (window["grace_ms"] or 0) // 2 + 1


def _fk_left_values(path: str, foreign: _Pool, null_share: int) -> _Pool:
    """Left values of a fk join: the foreign key at ``path`` (``a.b`` nests), now and then a null part way down the
    path, and a value field; null (a delete) about one in ``null_share``."""
    parts = path.split(".")

    def value(rng: random.Random) -> Any:
        node: Any = foreign(rng)
        cut = rng.randrange(2 * len(parts))  # below len(parts) - 1: the path stops with a null there
        for depth in range(len(parts) - 1, -1, -1):
            node = {parts[depth]: None if depth == cut + 1 else node}
        if rng.randrange(2):
            node["v"] = f"v{rng.randrange(100)}" if rng.randrange(4) else rng.choice(ODD_TEXTS)
        return node

    return _Pool((value,), null_share)


@st.composite
def wide_scenarios(
    draw: Any, version: KafkaVersion, joins: tuple[str, ...] | None = None, long: bool | None = None
) -> kjoin.Scenario:
    """A random scenario of the wide generator that Kafka ``version`` can judge: every option the harness builds.
    ``joins`` narrows the joins (default: all, stream-stream twice as often), ``long`` the length (True: 17 to 150
    events, False: up to 16; default either), for a sweep aimed at one kind of difference."""
    join = draw(
        st.sampled_from(
            joins or ["stream-stream", "stream-stream", "stream-table", "table-table", "fk", "stream-globaltable"]
        )
    )
    data: dict[str, Any] = {"join": join, "semantics": version.version}
    if join == "stream-globaltable":
        return kjoin.Scenario.from_dict({**data, **draw(_global_table(version, wide=True, long=long))})
    null_share = draw(st.sampled_from([0, 3, 6, 12]))
    value = {side: _wide_values(side[0].upper(), null_share) for side in ("left", "right")}
    keys = {side: _wide_keys(draw) for side in ("left", "right")}
    keys["right"] = draw(st.sampled_from([keys["left"], keys["right"]]))  # mostly meeting keys
    if join == "stream-stream":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
        # Dense (one in four): windows of a few ms, a handful of keys both sides share, several records a window:
        # both sides of an outer join wait in its buffer at once, in lists under one <ts, side, key>.
        dense = draw(st.integers(0, 3)) == 0
        if dense:
            data["window"] = {name: draw(st.integers(0, 8)) for name in ("before_ms", "after_ms", "grace_ms")}
            keys["left"] = keys["right"] = _Pool(tuple(f"k{i}" for i in range(1, draw(st.integers(3, 7)))))
        else:
            data["window"] = draw(_wide_window(version))
        sides = _stream_stream_shape(draw, data, version, _wide_window(version), chain=st.integers(1, 3))
        data["events"] = draw(_wide_events(sides, _span(data["window"]), keys, value, long, dense))
        data["partitions"] = 1 if dense and draw(st.booleans()) else draw(st.integers(1, 4))
    elif join == "stream-table":
        data["variant"] = draw(st.sampled_from(["inner", "left"]))
        span = draw(st.sampled_from([5, 50, 5_000]))
        if version.versioned and draw(st.booleans()):
            retention = draw(st.integers(0, 3 * span))
            data["right"] = {"versioned": True, "history_retention_ms": retention}
            if draw(st.booleans()):
                data["grace_ms"] = draw(st.integers(0, retention))
                # Kafka (3.7 to 4.3 at least) throws a NullPointerException for a null-key stream record that meets
                # the grace buffer (KIP-962's null-key left join and KIP-923's buffer): no output to compare with.
                keys["left"] = _wide_keys(draw, null_keys=False)
        data["events"] = draw(_wide_events(("left", "right"), span, keys, value, long))
        data["partitions"] = draw(st.integers(1, 4))
    elif join == "table-table":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
        shape = draw(st.sampled_from(["plain", "versioned", "chain", "materialized"]))
        span = draw(st.sampled_from([5, 50, 5_000]))
        if shape == "versioned" and version.versioned:
            for side in ("left", "right"):
                if draw(st.booleans()):
                    data[side] = {"versioned": True, "history_retention_ms": draw(st.integers(0, 3 * span))}
        elif shape == "chain":
            data["then"] = [
                {"variant": draw(st.sampled_from(["inner", "left", "outer"]))} for _ in range(draw(st.integers(1, 3)))
            ]
        elif shape == "materialized":
            data["materialized"] = True
            caching = draw(st.lists(st.sampled_from(["left", "right", "result"]), unique=True, max_size=3))
            if caching:
                data["caching"] = sorted(caching)
        if version.old_values and shape != "versioned" and draw(st.integers(0, 2)) == 0:
            data["send_old_values"] = True  # compared as [key, value, ts, old] (the harness's OldValues)
        data["events"] = draw(_wide_events(("left", "right"), span, keys, value, long))
        data["partitions"] = draw(st.integers(1, 4))
    else:
        data["variant"] = draw(st.sampled_from(["inner", "left"]))
        path = draw(st.sampled_from(["fk", "fk", "a.b", "a.b.c"]))
        data["foreign_key"] = path
        if draw(st.booleans()):
            data["materialized"] = True
            if draw(st.booleans()):
                data["caching"] = ["result"]
        # Over several partitions the subscriptions and responses cross tasks (judged as one task: ``_tasks``), so
        # only without versioned tables, whose stores keep a stream time per task.
        data["partitions"] = draw(st.integers(1, 4))
        if data["partitions"] == 1 and version.versioned and draw(st.integers(0, 2)) == 0:
            side = draw(st.sampled_from(["left", "right"]))
            data[side] = {"versioned": True, "history_retention_ms": draw(st.integers(0, 20))}
        keys["right"] = _wide_keys(draw)
        foreign = _Pool(keys["right"].choices, draw(st.sampled_from([0, 4])))
        value["left"] = _fk_left_values(path, foreign, null_share)
        data["events"] = draw(_wide_events(("left", "right"), 5, keys, value, long))
        if draw(st.integers(0, 3)) == 0:
            return _explicit_in_kafka_order(data, random.Random(draw(st.integers(0, 2**32 - 1))))
    return kjoin.Scenario.from_dict(data)


def _explicit_in_kafka_order(data: dict[str, Any], rng: random.Random) -> kjoin.Scenario:
    """The fk scenario ``data`` with ``delivery: explicit``, and after each input record the ``{deliver: ...}``
    instructions that release its messages in the order TopologyTestDriver processes them (the order sent, at
    once): for each message, at random, ``next``, its topic, its id, or ``all`` for the rest. So the explicit
    scheduler and its four kinds of instruction are judged by Kafka in the one order Kafka can show."""
    trace = kjoin.run(kjoin.Scenario.from_dict(data))
    sent: list[list[Any]] = []
    for step in trace.steps:
        if step.message is None:
            sent.append([])
        else:
            sent[-1].append(step.message)
    events = []
    for event, messages in zip(data["events"], sent):
        events.append(event)
        for message in messages:
            which = rng.choice(["next", "topic", "id", "all"])
            if which == "all":
                events.append({"deliver": "all"})
                break
            events.append({"deliver": {"next": "next", "topic": message.topic, "id": message.id}[which]})
    return kjoin.Scenario.from_dict({**data, "delivery": "explicit", "events": events})


@st.composite
def _global_table(draw: Any, version: KafkaVersion, wide: bool = False, long: bool | None = None) -> dict[str, Any]:
    """A KStream-GlobalKTable join's fields: inner or left, keyed by the stream key or by a key selector (a field
    path into the stream value, now and then missing or null: a null selected key), global records before the first
    stream record (the bootstrap) and among them, null keys and values on both sides; up to 4 partitions (each task
    reads the whole global topic)."""
    data: dict[str, Any] = {"variant": draw(st.sampled_from(["inner", "left"]))}
    by_field = draw(st.booleans())
    if by_field:
        data["foreign_key"] = draw(st.sampled_from(["fk", "a.b"])) if wide else "fk"
    table_keys = ["X", "Y", "Z", ""] if wide else ["X", "Y"]
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    count = draw(
        st.integers(17, 150) if long else st.integers(0, 16) if long is False or not wide else st.integers(0, 80)
    )
    bootstrap = draw(st.integers(0, 4))
    events = []
    for index in range(count):
        side = "right" if index < bootstrap or rng.randrange(3) == 0 else "left"
        ts = rng.randrange(0, 40 if not wide else 5_000)
        if side == "right":
            key = rng.choice([*table_keys, None] if by_field else ["k1", "k2", "k3", None])
            value = None if rng.randrange(5) == 0 else f"R{rng.randrange(10)}"
        else:
            key = rng.choice(["k1", "k2", "k3", None])
            if not by_field:
                value = None if rng.randrange(6) == 0 else f"L{rng.randrange(10)}"
            else:
                parts = data["foreign_key"].split(".")
                node: Any = rng.choice([*table_keys, None])
                for depth, part in enumerate(reversed(parts)):
                    node = {part: node} if rng.randrange(8) or depth else {"other": node}  # now and then no field
                if isinstance(node, dict):
                    node["v"] = rng.randrange(10)
                value = None if rng.randrange(6) == 0 else node
        events.append({"side": side, "key": key, "value": value, "ts": ts})
    data["events"] = events
    data["partitions"] = draw(st.integers(1, 4 if wide else 2))
    return data


@st.composite
def scenarios(draw: Any, version: KafkaVersion) -> kjoin.Scenario:
    """A random scenario Kafka ``version`` can judge, with kjoin's semantics of that version: the narrow
    generator's (short, few keys, small windows) or the wide one's, half and half."""
    return draw(st.one_of(narrow_scenarios(version), wide_scenarios(version)))


# The original windowed-table design: what today's DSL expresses. A windowed count is
# ``stream.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(advance)).count()``; a table
# aggregate ``table.groupBy((k, v) -> KeyValue.pair(v.g, v)).count()``; a wtable-wtable join on the same window a
# table-table join of two windowed counts. Each judge runs kjoin with its own semantics (a window store before 3.4
# finds a window behind its retention; a table aggregate's update in one group is two records before 3.5, KIP-904).
def aggregate_specs(version: KafkaVersion | None = None) -> st.SearchStrategy[AggregateSpec]:
    """A random seed-000 scenario that the harness can build: window-aggregate (count, sum), table-aggregate (count,
    sum), wtable-wtable (counts), with the semantics of ``version`` (default: the latest). Half are near
    (:func:`near_aggregate_specs`: up to 16 events within 120 ms, small windows), half jumping
    (:func:`jumping_aggregate_specs`: windows from milliseconds to minutes, far jumps and late records after them,
    short and long scenarios)."""
    return st.one_of(near_aggregate_specs(version), jumping_aggregate_specs(version))


def _draw_window_and_result(
    draw: Any, data: dict[str, Any], join: str, semantics: Any, window: dict[str, Any], size: int
) -> bool:
    """Complete a seed-000 draw after its time window: a window aggregate's kind (time, session, sliding: the same
    ``size`` as gap or time difference, the grace kept) and result (updates, suppression, emit-final), a WTable
    join's variant, and whether the aggregate sums (returned) rather than counts; written into ``data``."""
    if join == "window-aggregate":  # session and sliding windows, emit-final and suppress
        kinds = ["time", "session"] + (["sliding"] if semantics.sliding_windows else [])
        kind = draw(st.sampled_from(kinds))
        if kind != "time":
            name = "inactivity_gap_ms" if kind == "session" else "time_difference_ms"
            window = {name: size, **({"grace_ms": window["grace_ms"]} if "grace_ms" in window else {})}
        results = ["updates", "suppress"] + (["final"] if semantics.emit_on_window_close else [])
        result = draw(st.sampled_from(results))
        if result == "final":
            data["emit"] = "final"
        elif result == "suppress":
            data["suppress"] = "until-window-closes"
    data["window"] = window
    if join == "wtable-wtable":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
    summed = join == "window-aggregate" and draw(st.booleans())
    if summed:
        data["aggregate"] = {"sum": "v"}
    return summed


@st.composite
def near_aggregate_specs(draw: Any, version: KafkaVersion | None = None) -> AggregateSpec:
    """Up to 16 events within 40 or 120 ms, windows of 1-10 ms: many records meet in a window, none ever jumps."""
    semantics = kjoin.parse_semantics(None if version is None else version.version)
    joins = ["window-aggregate", "wtable-wtable", "table-aggregate"]
    join = draw(st.sampled_from(joins))
    data: dict[str, Any] = {"join": join}
    if version is not None:
        data["semantics"] = version.version
    if join == "table-aggregate":
        data["group_by"] = "g"
        if draw(st.booleans()):
            data["aggregate"] = {"sum": "v"}
        group = st.sampled_from(["X", "Y", "Z"])
        value = st.one_of(
            st.none(),
            st.builds(lambda g, v: {"g": g, "v": v}, group, st.integers(0, 9)),
            st.builds(lambda v: {"v": v}, st.integers(0, 9)),  # no group: a null group key
            st.builds(lambda g: {"g": g}, group),  # nothing to sum: counts as 0
        )
        data["events"] = draw(_events(("left",), 30, value, {"left": st.sampled_from(["k1", "k2", "k3", None])}))
        return AggregateSpec.from_dict(data)
    size = draw(st.integers(1, 10))
    window: dict[str, Any] = {"size_ms": size}
    if draw(st.booleans()):
        window["advance_ms"] = draw(st.integers(1, size))
    if draw(st.booleans()):
        window["grace_ms"] = draw(st.integers(0, 6))
    summed = _draw_window_and_result(draw, data, join, semantics, window, size)
    sides = ("left",) if join == "window-aggregate" else ("left", "right")
    timestamps = st.integers(0, draw(st.sampled_from([40, 40, 120])))
    events = []
    for _ in range(draw(st.integers(0, 16))):
        side = draw(st.sampled_from(sides))
        # A null value now and then: every Kafka version's windowed aggregate counts it (and sums it as 0).
        value: Any = None if draw(st.integers(0, 5)) == 0 else f"{side[0].upper()}{draw(st.integers(0, 9))}"
        if summed and value is not None:
            value = {"v": draw(st.integers(0, 9))} if draw(st.integers(0, 4)) else {"w": 1}
        events.append({"side": side, "key": draw(KEYS), "value": value, "ts": draw(timestamps)})
    data["events"] = events
    data["partitions"] = draw(st.integers(1, 2))
    return AggregateSpec.from_dict(data)


AGGREGATE_WINDOW_SCALES = (
    st.integers(1, 10),
    st.integers(1, 300),
    st.integers(100, 5_000),
    st.sampled_from([30_000, 60_000, 90_000, 120_000, 300_000]),
)
"""Window sizes (and gaps, time differences, graces) of the jumping aggregates: milliseconds to minutes."""

DAY_MS = 86_400_000


def _aggregate_distances(window: dict[str, Any]) -> list[int]:
    """The distances a rule about a windowed store could turn on: the window itself, its grace, size + grace (the
    retention from 3.0), twice that (a sliding window's), the segment interval (``max(retention / 2, 60 s)``) and
    its double, a day (``Windows.maintainMs`` before 3.0, KAFKA-7106) and a day plus size + grace."""
    size = window.get("size_ms") or window.get("inactivity_gap_ms") or window.get("time_difference_ms") or 1
    grace = window.get("grace_ms") or 0
    retention = size + grace
    segment = max(retention // 2, 60_000)
    return [size, grace, retention, 2 * size + grace, segment, 2 * segment, DAY_MS, DAY_MS + retention, DAY_MS // 2]


def _jumping_timeline(rng: random.Random, count: int, window: dict[str, Any]) -> list[int]:
    """``count`` timestamps in processing order: small steps and ties, jumps of one of
    :func:`_aggregate_distances` (give or take a millisecond) or to a segment's boundary, and late records that many
    milliseconds behind stream time, or back at an earlier record's timestamp (give or take one)."""
    distances = _aggregate_distances(window)
    size = distances[0]
    cursor = rng.choice([0, 0, 1, size, 59_999, 119_990, DAY_MS - 1])
    result: list[int] = []
    for _ in range(count):
        move = rng.choice(["tie", "step", "step", "step", "jump", "jump", "boundary", "late", "late", "again"])
        nudge = rng.choice([-1, 0, 0, 1])
        if move == "tie" or (move == "again" and not result):
            ts = cursor
        elif move == "step":
            cursor += rng.randint(0, size)
            ts = cursor
        elif move == "jump":
            cursor = max(cursor, cursor + rng.choice(distances) + nudge)
            ts = cursor
        elif move == "boundary":  # the next boundary of a 60 s, half-day or day segment
            interval = rng.choice([60_000, max((size + (window.get("grace_ms") or 0)) // 2, 60_000), DAY_MS // 2])
            cursor = max(cursor, (cursor // interval + 1) * interval + nudge)
            ts = cursor
        elif move == "late":
            ts = max(0, cursor - rng.choice(distances) - nudge)
        else:  # again: at (or next to) an earlier record's time, after stream time moved on
            ts = max(0, rng.choice(result) + nudge)
        result.append(ts)
    return result


@st.composite
def jumping_aggregate_specs(draw: Any, version: KafkaVersion | None = None) -> AggregateSpec:
    """What :func:`near_aggregate_specs` draws, over windows from milliseconds to minutes and timelines that jump
    beyond a window's grace, its store's retention, a segment interval and a day, with late records after the
    jumps and ties: short (1-16 events) or long (17-200), half and half. A seed draws the events (as
    :func:`_wide_events` does), so a long scenario is cheap to generate."""
    semantics = kjoin.parse_semantics(None if version is None else version.version)
    join = draw(st.sampled_from(["window-aggregate", "wtable-wtable", "table-aggregate"]))
    data: dict[str, Any] = {"join": join}
    if version is not None:
        data["semantics"] = version.version
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    count = rng.randint(17, 200) if rng.random() < 0.5 else rng.randint(1, 16)
    keys = [f"k{i}" for i in range(1, rng.randint(2, 7))]
    null_keys = rng.choice([0, 8])

    def key() -> str | None:
        return None if null_keys and rng.randrange(null_keys) == 0 else rng.choice(keys)

    if join == "table-aggregate":
        data["group_by"] = "g"
        summed = draw(st.booleans())
        if summed:
            data["aggregate"] = {"sum": "v"}
        groups = ["X", "Y", "Z"][: rng.randint(1, 3)]
        values = [
            lambda: None,
            lambda: {"g": rng.choice(groups), "v": rng.randrange(10)},
            lambda: {"g": rng.choice(groups), "v": rng.randrange(10)},
            lambda: {"v": rng.randrange(10)},  # no group: a null group key
            lambda: {"g": rng.choice(groups)},  # nothing to sum: counts as 0
        ]
        window = {"size_ms": draw(st.sampled_from(AGGREGATE_WINDOW_SCALES).flatmap(lambda scale: scale))}
        stamps = _jumping_timeline(rng, count, window)
        data["events"] = [{"side": "left", "key": key(), "value": rng.choice(values)(), "ts": ts} for ts in stamps]
        return AggregateSpec.from_dict(data)  # one partition: its repartition topic crosses tasks
    scale = draw(st.sampled_from(AGGREGATE_WINDOW_SCALES))
    size = draw(scale)
    window: dict[str, Any] = {"size_ms": size}
    if draw(st.booleans()):
        window["advance_ms"] = max(1, size // draw(st.sampled_from([1, 2, 3, 5])))
    if draw(st.integers(0, 3)):  # a grace of the window's scale, none, or a minute or more
        window["grace_ms"] = draw(st.one_of(scale, st.just(0), st.sampled_from([60_000, 120_000, 3_600_000])))
    summed = _draw_window_and_result(draw, data, join, semantics, window, size)
    left_share = rng.randint(1, 4)  # of 5
    stamps = _jumping_timeline(rng, count, window)
    sides = ["left" if join == "window-aggregate" or rng.randrange(5) < left_share else "right" for _ in stamps]
    if join == "wtable-wtable" and rng.randrange(2) == 0:
        # a timeline per side, interleaved in runs: one side's stream time jumps far on while the other's stays
        # behind, so the other side's records look up windows the first side's store may have dropped
        timelines = {side: _jumping_timeline(rng, sides.count(side), window) for side in ("left", "right")}
        sides = sorted(sides, key=lambda side: rng.random() + (0.0 if side == "left" else rng.random()))
        stamps = [timelines[side].pop(0) for side in sides]
    events = []
    for side, ts in zip(sides, stamps):
        value: Any = None if rng.randrange(6) == 0 else f"{side[0].upper()}{rng.randrange(10)}"
        if summed and value is not None:
            value = {"v": rng.randrange(10)} if rng.randrange(5) else {"w": 1}
        events.append({"side": side, "key": key(), "value": value, "ts": ts})
    data["events"] = events
    data["partitions"] = draw(st.integers(1, 2))
    return AggregateSpec.from_dict(data)


SEED_000_VERSIONS = tuple(version.version for version in VERSIONS)
"""The versions that judge seed 000's aggregates and WTable joins, each against kjoin with its own semantics: every
judge (from 3.4 a window store hides a window behind its retention from reads, KAFKA-12960; before, RocksDB's window
stores still find it; before 3.5 a table aggregate's update that keeps its group is two records, KIP-904)."""


# -- make kafka-check ----------------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    """``[N] [DIR] [--seed-000]``: N scenarios per version (and N of seed 000's), mismatches written to DIR;
    ``--seed-000`` judges only seed 000's aggregates and WTable joins (``make kafka-check-seed-000``)."""
    seed_000_only = "--seed-000" in argv
    argv = [arg for arg in argv if arg != "--seed-000"]
    count = int(argv[0]) if argv else int(os.environ.get("N", "1000"))
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="kjoin-kafka-check-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    build()
    failed = 0
    judges = ci_versions() if os.environ.get("KJOIN_ORACLE_VERSIONS") else VERSIONS
    started = time.monotonic()
    for version in judges:
        if not seed_000_only:
            batch, mismatches = check(version, count)
            print(f"kafka-streams {version.version}: {len(batch)} scenarios, {len(mismatches)} mismatches", flush=True)
            for number, text in enumerate(shrunk_yaml(version.version, mismatches), 1):
                path = out_dir / f"kafka-{version.version}-mismatch-{number}.yaml"
                path.write_text(text)
                print(f"  {path}", flush=True)
            failed += len(mismatches)
        if version.version in SEED_000_VERSIONS:
            begun = time.monotonic()
            batch, mismatches = check(version, count, seed_000=True)
            print(
                f"kafka-streams {version.version} (seed 000's aggregates and WTable joins): {len(batch)} scenarios, "
                f"{len(mismatches)} mismatches, {time.monotonic() - begun:.0f} s",
                flush=True,
            )
            for number, text in enumerate(shrunk_yaml(version.version, mismatches), 1):
                path = out_dir / f"kafka-{version.version}-seed-000-mismatch-{number}.yaml"
                path.write_text(text)
                print(f"  {path}", flush=True)
            failed += len(mismatches)
    minutes = (time.monotonic() - started) / 60
    print(f"kafka-check: {len(judges)} versions, {count} scenarios each (and seed 000's), {minutes:.1f} min")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
