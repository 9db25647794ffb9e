"""The exported JUnit 5 test class: the driver's config, the inputs piped and the records asserted after each, the
helpers in the class, and :func:`export_junit`, which puts the parts together."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..engine import run
from ..scenario import AggregateSpec, Scenario
from ..scenario.windowed import window_kind
from .checks import (
    check_expressible,
    check_judge_agrees,
    check_aggregate,
    kjoin_outputs,
    aggregate_outputs,
    text,
)
from .java import INDENT, comment, imports, indented, java_long, java_string
from .judges import WINDOWED_TABLE_JUDGE, ExportError, KafkaJudge, judge_of
from .dsl import aggregate_topology, summed_field, topology

__all__ = ["export_junit"]


def _config(judge: KafkaJudge, name: str, caching: tuple[str, ...], sweep: bool, optimize: bool) -> list[str]:
    cache = (
        "STATESTORE_CACHE_MAX_BYTES_CONFIG"
        if judge.semantics.statestore_cache_config
        else "CACHE_MAX_BYTES_BUFFERING_CONFIG"
    )
    lines = [
        "Properties props = new Properties();",
        f'props.put(StreamsConfig.APPLICATION_ID_CONFIG, "{name}");',
        'props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092"); // TopologyTestDriver needs no broker',
        "props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());",
        "props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);",
        "props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);",
    ]
    if caching:
        lines += [
            f"// record caches on ({', '.join(caching)}); TopologyTestDriver commits (flushes them) after every record",
            f"props.put(StreamsConfig.{cache}, 10L * 1024 * 1024);",
        ]
    else:
        lines += [
            "// record caches off: every update reaches the output topic at once",
            f"props.put(StreamsConfig.{cache}, 0L);",
        ]
    if sweep and judge.semantics.spurious_result_fix:
        lines += [
            "// Left/outer joins sweep their outer-join buffer only every so much wall-clock time (an internal",
            "// config, default 1000 ms), and TopologyTestDriver's clock stands still: 0 sweeps it on every record,",
            "// as Kafka's own join tests do.",
            'props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);',
        ]
    if optimize:
        lines += [
            "// the single-store self-join (KIP-862) is a topology optimization",
            "props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);",
        ]
    return lines


EMIT_FINAL_CONFIG = [
    "// An emit-final aggregate looks for closed windows only every so much wall-clock time (an internal config,",
    "// default 1000 ms), and TopologyTestDriver's clock stands still: 0 looks on every record, as Kafka's tests do.",
    'props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);',
]


def _fate(step: Any) -> str:
    fate = step.fate.value
    if step.reason is not None:
        fate += f" ({step.reason.value})"
    if step.until_ms is not None:
        fate += f" until {step.until_ms} ms"
    return fate


@dataclass(frozen=True)
class _Input:
    """One input record as the test pipes it: the topic, and the words of the comment and the message."""

    topic: str
    side: str
    key: str | None
    value: str | None
    ts: int
    fate: str


def _inputs(scenario: Scenario) -> list[_Input]:
    steps = [step for step in run(scenario).steps if step.message is None]
    return [
        _Input(
            "left" if scenario.self_join else event.side.value,
            event.side.value,
            text(event.key),
            text(event.value),
            event.ts,
            _fate(step),
        )
        for event, step in zip(scenario.events, steps)
    ]


def _aggregate_inputs(spec: AggregateSpec) -> list[_Input]:
    inputs = []
    for event, step in zip(spec.events, run(spec).steps):
        side = event.get("side", "left")
        inputs.append(_Input(side, side, text(event.get("key")), text(event.get("value")), event["ts"], _fate(step)))
    return inputs


def _drive(topics: list[str], inputs: list[_Input], expected: list) -> list[str]:
    lines: list[str] = []
    for side in topics:
        lines += [
            f"TestInputTopic<String, String> {side}Topic =",
            f'{INDENT * 2}driver.createInputTopic("{side}", new StringSerializer(), new StringSerializer());',
        ]
    lines += [
        "TestOutputTopic<String, String> output =",
        f'{INDENT * 2}driver.createOutputTopic("output", new StringDeserializer(), new StringDeserializer());',
    ]
    for index, (record, records) in enumerate(zip(inputs, expected)):
        said = f"{record.side} {_or_null(record.key)}:{_or_null(record.value)}@{record.ts}"
        lines += [
            "",
            f"// {index}: {comment(said)}; kjoin: {comment(record.fate)}",
            f"{record.topic}Topic.pipeInput({java_string(record.key)}, {java_string(record.value)}, "
            f"{java_long(record.ts)});",
            *_assertion(records, f"{said} (input {index})"),
        ]
    return lines


def _or_null(text: str | None) -> str:
    return "null" if text is None else text


def _assertion(records: list, said: str) -> list[str]:
    message = java_string(said)
    if not records:
        return [f"assertEquals(records(), read(output), {message});"]
    outs = [f"out({java_string(key)}, {java_string(value)}, {java_long(ts)})" for key, value, ts in records]
    if len(outs) == 1 and len(line := f"assertEquals(records({outs[0]}), read(output), {message});") <= 110:
        return [line]
    return [
        "assertEquals(records(",
        *(f"{INDENT * 2}{out}{',' if i < len(outs) - 1 else ''}" for i, out in enumerate(outs)),
        f"), read(output), {message});",
    ]


# -- helpers in the test class -----------------------------------------------------------------------------------
RECORD_HELPERS = """\
/** kjoin's joiner: left + "-" + right, a missing side printed as null. */
private static final ValueJoiner<String, String, String> JOINER = (left, right) -> left + "-" + right;

