package kjoin.oracle;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

/**
 * kjoin's oracle: reads kjoin scenarios (one JSON object a line, as {@code Scenario.to_dict()} writes them, plus an
 * {@code id}), builds the same topology with Kafka Streams' DSL, pipes every event through TopologyTestDriver and
 * writes one JSON line per scenario: {@code {"id": .., "outputs": [[[key, value, ts], ...] per event]}} or
 * {@code {"id": .., "error": ".."}}. One JVM runs a whole batch; the Kafka version is whatever is on the classpath.
 *
 * <p>TopologyTestDriver runs one task: every input topic is one partition. The caller sends one scenario per task.
 */
public final class Oracle {
    static final String VERSION = kafkaVersion();
    static final int[] V = parseVersion(VERSION);
    /** {@code -Dkjoin.oracle.stores=rocksdb}: Kafka's default (RocksDB) key-value stores too, not in-memory ones. */
    static final boolean IN_MEMORY = !"rocksdb".equals(System.getProperty("kjoin.oracle.stores"));

    private Oracle() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        if (args.length > 0 && args[0].equals("--version")) {
            out.println(VERSION);
            out.flush();
            return;
        }
        // --threads N: read the whole batch, run N scenarios at a time (opening RocksDB stores mostly waits),
        // write the answers in input order. Without it: one answer per line as each line arrives.
        int threads = args.length > 1 && args[0].equals("--threads") ? Integer.parseInt(args[1]) : 0;
        // RocksDB opens its stores much faster on a RAM disk; TopologyTestDriver opens them again for every scenario.
        // StateDirs puts the directory there and removes it when the JVM exits.
        Path stateDir = StateDirs.create("kjoin-oracle-");
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            if (threads > 0) {
                List<String> lines = new ArrayList<>();
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    if (!line.isBlank()) {
                        lines.add(line);
                    }
                }
                java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
                List<java.util.concurrent.Future<String>> answers = new ArrayList<>();
                for (int i = 0; i < lines.size(); i++) {
                    String line = lines.get(i);
                    Path dir = stateDir.resolve("s" + i);
                    answers.add(pool.submit(() -> answer(line, dir)));
                }
                for (java.util.concurrent.Future<String> answer : answers) {
                    out.println(answer.get());
                }
                out.flush();
                pool.shutdown();
            } else {
                int count = 0;
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    if (!line.isBlank()) {
                        out.println(answer(line, stateDir.resolve("s" + count++)));
                        out.flush();
                    }
                }
            }
        }
    }

    /** One scenario in, one JSON answer out: its outputs, or the error Kafka Streams raised. */
    static String answer(String line, Path stateDir) {
        Map<String, Object> result = new LinkedHashMap<>();
        Object id = null;
        try {
            @SuppressWarnings("unchecked")
            Map<String, Object> scenario = (Map<String, Object>) Json.parse(line);
            id = scenario.get("id");
            result.put("id", id);
            result.put("outputs", run(scenario, stateDir));
        } catch (Exception | LinkageError | AssertionError error) {
            StringBuilder message = new StringBuilder();
            for (Throwable cause = error; cause != null; cause = cause.getCause()) {
                message.append(message.length() == 0 ? "" : " <- ").append(cause.getClass().getSimpleName())
                    .append(": ").append(cause.getMessage());
                if (cause.getCause() == null && cause.getStackTrace().length > 0) {
                    message.append(" at ").append(cause.getStackTrace()[0]);
                }
            }
            result.clear();
            result.put("id", id);
            result.put("error", message.toString());
        }
        return Json.write(result);
    }

    /** The Kafka version on the classpath, from kafka-clients' {@code kafka/kafka-version.properties}: every version
     *  has it, while {@code AppInfoParser}, which reads it, moved to {@code common.utils.internals} in 4.4. */
    static String kafkaVersion() {
        try (InputStream in = Oracle.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties properties = new Properties();
            if (in != null) {
                properties.load(in);
            }
            return properties.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    static int[] parseVersion(String version) {
        String[] parts = version.split("[.-]");
        int[] numbers = new int[3];
        for (int i = 0; i < 3 && i < parts.length; i++) {
            try {
                numbers[i] = Integer.parseInt(parts[i]);
            } catch (NumberFormatException e) {
                numbers[i] = 0;
            }
        }
        return numbers;
    }

    static boolean atLeast(int major, int minor) {
        return V[0] > major || (V[0] == major && V[1] >= minor);
    }

    /** The joiner every kjoin scenario uses: {@code left-right}, a null printed as {@code null}. */
    static final ValueJoiner<String, String, String> JOINER = (left, right) -> left + "-" + right;

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return value == null ? Map.of() : (Map<String, Object>) value;
    }

    static boolean flag(Map<String, Object> scenario, String name) {
        return Boolean.TRUE.equals(scenario.get(name));
    }

    static String text(Object value) {
        if (value == null || value instanceof String) {
            return (String) value;
        }
        return Json.write(value);
    }

    /** The settings every TopologyTestDriver here starts from: string serdes, a state directory of its own. */
    static Properties driverProperties(String applicationId, Path stateDir) {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        return props;
    }

    /** The record cache's size setting: renamed in 3.4 (KIP-770). */
    static String cacheConfig() {
        return atLeast(3, 4) ? "statestore.cache.max.bytes" : "cache.max.bytes.buffering";
    }

    static List<List<List<Object>>> run(Map<String, Object> scenario, Path stateDir) throws Exception {
        Properties props = driverProperties("kjoin-oracle", stateDir);
        // Left/outer stream-stream joins (3.1+) sweep their outer-join buffer only every so much wall-clock time
        // (an internal config, default 1000 ms); TopologyTestDriver's wall clock does not move, so the sweep would
        // never run. 0 makes it run on every record, as Kafka's own join tests set it.
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        // Emit-final windowed aggregates (3.3+, KIP-825) check for closed windows at most once per emit interval of
        // wall-clock time (an internal config, default 1000 ms): 0 checks after every record, as kjoin models it.
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        List<String> caching = new ArrayList<>();
        if (scenario.get("caching") != null) {
            for (Object store : (List<Object>) scenario.get("caching")) {
                caching.add((String) store);
            }
        }
        // Record caches off, unless the scenario asks for them (TopologyTestDriver commits after every record).
        props.put(cacheConfig(), caching.isEmpty() ? 0L : 10L * 1024 * 1024);
        if (flag(scenario, "optimize")) {
            props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        }
        // Harness only: a task that waits max.task.idle.ms for every partition (its inputs, the FK join's
        // subscription and response topics) instead of running each input to completion. An {"advance": true}
        // event moves the wall clock past the idle time, so the task processes its queued records in Kafka's
        // own order (lowest head timestamp first) until a partition runs dry again.
        Number idle = (Number) scenario.get("task_idle_ms");
        if (idle != null) {
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, idle.longValue());
        }

        // The stores the DSL builds inside a join (the FK subscription store): in memory too, where the version
        // has the config (3.2+); 2.8 keeps RocksDB for them.
        // Key-value stores (tables, results, the FK subscription store) in memory: they behave as RocksDB's do, and
        // open much faster. A stream-stream join keeps RocksDB (see streamStream); versioned stores exist only there.
        // Windowed aggregates keep Kafka's default (RocksDB) window stores too: before 3.4 an in-memory window store
        // hides a window behind its retention from reads, while RocksDB's still finds it (KAFKA-12960).
        if (IN_MEMORY && !List.of("stream-stream", "window-aggregate", "wtable-wtable").contains(scenario.get("join"))) {
            props.put("default.dsl.store", "in_memory");
            props.put("dsl.store.suppliers.class",
                "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers");
        }
        StreamsBuilder builder = atLeast(3, 2)
            ? new StreamsBuilder(new org.apache.kafka.streams.TopologyConfig(new StreamsConfig(props)))
            : new StreamsBuilder();
        String observed = build(builder, scenario, caching);
        Topology topology = builder.build(props);
        if (observed != null) {
            OldValues.attach(topology, observed);
        }

        List<List<List<Object>>> outputs = new ArrayList<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            TestInputTopic<String, String> left =
                driver.createInputTopic("left", new StringSerializer(), new StringSerializer());
            TestInputTopic<String, String> right = flag(scenario, "self_join") ? left
                : driver.createInputTopic("right", new StringSerializer(), new StringSerializer());
            TestOutputTopic<String, String> output =
                driver.createOutputTopic("output", new StringDeserializer(), new StringDeserializer());
            TestOutputTopic<String, String> oldValues = observed == null ? null
                : driver.createOutputTopic(OldValues.TOPIC, new StringDeserializer(), new StringDeserializer());
            for (Object item : (List<Object>) scenario.get("events")) {
                Map<String, Object> event = map(item);
                if (event.containsKey("deliver")) {
                    throw new IllegalArgumentException(
                        "explicit delivery: TopologyTestDriver delivers every message at once");
                }
                if (event.containsKey("advance")) {
                    if (idle == null) {
                        throw new IllegalArgumentException("an advance event needs task_idle_ms");
                    }
                    driver.advanceWallClockTime(Duration.ofMillis(idle.longValue()));
                } else {
                    TestInputTopic<String, String> topic = "left".equals(event.get("side")) ? left : right;
                    long ts = ((Number) event.get("ts")).longValue();
                    topic.pipeInput(text(event.get("key")), text(event.get("value")), ts);
                }
                List<List<Object>> emitted = new ArrayList<>();
                for (TestRecord<String, String> record : output.readRecordsToList()) {
                    List<Object> triple = new ArrayList<>();
                    triple.add(record.key());
                    triple.add(record.value());
                    triple.add(record.timestamp());
                    emitted.add(triple);
                }
                if (oldValues != null) {  // send_old_values: [key, value, ts, old], the old value of each Change
                    List<TestRecord<String, String>> changes = oldValues.readRecordsToList();
                    if (changes.size() != emitted.size()) {
                        throw new IllegalStateException("the old-values observer saw " + changes.size()
                            + " changes, the output topic " + emitted.size() + " records");
                    }
                    for (int i = 0; i < changes.size(); i++) {
                        List<?> pair = (List<?>) Json.parse(changes.get(i).value());
                        emitted.get(i).add(pair.get(1));
                    }
                }
                outputs.add(emitted);
            }
        }
        return outputs;
    }

    /** Build the scenario's topology into {@code builder}; returns the processor node whose {@code Change}s the
     *  harness observes ({@code send_old_values}, see {@link OldValues}), or null. */
    @SuppressWarnings("unchecked")
    static String build(StreamsBuilder builder, Map<String, Object> scenario, List<String> caching) throws Exception {
        String observed = null;
        String join = (String) scenario.get("join");
        String variant = (String) scenario.get("variant");
        List<Object> then = scenario.get("then") == null ? List.of() : (List<Object>) scenario.get("then");
        Consumed<String, String> consumed = Consumed.with(Serdes.String(), Serdes.String());
        Produced<String, String> produced = Produced.with(Serdes.String(), Serdes.String());
        switch (join) {
            case "stream-stream": {
                KStream<String, String> left = builder.stream("left", consumed);
                KStream<String, String> right = flag(scenario, "self_join") ? left : builder.stream("right", consumed);
                KStream<String, String> result = streamStream(left, right, variant, map(scenario.get("window")));
                for (Object next : then) {
                    Map<String, Object> chained = map(next);
                    Map<String, Object> window = map(chained.get("window") == null
                        ? scenario.get("window") : chained.get("window"));
                    result = streamStream(result, right, (String) chained.get("variant"), window);
                }
                result.to("output", produced);
                break;
            }
            case "stream-table": {
                KStream<String, String> left = builder.stream("left", consumed);
                KTable<String, String> right = table(builder, "right", map(scenario.get("right")),
                    caching.contains("right"));
                Joined<String, String, String> joined = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
                if (scenario.get("grace_ms") != null) {
                    joined = joined.withGracePeriod(Duration.ofMillis(((Number) scenario.get("grace_ms")).longValue()));
                }
                KStream<String, String> result = "inner".equals(variant)
                    ? left.join(right, JOINER, joined) : left.leftJoin(right, JOINER, joined);
                result.to("output", produced);
                break;
            }
            case "table-table": {
                KTable<String, String> left = table(builder, "left", map(scenario.get("left")),
                    caching.contains("left"));
                KTable<String, String> right = table(builder, "right", map(scenario.get("right")),
                    caching.contains("right"));
                List<String> variants = new ArrayList<>();
                variants.add(variant);
                for (Object next : then) {
                    variants.add((String) map(next).get("variant"));
                }
                KTable<String, String> result = left;
                for (int i = 0; i < variants.size(); i++) {
                    boolean last = i == variants.size() - 1;
                    Materialized<String, String, KeyValueStore<Bytes, byte[]>> store = null;
                    if (last && flag(scenario, "materialized")) {
                        store = resultStore(caching.contains("result"));
                    }
                    result = tableTable(result, right, variants.get(i), store);
                }
                if (flag(scenario, "send_old_values")) {
                    OldValues.enable(result);
                    observed = OldValues.node(result);
                }
                result.toStream().to("output", produced);
                break;
            }
            case "fk": {
                KTable<String, String> left = table(builder, "left", map(scenario.get("left")),
                    caching.contains("left"));
                KTable<String, String> right = table(builder, "right", map(scenario.get("right")),
                    caching.contains("right"));
                String path = (String) scenario.get("foreign_key");
                java.util.function.Function<String, String> extractor = value -> foreignKey(value, path);
                KTable<String, String> result;
                if (flag(scenario, "materialized")) {
                    Materialized<String, String, KeyValueStore<Bytes, byte[]>> store =
                        resultStore(caching.contains("result"));
                    result = "inner".equals(variant)
                        ? left.join(right, extractor, JOINER, store) : left.leftJoin(right, extractor, JOINER, store);
                } else {
                    result = "inner".equals(variant)
                        ? left.join(right, extractor, JOINER) : left.leftJoin(right, extractor, JOINER);
                }
                result.toStream().to("output", produced);
                break;
            }
            case "stream-globaltable": {
                // KStream-GlobalKTable: the right topic is a global topic (TopologyTestDriver applies a global record
                // the moment it is piped); the key selector is a field path into the stream value, or the stream key.
                KStream<String, String> left = builder.stream("left", consumed);
                org.apache.kafka.streams.kstream.GlobalKTable<String, String> right = builder.globalTable("right",
                    consumed);
                String path = (String) scenario.get("foreign_key");
                org.apache.kafka.streams.kstream.KeyValueMapper<String, String, String> selector =
                    (key, value) -> path == null ? key : selectedKey(value, path);
                KStream<String, String> result = "inner".equals(variant)
                    ? left.join(right, selector, JOINER) : left.leftJoin(right, selector, JOINER);
                result.to("output", produced);
                break;
            }
            case "table-aggregate": {
                // Seed 000's KTable aggregate: re-key the table by a field of its value and count per group.
                KTable<String, String> table = table(builder, "left", Map.of(), false);
                String field = (String) scenario.get("group_by");
                String sum = sumField(scenario);
                org.apache.kafka.streams.kstream.KGroupedTable<String, String> grouped =
                    table.groupBy((key, value) -> KeyValue.pair(foreignKey(value, field), value),
                        Grouped.with(Serdes.String(), Serdes.String()));
                KTable<String, Long> aggregate = sum == null ? grouped.count()
                    : grouped.aggregate(() -> 0L, (key, value, agg) -> agg + number(value, sum),
                        (key, value, agg) -> agg - number(value, sum),
                        Materialized.with(Serdes.String(), Serdes.Long()));
                aggregate.toStream()
                    .mapValues(value -> value == null ? null : value.toString())
                    .to("output", produced);
                break;
            }
            case "window-aggregate": {
                finalResults(windowedAggregate(builder, "left", scenario), scenario)
                    .toStream()
                    .map((key, value) -> KeyValue.pair(windowKey(key), value == null ? null : value.toString()))
                    .to("output", produced);
                break;
            }
            case "wtable-wtable": {
                // Two windowed counts (WTables) joined on the same window: a table-table join of
                // KTable<Windowed<K>, Long>, the way today's Kafka ships the seed's WTable.
                Map<String, Object> window = map(scenario.get("window"));
                KTable<Windowed<String>, Long> left = windowedCount(builder, "left", window);
                KTable<Windowed<String>, Long> right = windowedCount(builder, "right", window);
                ValueJoiner<Long, Long, String> joiner = (l, r) -> l + "-" + r;
                KTable<Windowed<String>, String> result;
                switch (variant) {
                    case "inner": result = left.join(right, joiner); break;
                    case "left": result = left.leftJoin(right, joiner); break;
                    case "outer": result = left.outerJoin(right, joiner); break;
                    default: throw new IllegalArgumentException("variant " + variant);
                }
                result.toStream().map((key, value) -> KeyValue.pair(windowKey(key), value)).to("output", produced);
                break;
            }
            default:
                throw new IllegalArgumentException("join " + join + ": unknown");
        }
        return observed;
    }

    /** A windowed count of a topic: {@code TimeWindows.ofSizeAndGrace(size, grace).advanceBy(advance)}. */
    static KTable<Windowed<String>, Long> windowedCount(StreamsBuilder builder, String topic,
                                                       Map<String, Object> window) throws Exception {
        return windowedAggregate(builder, topic, window, null);
    }

    /** The scenario's {@code aggregate: {sum: field}}, or null for {@code count}. */
    static String sumField(Map<String, Object> scenario) {
        Object aggregate = scenario.get("aggregate");
        return aggregate instanceof Map ? (String) map(aggregate).get("sum") : null;
    }

    /** kjoin's sum_of: a numeric field of the JSON value, a missing (or null) one counting as 0. */
    static long number(String value, String field) {
        String found = value == null ? null : foreignKey(value, field);
        return found == null ? 0L : Long.parseLong(found);
    }

    /** A windowed count, or with {@code sum} a windowed sum of that field (initializer 0). */
    static KTable<Windowed<String>, Long> windowedAggregate(StreamsBuilder builder, String topic,
                                                           Map<String, Object> window, String sum)
        throws Exception {
        long size = ((Number) window.get("size_ms")).longValue();
        Object advance = window.get("advance_ms");
        Object grace = window.get("grace_ms");
        Duration graceMs = Duration.ofMillis(grace == null ? 0L : ((Number) grace).longValue());
        TimeWindows windows;
        if (atLeast(3, 0)) {
            windows = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), graceMs);
        } else {  // before 3.0: TimeWindows.of(size).grace(grace) (of is gone in 4.0)
            Method of = TimeWindows.class.getMethod("of", Duration.class);
            Method withGrace = TimeWindows.class.getMethod("grace", Duration.class);
            windows = (TimeWindows) withGrace.invoke(of.invoke(null, Duration.ofMillis(size)), graceMs);
        }
        if (advance != null) {
            windows = windows.advanceBy(Duration.ofMillis(((Number) advance).longValue()));
        }
        org.apache.kafka.streams.kstream.TimeWindowedKStream<String, String> windowed =
            builder.stream(topic, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(windows);
        return sum == null ? windowed.count()
            : windowed.aggregate(() -> 0L, (key, value, agg) -> agg + number(value, sum),
                Materialized.with(Serdes.String(), Serdes.Long()));
    }

    /** A windowed count or sum of the scenario's {@code window}: tumbling or hopping {@code TimeWindows}, session
     *  windows ({@code inactivity_gap_ms}) or sliding windows ({@code time_difference_ms}), with {@code emit: final}
     *  (emitStrategy(onWindowClose()), 3.3+). Windows through each version's API, by reflection: SessionWindows
     *  .with(gap).grace(grace) before 3.0, ofInactivityGapAndGrace after; SlidingWindows.withTimeDifferenceAndGrace
     *  before 3.0, ofTimeDifferenceAndGrace after. */
    @SuppressWarnings("unchecked")
    static KTable<Windowed<String>, Long> windowedAggregate(StreamsBuilder builder, String topic,
                                                           Map<String, Object> scenario) throws Exception {
        Map<String, Object> window = map(scenario.get("window"));
        String sum = sumField(scenario);
        boolean emitFinal = "final".equals(scenario.get("emit"));
        if (!window.containsKey("inactivity_gap_ms") && !window.containsKey("time_difference_ms") && !emitFinal) {
            return windowedAggregate(builder, topic, window, sum);
        }
        org.apache.kafka.streams.kstream.KGroupedStream<String, String> grouped =
            builder.stream(topic, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        long grace = window.get("grace_ms") == null ? 0L : ((Number) window.get("grace_ms")).longValue();
        Duration graceMs = Duration.ofMillis(grace);
        org.apache.kafka.streams.kstream.Initializer<Long> zero = () -> 0L;
        org.apache.kafka.streams.kstream.Aggregator<String, String, Long> adder =
            (key, value, agg) -> agg + (sum == null ? 1L : number(value, sum));
        Object emit = null;
        Class<?> emitClass = null;
        if (emitFinal) {
            emitClass = Class.forName("org.apache.kafka.streams.kstream.EmitStrategy");
            emit = emitClass.getMethod("onWindowClose").invoke(null);
        }
        if (window.containsKey("inactivity_gap_ms")) {
            Duration gap = Duration.ofMillis(((Number) window.get("inactivity_gap_ms")).longValue());
            org.apache.kafka.streams.kstream.SessionWindows windows;
            if (atLeast(3, 0)) {
                windows = org.apache.kafka.streams.kstream.SessionWindows.ofInactivityGapAndGrace(gap, graceMs);
            } else {
                Method with = org.apache.kafka.streams.kstream.SessionWindows.class.getMethod("with", Duration.class);
                Method withGrace = org.apache.kafka.streams.kstream.SessionWindows.class.getMethod("grace",
                    Duration.class);
                windows = (org.apache.kafka.streams.kstream.SessionWindows) withGrace.invoke(with.invoke(null, gap),
                    graceMs);
            }
            org.apache.kafka.streams.kstream.SessionWindowedKStream<String, String> windowed =
                grouped.windowedBy(windows);
            if (emit != null) {
                windowed = (org.apache.kafka.streams.kstream.SessionWindowedKStream<String, String>)
                    org.apache.kafka.streams.kstream.SessionWindowedKStream.class.getMethod("emitStrategy", emitClass)
                        .invoke(windowed, emit);
            }
            org.apache.kafka.streams.kstream.Merger<String, Long> merger = (key, one, two) -> one + two;
            return windowed.aggregate(zero, adder, merger, Materialized.with(Serdes.String(), Serdes.Long()));
        }
        if (window.containsKey("time_difference_ms")) {
            Duration difference = Duration.ofMillis(((Number) window.get("time_difference_ms")).longValue());
            Class<?> sliding = Class.forName("org.apache.kafka.streams.kstream.SlidingWindows");
            Object windows = atLeast(3, 0)
                ? sliding.getMethod("ofTimeDifferenceAndGrace", Duration.class, Duration.class)
                    .invoke(null, difference, graceMs)
                : sliding.getMethod("withTimeDifferenceAndGrace", Duration.class, Duration.class)
                    .invoke(null, difference, graceMs);
            Object windowed = org.apache.kafka.streams.kstream.KGroupedStream.class.getMethod("windowedBy", sliding)
                .invoke(grouped, windows);
            Class<?> windowedClass = org.apache.kafka.streams.kstream.TimeWindowedKStream.class;
            if (emit != null) {
                windowed = windowedClass.getMethod("emitStrategy", emitClass).invoke(windowed, emit);
            }
            return ((org.apache.kafka.streams.kstream.TimeWindowedKStream<String, String>) windowed)
                .aggregate(zero, adder, Materialized.with(Serdes.String(), Serdes.Long()));
        }
        long size = ((Number) window.get("size_ms")).longValue();
        TimeWindows windows = TimeWindows.ofSizeAndGrace(Duration.ofMillis(size), graceMs);
        if (window.get("advance_ms") != null) {
            windows = windows.advanceBy(Duration.ofMillis(((Number) window.get("advance_ms")).longValue()));
        }
        org.apache.kafka.streams.kstream.TimeWindowedKStream<String, String> windowed = grouped.windowedBy(windows);
        windowed = (org.apache.kafka.streams.kstream.TimeWindowedKStream<String, String>)
            org.apache.kafka.streams.kstream.TimeWindowedKStream.class.getMethod("emitStrategy", emitClass)
                .invoke(windowed, emit);
        return windowed.aggregate(zero, adder, Materialized.with(Serdes.String(), Serdes.Long()));
    }

    /** {@code suppress: until-window-closes}: {@code .suppress(Suppressed.untilWindowCloses(unbounded()))}. */
    static KTable<Windowed<String>, Long> finalResults(KTable<Windowed<String>, Long> aggregate,
                                                       Map<String, Object> scenario) {
        if (!"until-window-closes".equals(scenario.get("suppress"))) {
            return aggregate;
        }
        return aggregate.suppress(org.apache.kafka.streams.kstream.Suppressed.untilWindowCloses(
            org.apache.kafka.streams.kstream.Suppressed.BufferConfig.unbounded()));
    }

    /** A windowed key as one string for the output topic: the JSON {@code [key, start_ms, end_ms]}. */
    static String windowKey(Windowed<String> key) {
        List<Object> parts = new ArrayList<>();
        parts.add(key.key());
        parts.add(key.window().start());
        parts.add(key.window().end());
        return Json.write(parts);
    }

    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> resultStore(boolean cached) {
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> store =
            (IN_MEMORY ? Materialized.<String, String>as(Stores.inMemoryKeyValueStore("result-store"))
                : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("result-store"))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
        return cached ? store.withCachingEnabled() : store.withCachingDisabled();
    }

    /** The foreign key: a field path ("a.b") into the left value's JSON; null when a field on the way is null. */
    @SuppressWarnings("unchecked")
    static String foreignKey(String value, String path) {
        Object node = Json.parse(value);
        for (String part : path.split("\\.")) {
            if (!(node instanceof Map)) {
                return null;
            }
            node = ((Map<String, Object>) node).get(part);
            if (node == null) {
                return null;
            }
        }
        return node instanceof String ? (String) node : Json.write(node);
    }

    /** A GlobalKTable join's key selector: the field at {@code path} of the stream value's JSON; null for a null
     *  value, a value that is no JSON object, or a missing or null field on the way (Kafka calls the selector with
     *  a null value too, from 2.7). */
    static String selectedKey(String value, String path) {
        if (value == null) {
            return null;
        }
        try {
            return foreignKey(value, path);
        } catch (RuntimeException notJson) {
            return null;
        }
    }

    static KTable<String, String> table(StreamsBuilder builder, String topic, Map<String, Object> options,
                                        boolean cached) {
        Consumed<String, String> consumed = Consumed.with(Serdes.String(), Serdes.String());
        if (flag(options, "versioned")) {
            long retention = ((Number) options.get("history_retention_ms")).longValue();
            return builder.table(topic, consumed, Materialized.<String, String>as(
                Stores.persistentVersionedKeyValueStore(topic + "-store", Duration.ofMillis(retention)))
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        }
        String named = options.get("store") != null ? (String) options.get("store") : topic + "-store";
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> store =
            (IN_MEMORY ? Materialized.<String, String>as(Stores.inMemoryKeyValueStore(named))
                : Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(named))
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
        return builder.table(topic, consumed, cached ? store.withCachingEnabled() : store.withCachingDisabled());
    }

    static KTable<String, String> tableTable(KTable<String, String> left, KTable<String, String> right, String variant,
                                             Materialized<String, String, KeyValueStore<Bytes, byte[]>> store) {
        switch (variant) {
            case "inner": return store == null ? left.join(right, JOINER) : left.join(right, JOINER, store);
            case "left": return store == null ? left.leftJoin(right, JOINER) : left.leftJoin(right, JOINER, store);
            case "outer": return store == null ? left.outerJoin(right, JOINER) : left.outerJoin(right, JOINER, store);
            default: throw new IllegalArgumentException("variant " + variant);
        }
    }

    static KStream<String, String> streamStream(KStream<String, String> left, KStream<String, String> right,
                                                String variant,
                                                Map<String, Object> window) throws Exception {
        JoinWindows windows = joinWindows(window);
        // Kafka's default window stores (RocksDB), always: an in-memory window store forgets differently (a null
        // value put into it advances its observed time and expires older records; RocksDB's segments keep them).
        StreamJoined<String, String, String> joined =
            StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
        switch (variant) {
            case "inner": return left.join(right, JOINER, windows, joined);
            case "left": return left.leftJoin(right, JOINER, windows, joined);
            case "outer": return left.outerJoin(right, JOINER, windows, joined);
            default: throw new IllegalArgumentException("variant " + variant);
        }
    }

    /** JoinWindows through the API of this version: ofTimeDifferenceAndGrace (3.1+; 3.0 shipped without it, KIP-633's
     *  JoinWindows part was reverted with KAFKA-10847) for a grace, the deprecated JoinWindows.of for grace_ms null,
     *  and JoinWindows.of(..).grace(..) before 3.1. Every version has JoinWindows.of: 4.0 kept it (KAFKA-16332), the
     *  only way to switch the spurious-result fix off (KAFKA-13813). */
    static JoinWindows joinWindows(Map<String, Object> window) throws Exception {
        long before = ((Number) window.get("before_ms")).longValue();
        long after = ((Number) window.get("after_ms")).longValue();
        Object grace = window.get("grace_ms");
        Boolean fix = (Boolean) window.get("spurious_result_fix");
        long difference = Math.max(before, after);
        JoinWindows windows;
        if (grace != null && atLeast(3, 1) && !Boolean.FALSE.equals(fix)) {
            windows = JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(difference),
                Duration.ofMillis(((Number) grace).longValue()));
        } else {
            Method of = JoinWindows.class.getMethod("of", Duration.class);
            windows = (JoinWindows) of.invoke(null, Duration.ofMillis(difference));
            if (grace != null) {
                Method withGrace = JoinWindows.class.getMethod("grace", Duration.class);
                windows = (JoinWindows) withGrace.invoke(windows, Duration.ofMillis(((Number) grace).longValue()));
            }
        }
        return windows.before(Duration.ofMillis(before)).after(Duration.ofMillis(after));
    }

}
