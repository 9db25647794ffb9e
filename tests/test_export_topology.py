"""The exporter and the oracle harness build the same topology.

``kjoin export --junit`` writes a scenario's topology as Java (:mod:`kjoin.export.dsl`); the harness that
judges kjoin (``kafka_oracle/``'s ``Oracle.build``, driven by ``kafka_oracle/oracle_check.py``) builds it from the
scenario's JSON. The two encode the same scenario-to-DSL mapping twice, so this test holds them together: for random
scenarios of every judging release (the oracle's own generators), one Java class builds each topology both ways against
that release's classpath and compares Kafka Streams' own ``Topology.describe()`` of the two (sources, processors,
stores, sinks, sub-topologies). A sample runs in CI; the harness itself is not edited.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from kjoin.export.checks import check_expressible, check_aggregate
from kjoin.export.java import IMPORTS, java_string
from kjoin.export.judges import JUDGES, WINDOWED_TABLE_JUDGE, ExportError, KafkaJudge, judge_of
from kjoin.export.dsl import aggregate_topology, topology
from kjoin.scenario import AggregateSpec
from kafka_oracle import oracle_check

SAMPLE = 10
"""Exportable scenarios per judging release (drawn until there are this many, from a fixed seed)."""


def _draw(strategy: Any, count: int) -> list[Any]:
    """``count`` examples of ``strategy``, the same ones every run."""
    drawn: list[Any] = []

    @settings(max_examples=count, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn


def _exportable(scenario: Any, judge: KafkaJudge) -> bool:
    try:
        if isinstance(scenario, AggregateSpec):
            check_aggregate(scenario)
        else:
            check_expressible(scenario, judge)
    except ExportError:
        return False
    return True


def _cases(judge: KafkaJudge) -> list[Any]:
    """Random scenarios the exporter writes for ``judge`` (the oracle's generators at that release; seed 000's
    aggregates too for the release that judges them)."""
    (version,) = [v for v in oracle_check.VERSIONS if v.version == judge.version]
    drawn = [s for s in _draw(oracle_check.scenarios(version), 8 * SAMPLE) if judge_of(s.semantics) == judge]
    cases = [s for s in drawn if _exportable(s, judge)][:SAMPLE]
    if judge == WINDOWED_TABLE_JUDGE:
        specs = _draw(oracle_check.aggregate_specs(version), 4 * SAMPLE)
        cases += [s for s in specs if _exportable(s, judge)][:SAMPLE]
    return cases


def _java(cases: list[Any], judge: KafkaJudge) -> str:
    """One class in the harness's package (so it may call ``Oracle.build``): for each case, the exporter's lines and
    the harness's build, each into a fresh StreamsBuilder; ``main`` prints both descriptions per case as JSON."""
    methods = []
    for index, scenario in enumerate(cases):
        if isinstance(scenario, AggregateSpec):
            lines, data, caching, optimize = aggregate_topology(scenario), dict(scenario.data), [], False
        else:
            lines, data = topology(scenario, judge), scenario.to_dict()
            caching, optimize = list(scenario.caching), scenario.optimize
        stores = ", ".join(java_string(store) for store in caching)
        body = "\n".join(" " * 8 + line for line in "\n".join(lines).split("\n"))
        methods.append(
            f"""
    static String exported{index}() {{
        StreamsBuilder builder = new StreamsBuilder();
{body}
        return builder.build(props({str(optimize).lower()})).describe().toString();
    }}

    @SuppressWarnings("unchecked")
    static String harness{index}() throws Exception {{
        StreamsBuilder builder = new StreamsBuilder();
        Oracle.build(builder, (Map<String, Object>) Json.parse({java_string(json.dumps(data))}), List.of({stores}));
        return builder.build(props({str(optimize).lower()})).describe().toString();
    }}"""
        )
    calls = "\n".join(f"        pairs.add(Arrays.asList(exported{i}(), harness{i}()));" for i in range(len(cases)))
    # only the classes the text names: a judge's Kafka may lack some (EmitStrategy is 3.3+)
    text = "".join(methods) + calls + "ValueJoiner Properties Path StreamsConfig List ArrayList Arrays StreamsBuilder"
    used = sorted(name for short, name in IMPORTS.items() if re.search(rf"\b{short}\b", text))
    imports = "\n".join(f"import {name};" for name in used)
    return f"""package kjoin.oracle;

{imports}
import java.util.Map;
import org.apache.kafka.streams.Topology;

@SuppressWarnings("deprecation")
public class ExportTopologyCheck {{
    private static final ValueJoiner<String, String, String> JOINER = (left, right) -> left + "-" + right;

    private static String field(String json, String path) {{
        return Oracle.foreignKey(json, path);
    }}

    private static long number(String json, String path) {{
        return Oracle.number(json, path);
    }}

    private static Properties props(boolean optimize) {{
        Properties props = Oracle.driverProperties("export-topology-check", Path.of("unused"));
        if (optimize) {{
            props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        }}
        return props;
    }}
{"".join(methods)}

    public static void main(String[] args) throws Exception {{
        List<Object> pairs = new ArrayList<>();
{calls}
        System.out.println(Json.write(pairs));
    }}
}}
"""


def _describe_both(cases: list[Any], judge: KafkaJudge, workdir: Path) -> list[tuple[str, str]]:
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        raise oracle_check.HarnessError("javac and java (JDK 17) are needed: apt-get install openjdk-17-jdk-headless")
    classpath = oracle_check.classpath(judge.version)  # a HarnessError when `make kafka-oracle` never ran
    source = workdir / "kjoin" / "oracle" / "ExportTopologyCheck.java"
    source.parent.mkdir(parents=True)
    source.write_text(_java(cases, judge), encoding="ascii")
    classes = workdir / "classes"
    compiled = subprocess.run(
        [javac, "-nowarn", "-encoding", "ascii", "-d", str(classes), "-cp", classpath, str(source)],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr[-4000:]
    ran = subprocess.run(
        [
            java,
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{classes}:{classpath}",
            "kjoin.oracle.ExportTopologyCheck",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    return [(exported, harness) for exported, harness in json.loads(ran.stdout.strip().splitlines()[-1])]


@pytest.mark.parametrize("judge", JUDGES, ids=lambda judge: judge.version)
def test_the_exporter_and_the_harness_build_the_same_topology(judge, tmp_path):
    cases = _cases(judge)
    assert len(cases) >= SAMPLE, f"only {len(cases)} exportable scenarios drawn for Kafka {judge.version}"
    described = _describe_both(cases, judge, tmp_path)
    assert len(described) == len(cases)
    for scenario, (exported, harness) in zip(cases, described):
        assert "Sub-topology" in exported and "Sink:" in exported  # a real description, not an empty topology
        data = dict(scenario.data) if isinstance(scenario, AggregateSpec) else scenario.to_dict()
        assert exported == harness, f"the exporter and the harness build different topologies for {data}"