/** An expected output record: ("key", "value")@timestamp; a null key or value (a tombstone) unquoted. */
private static String out(String key, String value, long timestampMs) {
    return "(" + quoted(key) + ", " + quoted(value) + ")@" + timestampMs;
}

private static List<String> records(String... records) {
    return Arrays.asList(records);
}

/** The records that reached the output topic since the last read, in order, as out() writes them. */
private static List<String> read(TestOutputTopic<String, String> topic) {
    List<String> records = new ArrayList<>();
    for (TestRecord<String, String> record : topic.readRecordsToList()) {
        records.add(out(record.key(), record.value(), record.timestamp()));
    }
    return records;
}

private static String quoted(String text) {
    return text == null ? "null" : "\\"" + text + "\\"";
}"""

FIELD_HELPERS = """\
/** The field {@code path} ("a.b" nests) of a JSON object, as text: a string unquoted, a number, boolean, object or
 *  array as its JSON; null when the value is not an object, or a field on the way is missing or null. */
private static String field(String json, String path) {
    String node = json;
    for (String name : path.split("\\\\.")) {
        node = node == null ? null : member(node.trim(), name);
    }
    if (node == null || node.equals("null")) {
        return null;
    }
    return node.startsWith("\\"") ? unquote(node) : node;
}

/** The JSON text of member {@code name} of the JSON object {@code json}, or null. */
private static String member(String json, String name) {
    if (!json.startsWith("{")) {
        return null;
    }
    int at = skipSpace(json, 1);
    while (at < json.length() && json.charAt(at) == '"') {
        int keyEnd = end(json, at);
        String key = unquote(json.substring(at, keyEnd));
        int valueStart = skipSpace(json, skipSpace(json, keyEnd) + 1); // past the ':'
        int valueEnd = end(json, valueStart);
        if (key.equals(name)) {
            return json.substring(valueStart, valueEnd).trim();
        }
        at = skipSpace(json, skipSpace(json, valueEnd) + 1); // past the ','
    }
    return null;
}

/** Where the JSON value starting at {@code start} ends: a string, an object or array (nesting counted,
 *  strings skipped), or a number, boolean or null. */
private static int end(String json, int start) {
    int depth = 0;
    for (int i = start; i < json.length(); i++) {
        char c = json.charAt(i);
        if (c == '"') {
            for (i++; json.charAt(i) != '"'; i++) {
                i += json.charAt(i) == '\\\\' ? 1 : 0;
            }
            if (depth == 0) {
                return i + 1;
            }
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) {
                return i;
            }
            if (--depth == 0) {
                return i + 1;
            }
        } else if (depth == 0 && (c == ',' || Character.isWhitespace(c))) {
            return i;
        }
    }
    return json.length();
}

private static int skipSpace(String json, int at) {
    while (at < json.length() && Character.isWhitespace(json.charAt(at))) {
        at++;
    }
    return at;
}

