"""kjoin against the real Kafka Streams library: the driver of ``kafka_oracle/`` (the Java harness).

``python -m tests.oracle_check [N]`` (``make kafka-check``) builds the harness, generates N random scenarios per
Kafka version, runs each through kjoin and, in one JVM per version, through TopologyTestDriver, and prints one
line per version: ``kafka-streams <version>: <N> scenarios, <M> mismatches``, then the file of each mismatch.
``tests/test_kafka_oracle.py`` runs the same comparison under pytest, where hypothesis shrinks a failure.

It lives with the tests, not in the ``kjoin`` package: it needs hypothesis, Maven and a JDK, none of which
kjoin's users need.

What the harness can see: each Kafka task alone (TopologyTestDriver has one partition per topic, so a scenario
with several partitions is cut into one harness run per task); the records on the output topic (not a
table-table result's old value); foreign-key messages delivered at once (TopologyTestDriver's order, kjoin's
``delivery: immediate``). Which Kafka version judges which of kjoin's eras is ``VERSIONS`` below.

Seed 000 (``kjoin.aggregate_spec``): the harness builds what today's DSL expresses (``aggregate_specs``):
``window-aggregate`` (a windowed count), ``table-aggregate`` (a count grouped by a field, one partition: its
repartition topic crosses tasks) and the same-window ``wtable-wtable`` join; a windowed key is compared as
``[key, value, ts, {start_ms, end_ms}]``. ``SEED_000_VERSIONS`` judge them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

import kjoin
from kjoin.aggregate_spec import AggregateSpec
from kjoin.aggregates import output_to_dict
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
        """``JoinWindows.of`` (kjoin's ``grace_ms: null``) exists: removed in 4.0 (KIP-633)."""
        return self.numbers < (4, 0, 0)

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
            judge(None if line is None else (*line, releases[line]), f"before {label}")
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
    """Which share of the judges this run takes: ``KJOIN_ORACLE_ROTATION`` if set, else the number of commits
    (``git rev-list --count HEAD``: consecutive commits take consecutive shares), else the day."""
    if os.environ.get("KJOIN_ORACLE_ROTATION"):
        return int(os.environ["KJOIN_ORACLE_ROTATION"])
    git = shutil.which("git")
    if git is not None:
        done = subprocess.run([git, "rev-list", "--count", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        if done.returncode == 0 and done.stdout.strip().isdigit():
            return int(done.stdout.strip())
    import datetime

    return datetime.date.today().toordinal()


def ci_versions(turn: int | None = None, share: int = CI_SHARE) -> tuple[KafkaVersion, ...]:
    """The versions one CI run judges: always the latest, and ``share`` of the others, taken in turn so that every
    version is judged once every ``ceil(others / share)`` runs (each share mixes old and new lines).
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
    return (LATEST_JUDGE, *others[slot::shares])


FK_JUDGES = ("3.6.2", "3.7.0", "3.9.0", "3.9.1", "4.0.0", "4.0.1")
"""Extra classpaths for the foreign-key era tests of ``tests/test_kafka_oracle.py`` (not random sweeps): both sides
of KIP-962's left join (3.6.2, 3.7.0) and of KAFKA-16394's fix (3.9.0 and 4.0.0 double a changed row's result, 3.9.1
and 4.0.1 do not)."""


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


def build(offline: bool | None = None) -> None:
    """Compile the harness and write one classpath file per version (a version whose file is newer than the pom is
    not resolved again). Offline when every jar is in ~/.m2 already; a first run (``offline=False``, or when the
    offline build fails) fetches from Maven Central."""
    if offline is None:
        try:
            build(offline=True)
            return
        except HarnessError:
            offline = False
    _mvn(["compile"], offline)
    pom = (HARNESS / "pom.xml").stat().st_mtime
    # The derived judges, then the extra foreign-key judges (patch releases the FK fixes' tests name).
    for version in dict.fromkeys([*(v.version for v in VERSIONS), *FK_JUDGES]):
        path = HARNESS / "target" / f"cp-{version}.txt"
        if path.exists() and path.stat().st_mtime > pom and path.read_text().strip():
            continue
        _mvn(
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
            f"the harness is not built for Kafka {version}: run `make kafka-oracle` (or tests.oracle_check.build())"
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
        data = scenario.to_dict()
        records = scenario.records()
        if scenario.partitions == 1:
            return self.run_task(data)
        outputs: list[list[list[Any]]] = [[] for _ in records]
        for task in range(scenario.partitions):
            indexes = [i for i, record in enumerate(records) if record.partition == task]
            if not indexes:
                continue
            events = [{k: v for k, v in data["events"][i].items() if k not in ("partition", "offset")} for i in indexes]
            for index, emitted in zip(indexes, self.run_task({**data, "partitions": 1, "events": events})):
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
        steps = scenario.run().steps
        return [
            (indexes, {**data, "partitions": 1, "events": [data["events"][i] for i in indexes]})
            for task in range(data["partitions"])
            if (indexes := [step.index for step in steps if step.task == task])
        ]
    data = scenario.to_dict()
    if scenario.partitions == 1:
        return [(list(range(len(data["events"]))), data)]
    records = scenario.records()
    tasks = []
    for task in range(scenario.partitions):
        indexes = [i for i, record in enumerate(records) if record.partition == task]
        if indexes:
            events = [{k: v for k, v in data["events"][i].items() if k not in ("partition", "offset")} for i in indexes]
            tasks.append((indexes, {**data, "partitions": 1, "events": events}))
    return tasks


def _input_events(scenario: kjoin.Scenario | AggregateSpec) -> list[dict[str, Any]]:
    return list(scenario.data["events"]) if isinstance(scenario, AggregateSpec) else scenario.to_dict()["events"]


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


def run_batch(version: str, batch: list[kjoin.Scenario], threads: int = 8) -> list[list[list[list[Any]]] | str]:
    """Kafka's outputs after each event of every scenario in ``batch`` (one JVM, ``threads`` TopologyTestDriver at
    a time), or the error Kafka raised for a scenario."""
    java = shutil.which("java")
    if java is None:
        raise HarnessError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
    plan = [_tasks(scenario) for scenario in batch]
    lines = [json.dumps(data, separators=(",", ":")) for tasks in plan for _, data in tasks]
    done = subprocess.run(
        [
            java,
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            classpath(version),
            "kjoin.oracle.Oracle",
            "--threads",
            str(threads),
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    if done.returncode != 0 or len(answers) != len(lines):
        raise HarnessError(f"the Kafka {version} harness failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
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


def shrink(scenario: kjoin.Scenario, harness: Harness, budget: int = 300) -> kjoin.Scenario:
    """A smaller scenario with a difference still: events dropped one at a time while the difference stays."""
    spec = isinstance(scenario, AggregateSpec)
    data = dict(scenario.data) if spec else scenario.to_dict()
    load = AggregateSpec.from_dict if spec else kjoin.Scenario.from_dict
    events = list(data["events"])
    index = len(events) - 1
    while index >= 0 and budget > 0:
        candidate = events[:index] + events[index + 1 :]
        budget -= 1
        try:
            smaller = load({**data, "events": candidate})
            if compare(smaller, harness) is not None:
                events = candidate
        except (HarnessError, kjoin.ScenarioError):
            pass
        index -= 1
    return load({**data, "events": events})


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
    """kjoin's output records (``[key, value, ts]``, a tombstone's value null) after each input record; a
    foreign-key join's deliveries count with the input record that sent them. A seed-000 scenario's windowed
    output is ``[key, value, ts, {start_ms, end_ms}]``."""
    if isinstance(scenario, AggregateSpec):
        per_spec_event = []
        for step in scenario.run().steps:
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
            per_event[-1].append([render_value(output.key) if output.key is not None else None, value, output.ts])
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
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1000).strip().removesuffix("\n...")

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


@st.composite
def scenarios(draw: Any, version: KafkaVersion) -> kjoin.Scenario:
    """A random scenario Kafka ``version`` can judge, with kjoin's semantics of that version."""
    join = draw(st.sampled_from(["stream-stream", "stream-table", "table-table", "fk"]))
    data: dict[str, Any] = {"join": join, "semantics": version.version}
    if join == "stream-stream":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
        data["window"] = draw(_window(version))
        shape = draw(st.sampled_from(["plain", "plain", "self", "chain"]))
        if shape == "self":
            data["self_join"] = True
            if version.self_join_optimization and data["variant"] == "inner" and draw(st.booleans()):
                data["optimize"] = True
        elif shape == "chain":
            data["then"] = [
                {
                    "variant": draw(st.sampled_from(["inner", "left", "outer"])),
                    **({"window": draw(_window(version))} if draw(st.booleans()) else {}),
                }
            ]
        sides = ("left",) if shape == "self" else ("left", "right")
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


# Seed 000 (issue 11): what today's DSL expresses. A windowed count is
# ``stream.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(size, grace).advanceBy(advance)).count()``; a table
# aggregate ``table.groupBy((k, v) -> KeyValue.pair(v.g, v)).count()``; a wtable-wtable join on the same window a
# table-table join of two windowed counts. Each judge runs kjoin with its own semantics (a window store before 3.4
# finds a window behind its retention); table aggregates only from 3.5 (KIP-904), as kjoin models them.
@st.composite
def aggregate_specs(draw: Any, version: KafkaVersion | None = None) -> AggregateSpec:
    """A random seed-000 scenario that the harness can build: window-aggregate (count, sum), table-aggregate (count,
    sum; Kafka 3.5+ only), wtable-wtable (counts), with the semantics of ``version`` (default: the latest)."""
    semantics = kjoin.parse_semantics(None if version is None else version.version)
    joins = ["window-aggregate", "wtable-wtable"] + (["table-aggregate"] if semantics.at_least(3, 5) else [])
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
    data["window"] = window
    if join == "wtable-wtable":
        data["variant"] = draw(st.sampled_from(["inner", "left", "outer"]))
    summed = join == "window-aggregate" and draw(st.booleans())
    if summed:
        data["aggregate"] = {"sum": "v"}
    sides = ("left",) if join == "window-aggregate" else ("left", "right")
    events = []
    for _ in range(draw(st.integers(0, 16))):
        side = draw(st.sampled_from(sides))
        # A null value now and then: every Kafka version's windowed aggregate counts it (and sums it as 0).
        value: Any = None if draw(st.integers(0, 5)) == 0 else f"{side[0].upper()}{draw(st.integers(0, 9))}"
        if summed and value is not None:
            value = {"v": draw(st.integers(0, 9))} if draw(st.integers(0, 4)) else {"w": 1}
        events.append({"side": side, "key": draw(KEYS), "value": value, "ts": draw(st.integers(0, 40))})
    data["events"] = events
    data["partitions"] = draw(st.integers(1, 2))
    return AggregateSpec.from_dict(data)


SEED_000_VERSIONS = tuple(version.version for version in VERSIONS)
"""The versions that judge seed 000's aggregates and WTable joins, each against kjoin with its own semantics: every
judge (from 3.4 a window store hides a window behind its retention from reads, KAFKA-12960; before, RocksDB's window
stores still find it). Table aggregates from 3.5 only: kjoin models them as 3.5+ does (KIP-904)."""


# -- make kafka-check ----------------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else int(os.environ.get("N", "1000"))
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="kjoin-kafka-check-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    build()
    failed = 0
    for version in ci_versions() if os.environ.get("KJOIN_ORACLE_VERSIONS") else VERSIONS:
        batch, mismatches = check(version, count)
        print(f"kafka-streams {version.version}: {len(batch)} scenarios, {len(mismatches)} mismatches", flush=True)
        for number, (scenario, found) in enumerate(mismatches, 1):
            path = out_dir / f"kafka-{version.version}-mismatch-{number}.yaml"
            path.write_text(f"# {found}\n" + scenario_yaml(scenario))
            print(f"  {path}", flush=True)
        failed += len(mismatches)
        if version.version in SEED_000_VERSIONS:
            batch, mismatches = check(version, count, seed_000=True)
            print(
                f"kafka-streams {version.version} (seed 000's aggregates and WTable joins): {len(batch)} scenarios, "
                f"{len(mismatches)} mismatches",
                flush=True,
            )
            for number, (scenario, found) in enumerate(mismatches, 1):
                path = out_dir / f"kafka-{version.version}-seed-000-mismatch-{number}.yaml"
                path.write_text(f"# {found}\n" + scenario_yaml(scenario))
                print(f"  {path}", flush=True)
            failed += len(mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
