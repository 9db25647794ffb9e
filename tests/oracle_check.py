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
from kjoin.records import render_value

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "kafka_oracle"


@dataclass(frozen=True)
class KafkaVersion:
    """One Kafka version on the harness's classpath, and what it can judge."""

    version: str
    era: str
    """The kjoin era this version judges (``kjoin.Semantics.era``; ``latest`` for 3.1 and everything after)."""
    deprecated_window_api: bool
    """``JoinWindows.of`` (kjoin's ``grace_ms: null``) exists: removed in 4.0."""
    window_grace_api: bool
    """``JoinWindows.ofTimeDifferenceAndGrace`` exists (3.0+); before, a grace is ``of(..).grace(..)``."""
    versioned: bool
    """Versioned tables (3.5+) and the stream-table grace buffer (3.6+)."""
    self_join_optimization: bool
    """The single-store self-join (3.4+)."""


VERSIONS = (
    KafkaVersion("4.3.1", "latest", deprecated_window_api=False, window_grace_api=True, versioned=True, self_join_optimization=True),
    KafkaVersion("3.3.2", "3.1", deprecated_window_api=True, window_grace_api=True, versioned=False, self_join_optimization=False),
    KafkaVersion("2.8.2", "0.10.2", deprecated_window_api=True, window_grace_api=False, versioned=False, self_join_optimization=False),
)
"""The versions that judge kjoin. kjoin's era 0.10.0 (0.10.0 and 0.10.1) has no judge: TopologyTestDriver
arrived in 1.1, and the 0.10 libraries need a broker."""


# -- building and running the harness ------------------------------------------------------------------------------
class HarnessError(RuntimeError):
    """The harness cannot be built or run: Java, Maven or the Kafka jars are missing."""


