"""The scenario's topology in Kafka Streams' DSL, as lines of Java: what ``kafka_oracle/``'s ``Oracle.build`` builds
for the same scenario (``tests/test_export_topology.py`` compares the two topologies' descriptions)."""

from __future__ import annotations

from typing import Any

from ..scenario import AggregateSpec, Scenario
from ..scenario.windowed import window_kind
from .java import INDENT, java_string, millis
from .judges import KafkaJudge

__all__ = ["STRING_SERDES", "JOIN_METHOD", "topology", "aggregate_topology", "summed_field"]

STRING_SERDES = "Serdes.String(), Serdes.String()"
STORE = "Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as"


def _store(name: str, cached: bool) -> str:
    caching = "withCachingEnabled()" if cached else "withCachingDisabled()"
    return f'{STORE}("{name}")\n{INDENT * 3}.withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).{caching}'


def _table(scenario: Scenario, side: str) -> list[str]:
    """``builder.table(side)``, materialized in a store of its own (versioned if the scenario says so)."""
    options = getattr(scenario, side)
    if options.versioned:
        store = (
            f'Materialized.<String, String>as(Stores.persistentVersionedKeyValueStore("{side}-store", '
            f"{millis(options.history_retention_ms)}))"
        )
        return [
            f"// {side}: a versioned table, history retention {options.history_retention_ms} ms",
            f'KTable<String, String> {side} = builder.table("{side}", Consumed.with({STRING_SERDES}),',
            f"{INDENT * 2}{store}",
            f"{INDENT * 3}.withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));",
        ]
    return _table_lines(side, side in scenario.caching)


def _table_lines(side: str, cached: bool) -> list[str]:
    return [
        f'KTable<String, String> {side} = builder.table("{side}", Consumed.with({STRING_SERDES}),',
        f"{INDENT * 2}{_store(side + '-store', cached)});",
    ]


def _join_windows(window: Any, judge: KafkaJudge) -> str:
    difference = max(window.before_ms, window.after_ms)
    # ofTimeDifferenceAndGrace arrived with the spurious-result fix in 3.1: 3.0 shipped without it (KIP-633's
    # JoinWindows part was reverted with KAFKA-10847).
    if window.grace_ms is not None and window.spurious_result_fix is not False and judge.semantics.spurious_result_fix:
        windows = f"JoinWindows.ofTimeDifferenceAndGrace({millis(difference)}, {millis(window.grace_ms)})"
    else:
        windows = f"JoinWindows.of({millis(difference)})"
        if window.grace_ms is not None:
            windows += f".grace({millis(window.grace_ms)})"
    return f"{windows}\n{INDENT * 4}.before({millis(window.before_ms)}).after({millis(window.after_ms)})"


def _window_comment(window: Any) -> str:
    grace = (
        "no grace given (the deprecated JoinWindows.of: 24 h minus the window, eager left/outer results)"
        if window.grace_ms is None
        else f"grace {window.grace_ms} ms"
    )
    eager = ", eager left/outer results (JoinWindows.of(..).grace(..))" if window.spurious_result_fix is False else ""
    return f"// window: {window.before_ms} ms before, {window.after_ms} ms after, {grace}{eager}"


JOIN_METHOD = {"inner": "join", "left": "leftJoin", "outer": "outerJoin"}


def _stream_stream(scenario: Scenario, judge: KafkaJudge) -> list[str]:
    lines = [f'KStream<String, String> left = builder.stream("left", Consumed.with({STRING_SERDES}));']
    right = "left"
    if scenario.self_join:
        lines.insert(0, "// a self-join: the stream joined with itself")
    else:
        lines.append(f'KStream<String, String> right = builder.stream("right", Consumed.with({STRING_SERDES}));')
        right = "right"
    joined = "StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String())"
    joins = [(scenario.variant, scenario.window)] + [(c.variant, c.window or scenario.window) for c in scenario.then]
    source = "left"
    for number, (variant, window) in enumerate(joins):
        target = "result" if number == len(joins) - 1 else f"joined{number + 1}"
        lines += [
            _window_comment(window),
            f"KStream<String, String> {target} = {source}.{JOIN_METHOD[variant]}({right}, JOINER,",
            f"{INDENT * 2}{_join_windows(window, judge)},",
            f"{INDENT * 2}{joined});",
        ]
        source = target
    return lines + ['result.to("output", Produced.with(Serdes.String(), Serdes.String()));']