/** A JSON string literal's text. */
private static String unquote(String literal) {
    StringBuilder text = new StringBuilder();
    for (int i = 1; i < literal.length() - 1; i++) {
        char c = literal.charAt(i);
        if (c != '\\\\') {
            text.append(c);
            continue;
        }
        char escaped = literal.charAt(++i);
        switch (escaped) {
            case 'b': text.append('\\b'); break;
            case 'f': text.append('\\f'); break;
            case 'n': text.append('\\n'); break;
            case 'r': text.append('\\r'); break;
            case 't': text.append('\\t'); break;
            case 'u': text.append((char) Integer.parseInt(literal.substring(i + 1, i + 5), 16)); i += 4; break;
            default: text.append(escaped);
        }
    }
    return text.toString();
}"""


NUMBER_HELPER = """\
/** kjoin's sum: the numeric field {@code path} of the value's JSON; a missing or null one counts as 0. */
private static long number(String json, String path) {
    String found = json == null ? null : field(json, path);
    return found == null ? 0L : Long.parseLong(found);
}"""


def _header(source: str, what: str, count: int, semantics: str, judge: KafkaJudge) -> list[str]:
    return [
        f"// Generated by `kjoin export {comment(source)} --junit`: {what}, {count} input records.",
        f"// {semantics}; written for and judged by",
        f"// Kafka Streams {judge.version} (kafka-streams and kafka-streams-test-utils {judge.version}, JUnit 5).",
        "// The expected records are the ones kjoin computed for the output topic after each input record (key,",
        "// value, timestamp, in order); a test that fails here means kjoin and Kafka Streams disagree.",
        "// TopologyTestDriver runs one task (one partition per topic) and commits after every record.",
    ]


ERAS = {"0.10.2": "KIP-77: eager left/outer results", "3.1": "the spurious-result fix, KAFKA-10847"}


def export_junit(scenario: Any, name: str, source: str | None = None) -> str:
    """The JUnit 5 test of ``scenario`` as Java source: class ``name`` (package-private, so the file may have any
    name), for the Kafka version that judges its era. ``source`` names the scenario file in the header comment.

    Raises :class:`ExportError` when the scenario cannot be expressed (era 0.10.0, several partitions, explicit
    foreign-key delivery, teaching switches, the windowed-table design's shifters and selectors, APIs the judging
    version lacks) or when kjoin's outputs for its semantics differ from kjoin's outputs for the judging version."""
    source = source or f"{name}.yaml"
    application = "kjoin-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if isinstance(scenario, AggregateSpec):
        return _export_aggregate(scenario, name, source, application)
    if not isinstance(scenario, Scenario):
        raise ExportError(
            f"{source}: kjoin export --junit writes a test for one join scenario or a windowed-table aggregate, not a "
            f"{type(scenario).__name__}; a topology's test is not exported yet (run it with kjoin run, or judge it "
            "with make topology-check)"
        )
    judge = judge_of(scenario.semantics)
    check_expressible(scenario, judge)
    expected = kjoin_outputs(scenario)
    check_judge_agrees(scenario, judge, expected)
    what = f"{scenario.join} {scenario.variant} join"
    if scenario.then:
        what += ", then " + ", ".join(chained.variant for chained in scenario.then)
    outer = scenario.variant != "inner" or any(chained.variant != "inner" for chained in scenario.then)
    config = _config(
        judge, application, scenario.caching, scenario.join == "stream-stream" and outer, scenario.optimize
    )
    return _render(
        name,
        _header(
            source,
            what,
            len(scenario.events),
            f"kjoin semantics {scenario.semantics} (era {judge.era}, {ERAS[judge.era]})",
            judge,
        ),
        topology(scenario, judge),
        config,
        _drive(["left"] if scenario.self_join else ["left", "right"], _inputs(scenario), expected),
        scenario.join == "fk" or (scenario.join == "stream-globaltable" and scenario.foreign_key is not None),
    )


def _export_aggregate(spec: AggregateSpec, name: str, source: str, application: str) -> str:
    check_aggregate(spec)
    what = f"the windowed-table design's {spec.join}"
    if spec.join == "wtable-wtable":
        what += f" {spec.variant} join"
    final = spec.join == "window-aggregate" and spec.data.get("emit", "updates") == "final"
    if spec.join == "window-aggregate":
        what += f" over {window_kind(spec.data['window'])} windows"
        if final:
            what += ", emit final"
        if "suppress" in spec.data:
            what += f", suppressed {spec.data['suppress']}"
    sum_field = summed_field(spec)
    what += " (count)" if sum_field is None else f" (sum of {sum_field})"
    topics = ["left", "right"] if spec.join == "wtable-wtable" else ["left"]
    judge = WINDOWED_TABLE_JUDGE
    return _render(
        name,
        _header(
            source, what, len(spec.events), "kjoin models the windowed-table design as the latest Kafka does", judge
        ),
        aggregate_topology(spec),
        _config(judge, application, (), False, False) + (EMIT_FINAL_CONFIG if final else []),
        _drive(topics, _aggregate_inputs(spec), aggregate_outputs(spec)),
        spec.join == "table-aggregate",
        sum_field is not None,
    )


def _render(
    name: str,
    header: list[str],
    topology: list[str],
    config: list[str],
    drive: list[str],
    fields: bool,
    numbers: bool = False,
) -> str:
    deprecated = any("JoinWindows.of(" in line for line in topology)
    method = [
        "@Test",
        *(['@SuppressWarnings("deprecation") // JoinWindows.of'] if deprecated else []),
        "void outputsAreWhatKjoinComputed() {",
        *indented(["StreamsBuilder builder = new StreamsBuilder();", *topology], 1),
        "",
        *indented(config, 1),
        "",
        f"{INDENT}try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(props), props)) {{",
        *indented(drive, 2),
        f"{INDENT}}}",
        "}",
    ]
    helpers = RECORD_HELPERS
    if fields or numbers:
        helpers += "\n\n" + FIELD_HELPERS
    if numbers:
        helpers += "\n\n" + NUMBER_HELPER
    body = [
        f"class {name} {{",
        "",
        *indented([helpers], 1),
        "",
        f"{INDENT}@TempDir",
        f"{INDENT}Path stateDir;",
        "",
        *indented(method, 1),
        "}",
    ]
    text_body = "\n".join(body)
    return "\n".join([*header, "", *imports(text_body), "", text_body, ""])