def _mvn(args: list[str], offline: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise HarnessError("mvn is not on PATH: install Maven (apt-get install maven) and Java 17 to run the Kafka oracle")
    command = [mvn, "-q", "-B", *(["-o"] if offline else []), *args]
    done = subprocess.run(command, cwd=HARNESS, capture_output=True, text=True)
    if done.returncode != 0:
        raise HarnessError(f"{' '.join(command)} failed in {HARNESS}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def build(offline: bool | None = None) -> None:
    """Compile the harness and write one classpath file per version. Offline when every jar is in ~/.m2 already;
    a first run (``offline=False``, or when the offline build fails) fetches from Maven Central."""
    if offline is None:
        try:
            build(offline=True)
            return
        except HarnessError:
            offline = False
    _mvn(["compile"], offline)
    for version in VERSIONS:
        _mvn(["dependency:build-classpath", f"-Dkafka.version={version.version}",
              f"-Dmdep.outputFile=target/cp-{version.version}.txt"], offline)


def classpath(version: str) -> str:
    path = HARNESS / "target" / f"cp-{version}.txt"
    classes = HARNESS / "target" / "classes"
    if not path.exists() or not (classes / "kjoin" / "oracle" / "Oracle.class").exists():
        raise HarnessError(f"the harness is not built for Kafka {version}: run `make kafka-oracle` (or tests.oracle_check.build())")
    return f"{classes}{os.pathsep}{path.read_text().strip()}"


class Harness:
    """One JVM running the harness for one Kafka version; scenarios go in and come back one line at a time."""

    def __init__(self, version: str) -> None:
        java = shutil.which("java")
        if java is None:
            raise HarnessError("java is not on PATH: install Java 17 (apt-get install openjdk-17-jdk-headless)")
        self.version = version
        self._process = subprocess.Popen(
            [java, "-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath(version), "kjoin.oracle.Oracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
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

    def run(self, scenario: kjoin.Scenario) -> list[list[list[Any]]]:
        """Kafka's outputs after each event of ``scenario``, task by task."""
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

    def __enter__(self) -> "Harness":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def kjoin_outputs(scenario: kjoin.Scenario) -> list[list[list[Any]]]:
    """kjoin's output records (``[key, value, ts]``, a tombstone's value null) after each input record; a
    foreign-key join's deliveries count with the input record that sent them."""
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
            event = scenario.to_dict()["events"][index]
            return f"event {index} ({event}): Kafka {harness.version} emitted {kafka}, kjoin {ours}"
    return f"Kafka gave outputs for {len(expected)} events, kjoin for {len(actual)}"


def scenario_yaml(scenario: kjoin.Scenario) -> str:
    """The scenario in kjoin's YAML format, events one a line."""
    data = scenario.to_dict()
    events = data.pop("events")
    def flow(value: Any) -> str:
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=1000).strip().removesuffix("\n...")

    text = "".join(f"{key}: {flow(value)}\n" for key, value in data.items())
    return text + "events:\n" + "".join(f"  - {flow(event)}\n" for event in events)


# -- random scenarios ----------------------------------------------------------------------------------------------
KEYS = st.sampled_from(["k1", "k2", "k3", None])
"""Few keys, so that they meet; ``None`` is a null key. Strings only: the harness's serdes are strings."""


def _value(prefix: str) -> st.SearchStrategy:
    return st.one_of(st.none(), st.integers(0, 9).map(lambda i: f"{prefix}{i}"))


@st.composite
def _events(draw: Any, sides: tuple[str, ...], max_ts: int, left_value: st.SearchStrategy | None = None,
            keys: dict[str, st.SearchStrategy] | None = None) -> list[dict[str, Any]]:
    result = []
    for _ in range(draw(st.integers(0, 16))):
        side = draw(st.sampled_from(sides))
        key = draw(keys[side] if keys else KEYS)
        value = draw(left_value if side == "left" and left_value is not None else _value(side[0].upper()))
        result.append({"side": side, "key": key, "value": value, "ts": draw(st.integers(0, max_ts))})
    return result


@st.composite
def _window(draw: Any, version: KafkaVersion, small: bool = False) -> dict[str, Any]:
    window: dict[str, Any] = {"before_ms": draw(st.integers(0, 6)), "after_ms": draw(st.integers(0, 6))}
    graces = [st.integers(0, 6)]
    if version.deprecated_window_api:
        graces.append(st.none())
    window["grace_ms"] = draw(st.one_of(*graces))
    if window["grace_ms"] is not None and version.window_grace_api and version.deprecated_window_api and draw(st.booleans()):
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
            data["then"] = [{"variant": draw(st.sampled_from(["inner", "left", "outer"])),
                             **({"window": draw(_window(version))} if draw(st.booleans()) else {})}]
        sides = ("left",) if shape == "self" else ("left", "right")
        data["events"] = draw(_events(sides, 40))
        data["partitions"] = draw(st.integers(1, 2))
    elif join == "stream-table":
        data["variant"] = draw(st.sampled_from(["inner", "left"]))
        if version.versioned and draw(st.booleans()):
            retention = draw(st.integers(0, 12))
            data["right"] = {"versioned": True, "history_retention_ms": retention}
            if draw(st.booleans()):
                data["grace_ms"] = draw(st.integers(0, retention))
        data["events"] = draw(_events(("left", "right"), 30))
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
    return kjoin.Scenario.from_dict(data)


# -- make kafka-check ----------------------------------------------------------------------------------------------
def check_version(version: KafkaVersion, count: int, out_dir: Path) -> tuple[int, list[Path]]:
    """Run ``count`` random scenarios through kjoin and Kafka ``version``; write each mismatch to ``out_dir``."""
    from hypothesis import HealthCheck, Phase, given, settings

    mismatches: list[Path] = []
    seen = [0]
    with Harness(version.version) as harness:
        @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(scenarios(version))
        def one(scenario: kjoin.Scenario) -> None:
            seen[0] += 1
            difference = compare(scenario, harness)
            if difference is not None:
                path = out_dir / f"kafka-{version.version}-mismatch-{len(mismatches) + 1}.yaml"
                path.write_text(f"# {difference}\n" + scenario_yaml(scenario))
                mismatches.append(path)

        one()
    return seen[0], mismatches


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else int(os.environ.get("N", "1000"))
    out_dir = Path(argv[1]) if len(argv) > 1 else Path(tempfile.mkdtemp(prefix="kjoin-kafka-check-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    build()
    failed = 0
    for version in VERSIONS:
        seen, mismatches = check_version(version, count, out_dir)
        print(f"kafka-streams {version.version}: {seen} scenarios, {len(mismatches)} mismatches", flush=True)
        for path in mismatches:
            print(f"  {path}", flush=True)
        failed += len(mismatches)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