def _stream_table(scenario: Scenario) -> list[str]:
    joined = "Joined.with(Serdes.String(), Serdes.String(), Serdes.String())"
    if scenario.grace_ms is not None:
        joined += f".withGracePeriod({millis(scenario.grace_ms)})"
    return [
        f'KStream<String, String> left = builder.stream("left", Consumed.with({STRING_SERDES}));',
        *_table(scenario, "right"),
        f"KStream<String, String> result = left.{JOIN_METHOD[scenario.variant]}(right, JOINER,",
        f"{INDENT * 2}{joined});",
        'result.to("output", Produced.with(Serdes.String(), Serdes.String()));',
    ]


def _table_table(scenario: Scenario) -> list[str]:
    lines = [*_table(scenario, "left"), *_table(scenario, "right")]
    variants = [scenario.variant] + [chained.variant for chained in scenario.then]
    source = "left"
    for number, variant in enumerate(variants):
        last = number == len(variants) - 1
        target = "result" if last else f"joined{number + 1}"
        store = ""
        if last and scenario.materialized:
            store = f",\n{INDENT * 2}{_store('result-store', 'result' in scenario.caching)}"
        lines.append(f"KTable<String, String> {target} = {source}.{JOIN_METHOD[variant]}(right, JOINER{store});")
        source = target
    return lines + ['result.toStream().to("output", Produced.with(Serdes.String(), Serdes.String()));']


def _foreign_key(scenario: Scenario) -> list[str]:
    store = ""
    if scenario.materialized:
        store = f",\n{INDENT * 2}{_store('result-store', 'result' in scenario.caching)}"
    return [
        *_table(scenario, "left"),
        *_table(scenario, "right"),
        f"// the foreign key: the field {scenario.foreign_key!r} of the left value's JSON",
        f"Function<String, String> foreignKey = value -> field(value, {java_string(scenario.foreign_key)});",
        f"KTable<String, String> result = left.{JOIN_METHOD[scenario.variant]}(right, foreignKey, JOINER{store});",
        'result.toStream().to("output", Produced.with(Serdes.String(), Serdes.String()));',
    ]


def _global_table(scenario: Scenario) -> list[str]:
    """``stream.join(globalTable, keySelector, JOINER)``: the right topic is a global topic, which
    TopologyTestDriver applies the moment a record is piped (kjoin's order)."""
    if scenario.foreign_key is None:
        selector = ["KeyValueMapper<String, String, String> keySelector = (key, value) -> key; // the stream key"]
    else:
        selector = [
            f"// the key selector: the field {scenario.foreign_key!r} of the stream value's JSON",
            "KeyValueMapper<String, String, String> keySelector =",
            f"{INDENT * 2}(key, value) -> field(value, {java_string(scenario.foreign_key)});",
        ]
    return [
        f'KStream<String, String> left = builder.stream("left", Consumed.with({STRING_SERDES}));',
        f'GlobalKTable<String, String> right = builder.globalTable("right", Consumed.with({STRING_SERDES}));',
        *selector,
        f"KStream<String, String> result = left.{JOIN_METHOD[scenario.variant]}(right, keySelector, JOINER);",
        'result.to("output", Produced.with(Serdes.String(), Serdes.String()));',
    ]


def topology(scenario: Scenario, judge: KafkaJudge) -> list[str]:
    if scenario.join == "stream-stream":
        return _stream_stream(scenario, judge)
    if scenario.join == "stream-table":
        return _stream_table(scenario)
    if scenario.join == "table-table":
        return _table_table(scenario)
    if scenario.join == "stream-globaltable":
        return _global_table(scenario)
    return _foreign_key(scenario)


# -- the windowed-table design: the aggregates and the WTable join today's DSL builds ---------------------------
def summed_field(spec: AggregateSpec) -> str | None:
    aggregate = spec.data.get("aggregate", "count")
    return aggregate.get("sum") if isinstance(aggregate, dict) else None


def _windows(window: dict[str, Any]) -> str:
    """The window of a windowed aggregate through today's API: tumbling or hopping ``TimeWindows``, ``SessionWindows``
    (``inactivity_gap_ms``) or ``SlidingWindows`` (``time_difference_ms``), each with its grace."""
    grace = millis(window.get("grace_ms") or 0)
    kind = window_kind(window)
    if kind == "session":
        return f"SessionWindows.ofInactivityGapAndGrace({millis(window['inactivity_gap_ms'])}, {grace})"
    if kind == "sliding":
        return f"SlidingWindows.ofTimeDifferenceAndGrace({millis(window['time_difference_ms'])}, {grace})"
    windows = f"TimeWindows.ofSizeAndGrace({millis(window['size_ms'])}, {grace})"
    if window.get("advance_ms") is not None:
        windows += f".advanceBy({millis(window['advance_ms'])})"
    return windows


def _windowed(spec: AggregateSpec, side: str, sum_field: str | None) -> list[str]:
    """``KTable<Windowed<String>, Long> side``: the side's stream counted (or summed) per key and window; with
    ``emit: final`` the aggregate emits a window once it closes (``emitStrategy``), with ``suppress:
    until-window-closes`` its updates wait in a suppression buffer until then."""
    data = spec.data
    session = window_kind(data["window"]) == "session"
    if sum_field is None and not session:
        aggregate = "count()"
    else:
        # A session aggregate needs a merger (sessions that a record bridges become one): the two totals added.
        adder = "total + 1" if sum_field is None else f"total + number(value, {java_string(sum_field)})"
        merger = f"\n{INDENT * 4}(key, one, two) -> one + two," if session else ""
        aggregate = (
            f"aggregate(() -> 0L, (key, value, total) -> {adder},{merger}\n"
            f"{INDENT * 4}Materialized.with(Serdes.String(), Serdes.Long()))"
        )
    lines = [
        f'KTable<Windowed<String>, Long> {side} = builder.stream("{side}", Consumed.with({STRING_SERDES}))',
        f"{INDENT * 2}.groupByKey(Grouped.with({STRING_SERDES}))",
        f"{INDENT * 2}.windowedBy({_windows(data['window'])})",
    ]
    if data.get("emit", "updates") == "final":
        lines.append(
            f"{INDENT * 2}.emitStrategy(EmitStrategy.onWindowClose()) // one result per window, once it closes"
        )
    if data.get("suppress") == "until-window-closes":
        lines += [
            f"{INDENT * 2}.{aggregate}",
            f"{INDENT * 2}// the updates wait until the window closes (stream time past its end plus grace)",
            f"{INDENT * 2}.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));",
        ]
    else:
        lines.append(f"{INDENT * 2}.{aggregate};")
    return lines


WINDOWED_KEY = 'window.key() + "@[" + window.window().start() + ", " + window.window().end() + ")"'


def aggregate_topology(spec: AggregateSpec) -> list[str]:
    sum_field = summed_field(spec)
    what = "count" if sum_field is None else f"sum of {sum_field}"
    if spec.join == "table-aggregate":
        group = spec.data["group_by"]
        aggregate = (
            "count()"
            if sum_field is None
            else f"aggregate(() -> 0L,\n{INDENT * 4}(group, value, total) -> total + number(value, "
            f"{java_string(sum_field)}),\n{INDENT * 4}(group, value, total) -> total - number(value, "
            f"{java_string(sum_field)}),\n{INDENT * 4}Materialized.with(Serdes.String(), Serdes.Long()))"
        )
        return [
            *_table_lines("left", False),
            f"// the {what} per group: the field {group!r} of the value's JSON",
            "KTable<String, Long> result = left",
            f"{INDENT * 2}.groupBy((key, value) -> KeyValue.pair(field(value, {java_string(group)}), value),",
            f"{INDENT * 4}Grouped.with({STRING_SERDES}))",
            f"{INDENT * 2}.{aggregate};",
            "result.toStream()",
            f"{INDENT * 2}.mapValues(total -> total == null ? null : total.toString())",
            f'{INDENT * 2}.to("output", Produced.with({STRING_SERDES}));',
        ]
    if spec.join == "window-aggregate":
        lines = [f"// the {what} per key and window", *_windowed(spec, "left", sum_field)]
        value = "total == null ? null : total.toString()"
        source, names = "left", "(window, total)"
    else:
        variant = spec.variant
        lines = [
            "// two windowed counts (WTables) joined on the same window: a table-table join",
            *_windowed(spec, "left", None),
            *_windowed(spec, "right", None),
            f"KTable<Windowed<String>, String> result = left.{JOIN_METHOD[variant]}(right,",
            f'{INDENT * 2}(leftCount, rightCount) -> leftCount + "-" + rightCount);',
        ]
        value = "value"
        source, names = "result", "(window, value)"
    return lines + [
        f"{source}.toStream()",
        f"{INDENT * 2}// a windowed key as kjoin prints it: key@[start, end)",
        f"{INDENT * 2}.map({names} -> KeyValue.pair({WINDOWED_KEY}, {value}))",
        f'{INDENT * 2}.to("output", Produced.with({STRING_SERDES}));',
    ]
