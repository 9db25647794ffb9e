package kjoin.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyDescription;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;

/**
 * kjoin's topologies (kjoin/topology/, issue 30) judged by Kafka Streams: reads topology documents (one JSON object a
 * line, as {@code kjoin.topology.document} writes them, plus {@code id} and {@code outputs}: the output topics), builds
 * the topology with the DSL (a selectKey followed by a join makes Kafka add its own repartition topic), pipes every
 * event through TopologyTestDriver and answers one JSON line per document:
 * {@code {"id": .., "outputs": [[[topic, key, value, ts], ...] per event], "describe": {...}}} or {@code {"id": ..,
 * "error": ".."}}. {@code describe} counts what {@code Topology.describe()} lists: sub-topologies, repartition topics
 * and foreign-key topics, so that kjoin's split into sub-topologies is judged too. A document with
 * {@code "describe_text": true} also gets the text {@code Topology.describe()} prints ({@code describe_text}), which
 * kjoin's {@code Topology.from_describe} is judged on (tests/describe_cases.py).
 *
 * <p>The functions a document names (select_key {field|map|value}, map_values {append|field}, filter {key_in|key_not_in|
 * value_not_null}: a key by its text, a windowed table's {@code [key@start/end]}, flat_map_values and flat_map {split,
 * lower}, joiner concat|object) are implemented here as kjoin.topology.functions implements them. Only the
 * harness's helpers of {@link Oracle} are reused (joinWindows, table, foreignKey, text, driverProperties).
 *
 * <p>TopologyTestDriver runs one task with one partition per topic, and processes a record written to an internal
 * topic at once (depth-first): kjoin's {@code schedule: test-driver}.
 */
public final class TopologyOracle {
    private TopologyOracle() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        int threads = args.length > 1 && args[0].equals("--threads") ? Integer.parseInt(args[1]) : 1;
        // on the RAM disk where there is one, removed when the JVM exits (StateDirs)
        Path stateDir = StateDirs.create("kjoin-topology-oracle-");
        // Documents are answered as they arrive, in the order read, each answer flushed once no earlier one is
        // pending: one JVM (its start and its warmed-up code) serves batch after batch of a caller that keeps it
        // open (kafka_oracle/topology_oracle.py's Harness), and a caller that writes everything and closes stdin gets the
        // same lines. The answers go out on a thread of their own, so reading never waits for writing.
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        java.util.concurrent.BlockingQueue<java.util.Optional<java.util.concurrent.Future<String>>> pending =
            new java.util.concurrent.LinkedBlockingQueue<>();
        Thread writer = new Thread(() -> {
            try {
                for (java.util.Optional<java.util.concurrent.Future<String>> next = pending.take(); next.isPresent();
                        next = pending.take()) {
                    out.println(next.get().get());
                    if (pending.isEmpty() || !pending.peek().map(java.util.concurrent.Future::isDone).orElse(false)) {
                        out.flush();
                    }
                }
                out.flush();
            } catch (InterruptedException | java.util.concurrent.ExecutionException error) {
                throw new IllegalStateException(error);
            }
        }, "answers");
        writer.start();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            int count = 0;
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (line.isBlank()) {
                    continue;
                }
                String document = line;
                Path dir = stateDir.resolve("t" + count++);
                pending.put(java.util.Optional.of(pool.submit(() -> answer(document, dir))));
            }
        }
        pending.put(java.util.Optional.empty());
        writer.join();
        pool.shutdown();
    }

    static String answer(String line, Path stateDir) {
        Map<String, Object> result = new LinkedHashMap<>();
        Object id = null;
        try {
            @SuppressWarnings("unchecked")
            Map<String, Object> document = (Map<String, Object>) Json.parse(line);
            id = document.get("id");
            result.put("id", id);
            run(document, stateDir, result);
        } catch (Exception | LinkageError | AssertionError error) {
            StringBuilder message = new StringBuilder();
            for (Throwable cause = error; cause != null; cause = cause.getCause()) {
                message.append(message.length() == 0 ? "" : " <- ").append(cause.getClass().getSimpleName())
                    .append(": ").append(cause.getMessage());
                if (cause.getCause() == null && cause.getStackTrace().length > 0) {
                    message.append(" at ").append(cause.getStackTrace()[0]);
                }
            }
            Object failedAt = result.get("failed_at");
            Object before = result.get("outputs");
            result.clear();
            result.put("id", id);
            result.put("error", message.toString());
            if (failedAt != null) {
                result.put("failed_at", failedAt);
                result.put("outputs", before);
            }
        }
        return Json.write(result);
    }

    /** The document's application_id (it prefixes internal topics' names), else the harness's own. */
    static String applicationId(Map<String, Object> document) {
        Object id = document.get("application_id");
        return id == null ? "kjoin-topology-oracle" : (String) id;
    }

    @SuppressWarnings("unchecked")
    static void run(Map<String, Object> document, Path stateDir, Map<String, Object> result) throws Exception {
        List<Object> nodes = (List<Object>) document.get("topology");
        boolean windowed = false;
        for (Object item : nodes) {
            Map<String, Object> node = Oracle.map(item);
            if (node.get("window") != null || node.get("windowed_by") != null) {
                windowed = true;
            }
        }
        Properties props = Oracle.driverProperties(applicationId(document), stateDir);
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        // Emit-final windowed aggregates (KIP-825) look for closed windows at most once per emit interval of wall-clock
        // time, which TopologyTestDriver does not move: 0 looks after every record, as kjoin does
        props.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        props.put(Oracle.cacheConfig(), 0L);
        // In-memory key-value stores where the version has the setting (3.2+), unless a stream-stream join needs
        // Kafka's default (RocksDB) window stores (see Oracle.run).
        if (Oracle.IN_MEMORY && !windowed) {
            props.put("default.dsl.store", "in_memory");
            props.put("dsl.store.suppliers.class",
                "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers");
        }
        // The processing exception handler (KIP-1033, 3.9), its dead-letter queue (KIP-1034, 4.2) and its global
        // switch (KIP-1270, 4.3), by their config names: kjoin refuses them on the versions without them.
        if ("continue".equals(document.get("processing_exception_handler"))) {
            props.put("processing.exception.handler",
                "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler");
        }
        if (document.get("dead_letter_queue") != null) {
            props.put("errors.dead.letter.queue.topic.name", document.get("dead_letter_queue"));
        }
        if (Boolean.TRUE.equals(document.get("global_processing_exception_handler"))) {
            props.put("processing.exception.handler.global.enabled", true);
        }
        StreamsBuilder builder = Oracle.atLeast(3, 2)
            ? new StreamsBuilder(new org.apache.kafka.streams.TopologyConfig(new org.apache.kafka.streams.StreamsConfig(props)))
            : new StreamsBuilder();
        List<String> inputs = new ArrayList<>();
        build(builder, nodes, inputs, windowed);
        Topology topology = builder.build(props);
        result.put("describe", describe(topology.describe()));
        if (Boolean.TRUE.equals(document.get("describe_text"))) {  // Topology.from_describe's fixtures (issue 30)
            result.put("describe_text", topology.describe().toString());
        }

        List<String> outputTopics = new ArrayList<>((List<String>) (List<?>) document.get("outputs"));
        List<List<List<Object>>> outputs = new ArrayList<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology, props)) {
            Map<String, TestInputTopic<String, String>> in = new HashMap<>();
            for (String topic : inputs) {
                in.put(topic, driver.createInputTopic(topic, new StringSerializer(), new StringSerializer()));
            }
            Map<String, TestOutputTopic<String, String>> out = new TreeMap<>();
            for (String topic : outputTopics) {
                out.put(topic, driver.createOutputTopic(topic, new StringDeserializer(), new StringDeserializer()));
            }
            for (Object item : (List<Object>) document.get("events")) {
                Map<String, Object> event = Oracle.map(item);
                TestInputTopic<String, String> topic = in.get((String) event.get("topic"));
                long ts = ((Number) event.get("ts")).longValue();
                try {
                    topic.pipeInput(Oracle.text(event.get("key")), Oracle.text(event.get("value")), ts);
                } catch (RuntimeException failed) {  // the task failed: which event, and what came before it
                    result.put("failed_at", outputs.size());
                    result.put("outputs", outputs);
                    throw failed;
                }
                List<List<Object>> emitted = new ArrayList<>();
                for (Map.Entry<String, TestOutputTopic<String, String>> entry : out.entrySet()) {
                    for (TestRecord<String, String> record : entry.getValue().readRecordsToList()) {
                        List<Object> row = new ArrayList<>();
                        row.add(entry.getKey());
                        row.add(record.key());
                        row.add(record.value());
                        row.add(record.timestamp());
                        if (record.headers() != null && record.headers().toArray().length > 0) {
                            row.add(headers(record.headers(), applicationId(document)));
                        }
                        emitted.add(row);
                    }
                }
                outputs.add(emitted);
            }
        }
        result.put("outputs", outputs);
    }

    /** A record's headers as [name, text] pairs; a dead-letter record's stack trace cut to its first line (the
     *  exception's toString: kjoin has no JVM frames) and its source topic without the application id that
     *  prefixes an internal topic. */
    static List<List<Object>> headers(org.apache.kafka.common.header.Headers headers, String applicationId) {
        List<List<Object>> found = new ArrayList<>();
        for (org.apache.kafka.common.header.Header header : headers.toArray()) {
            String text = header.value() == null ? null : new String(header.value(), StandardCharsets.UTF_8);
            if (text != null && header.key().equals("__streams.errors.stacktrace")) {
                text = text.split("\\R", 2)[0];
            }
            if (text != null && header.key().equals("__streams.errors.topic")
                    && text.startsWith(applicationId + "-")) {
                text = text.substring(applicationId.length() + 1);
            }
            List<Object> pair = new ArrayList<>();
            pair.add(header.key());
            pair.add(text);
            found.add(pair);
        }
        return found;
    }

    /** Sub-topologies, and the internal topics their sources read, as Topology.describe() lists them. */
    static Map<String, Object> describe(TopologyDescription description) {
        int repartition = 0;
        int foreignKey = 0;
        TreeSet<String> seen = new TreeSet<>();
        for (TopologyDescription.Subtopology sub : description.subtopologies()) {
            for (TopologyDescription.Node node : sub.nodes()) {
                if (node instanceof TopologyDescription.Source) {
                    java.util.Set<String> topics = ((TopologyDescription.Source) node).topicSet();
                    if (topics == null) {
                        continue;
                    }
                    for (String topic : topics) {
                        if (!seen.add(topic)) {
                            continue;
                        }
                        if (topic.endsWith("-repartition")) {
                            repartition++;
                        } else if (topic.contains("SUBSCRIPTION-REGISTRATION") || topic.contains("SUBSCRIPTION-RESPONSE")) {
                            foreignKey++;
                        }
                    }
                }
            }
        }
        Map<String, Object> counts = new LinkedHashMap<>();
        counts.put("subtopologies", description.subtopologies().size());
        counts.put("repartition_topics", repartition);
        counts.put("fk_topics", foreignKey);
        return counts;
    }

    @SuppressWarnings("unchecked")
    static void build(StreamsBuilder builder, List<Object> nodes, List<String> inputs, boolean windowed)
        throws Exception {
        Consumed<String, String> consumed = Consumed.with(Serdes.String(), Serdes.String());
        Produced<String, String> produced = Produced.with(Serdes.String(), Serdes.String());
        Map<String, Object> handles = new HashMap<>();
        // The results of windowed aggregates, each with the serde of its Windowed keys (a view's store is given it):
        // only their keys need a map to text before a sink, so every other topology's describe() is what the
        // application alone prints (tests/describe_cases.py).
        Map<String, org.apache.kafka.common.serialization.Serde<?>> windowedKeys = new HashMap<>();
        Map<String, org.apache.kafka.common.serialization.Serde<?>> windowSerdes = new HashMap<>();  // windowedBy's
        for (Object item : nodes) {
            Map<String, Object> node = Oracle.map(item);
            String name = (String) node.get("name");
            if (windowedKeys.containsKey((String) node.get("input"))) {  // toStream, filter, ... keep the Windowed key
                windowedKeys.put(name, windowedKeys.get((String) node.get("input")));
            }
            if (node.containsKey("stream")) {
                String topic = (String) node.get("stream");
                inputs.add(topic);
                handles.put(name, builder.stream(topic, consumed));
            } else if (node.containsKey("table")) {
                String topic = (String) node.get("table");
                inputs.add(topic);
                Map<String, Object> options = new HashMap<>();
                if (node.get("history_retention_ms") != null) {
                    options.put("versioned", true);
                    options.put("history_retention_ms", node.get("history_retention_ms"));
                }
                if (node.get("store") != null) {  // Materialized.as(store)
                    options.put("store", node.get("store"));
                }
                if (Boolean.FALSE.equals(node.get("materialized"))) {  // builder.table without Materialized
                    handles.put(name, builder.table(topic, consumed));
                } else {
                    handles.put(name, Oracle.table(builder, topic, options, false));
                }
            } else if (node.containsKey("filter")) {
                Map<String, Object> spec = Oracle.map(node.get("filter"));
                Object parent = handles.get((String) node.get("input"));
                if (parent instanceof KTable) {  // KTableFilter: a row that fails is a tombstone downstream
                    KTable<Object, String> table = (KTable<Object, String>) parent;
                    Materialized<Object, String, KeyValueStore<Bytes, byte[]>> view = view(node, windowedKeys);
                    handles.put(name, view != null ? table.filter((key, value) -> keep(spec, key, value), view)
                        : table.filter((key, value) -> keep(spec, key, value)));
                } else {
                    handles.put(name, ((KStream<Object, String>) parent).filter((key, value) -> keep(spec, key, value)));
                }
            } else if (node.containsKey("map_values")) {
                Map<String, Object> spec = Oracle.map(node.get("map_values"));
                Object parent = handles.get((String) node.get("input"));
                if (parent instanceof KTable) {  // KTableMapValues: a null row stays null, the mapper unseen
                    KTable<Object, String> table = (KTable<Object, String>) parent;
                    Materialized<Object, String, KeyValueStore<Bytes, byte[]>> view = view(node, windowedKeys);
                    handles.put(name, view != null ? table.mapValues(value -> mapValue(spec, value), view)
                        : table.mapValues(value -> mapValue(spec, value)));
                } else {
                    handles.put(name, ((KStream<String, String>) parent).mapValues(value -> mapValue(spec, value)));
                }
            } else if (node.containsKey("flat_map_values")) {
                Map<String, Object> spec = Oracle.map(node.get("flat_map_values"));
                KStream<String, String> stream = (KStream<String, String>) handles.get((String) node.get("input"));
                handles.put(name, stream.flatMapValues(value -> words(spec, value)));
            } else if (node.containsKey("flat_map")) {
                Map<String, Object> spec = Oracle.map(node.get("flat_map"));
                KStream<String, String> stream = (KStream<String, String>) handles.get((String) node.get("input"));
                handles.put(name, stream.flatMap((key, value) -> {
                    List<KeyValue<String, String>> pairs = new ArrayList<>();
                    for (String word : words(spec, value)) {
                        pairs.add(KeyValue.pair(word, word));
                    }
                    return pairs;
                }));
            } else if (node.containsKey("select_key")) {
                Map<String, Object> spec = Oracle.map(node.get("select_key"));
                if (spec.containsKey("window_key")) {  // a windowed key's own key (Windowed.key())
                    windowedKeys.remove(name);
                    handles.put(name, ((KStream<Object, String>) handles.get((String) node.get("input")))
                        .selectKey((key, value) -> key instanceof Windowed ? (String) ((Windowed<?>) key).key()
                            : (String) key));
                    continue;
                }
                KStream<String, String> stream = (KStream<String, String>) handles.get((String) node.get("input"));
                handles.put(name, stream.selectKey((key, value) -> selectKey(spec, key, value)));
            } else if (node.containsKey("to_stream")) {
                KTable<String, String> table = (KTable<String, String>) handles.get((String) node.get("input"));
                if (node.get("to_stream") instanceof Map) {  // toStream(KeyValueMapper): toStream().selectKey(..)
                    Map<String, Object> spec = Oracle.map(node.get("to_stream"));
                    handles.put(name, table.toStream((key, value) -> selectKey(spec, key, value)));
                } else {
                    handles.put(name, table.toStream());
                }
            } else if (node.containsKey("filter_not")) {
                Map<String, Object> spec = Oracle.map(node.get("filter_not"));
                Object parent = handles.get((String) node.get("input"));
                if (parent instanceof KTable) {  // KTableFilter with filterNot: the predicate negated
                    KTable<Object, String> table = (KTable<Object, String>) parent;
                    Materialized<Object, String, KeyValueStore<Bytes, byte[]>> view = view(node, windowedKeys);
                    handles.put(name, view != null ? table.filterNot((key, value) -> keep(spec, key, value), view)
                        : table.filterNot((key, value) -> keep(spec, key, value)));
                } else {
                    handles.put(name, ((KStream<Object, String>) parent)
                        .filterNot((key, value) -> keep(spec, key, value)));
                }
            } else if (node.containsKey("peek")) {
                handles.put(name, ((KStream<String, String>) handles.get((String) node.get("input")))
                    .peek((key, value) -> { }));
            } else if (node.containsKey("split")) {  // KIP-418: branches named <split name><branch name>
                handles.putAll(Branching.split((KStream<String, String>) handles.get((String) node.get("input")),
                    name, (List<Object>) node.get("split")));
            } else if (node.containsKey("branch")) {  // the legacy branch(Named, Predicate...), gone in 4.0
                handles.putAll(Branching.legacyBranch((KStream<String, String>) handles.get((String) node.get("input")),
                    name, (List<Object>) node.get("branch")));
            } else if (node.containsKey("process_values")) {
                handles.put(name, Processors.processValues(builder,
                    (KStream<String, String>) handles.get((String) node.get("input")), node));
            } else if (node.containsKey("process")) {
                handles.put(name, Processors.process(builder,
                    (KStream<String, String>) handles.get((String) node.get("input")), node));
            } else if (node.containsKey("to")) {
                Object parent = handles.get((String) node.get("input"));
                KStream<Object, Object> stream = parent instanceof KTable
                    ? ((KTable<Object, Object>) parent).toStream() : (KStream<Object, Object>) parent;
                KStream<?, ?> out = windowedKeys.containsKey((String) node.get("input"))  // a Windowed key: its text
                    ? stream.map((key, value) -> KeyValue.pair(keyText(key), value)) : stream;
                ((KStream<String, String>) out).to((String) node.get("to"), produced);
            } else if (node.containsKey("global_table")) {
                String topic = (String) node.get("global_table");
                inputs.add(topic);
                handles.put(name, builder.globalTable(topic, consumed));
            } else if (node.containsKey("merge")) {
                List<Object> sides = (List<Object>) node.get("merge");
                KStream<String, String> left = (KStream<String, String>) handles.get((String) sides.get(0));
                handles.put(name, left.merge((KStream<String, String>) handles.get((String) sides.get(1))));
            } else if (node.containsKey("repartition")) {  // KStream.repartition (2.6+, KIP-221)
                org.apache.kafka.streams.kstream.Repartitioned<String, String> repartitioned =
                    Naming.repartitioned(node);
                if (node.get("partitions") != null) {
                    repartitioned = repartitioned.withNumberOfPartitions(((Number) node.get("partitions")).intValue());
                }
                handles.put(name, ((KStream<String, String>) handles.get((String) node.get("input")))
                    .repartition(repartitioned));
            } else if (node.containsKey("through")) {  // KStream.through (gone in 4.0): to(topic), then stream(topic)
                String topic = (String) node.get("through");
                ((KStream<String, String>) handles.get((String) node.get("input"))).to(topic, produced);
                handles.put(name, builder.stream(topic, consumed));
            } else if (node.containsKey("to_table")) {
                handles.put(name, ((KStream<String, String>) handles.get((String) node.get("input"))).toTable());
            } else if (node.containsKey("group_by_key")) {
                handles.put(name, ((KStream<String, String>) handles.get((String) node.get("input")))
                    .groupByKey(Naming.grouped(node)));
            } else if (node.containsKey("group_by")) {
                Map<String, Object> spec = Oracle.map(node.get("group_by"));
                Object parent = handles.get((String) node.get("input"));
                Grouped<String, String> grouped = Naming.grouped(node);
                if (parent instanceof KTable && spec.containsKey("window_key")) {  // a Windowed key: Windowed.key()
                    windowedKeys.remove(name);
                    handles.put(name, ((KTable<Object, String>) parent).groupBy((key, value) -> KeyValue.pair(
                        key instanceof Windowed ? (String) ((Windowed<?>) key).key() : (String) key, value), grouped));
                } else if (parent instanceof KTable) {
                    String path = (String) spec.get("field");
                    handles.put(name, ((KTable<String, String>) parent)
                        .groupBy((key, value) -> KeyValue.pair(field(value, path), value), grouped));
                } else {
                    handles.put(name, ((KStream<String, String>) parent)
                        .groupBy((key, value) -> selectKey(spec, key, value), grouped));
                }
            } else if (node.containsKey("windowed_by")) {
                Object byWindow = windowedBy((KGroupedStream<String, String>) handles.get((String) node.get("input")),
                    Oracle.map(node.get("windowed_by")));
                handles.put(name, "on_window_close".equals(node.get("emit_strategy")) ? onWindowClose(byWindow)
                    : byWindow);
                windowSerdes.put(name, windowedSerde(Oracle.map(node.get("windowed_by"))));
            } else if (node.containsKey("cogroup")) {  // KIP-150: each grouped stream adds agg+value into one store
                List<Object> grouped = (List<Object>) node.get("cogroup");
                org.apache.kafka.streams.kstream.CogroupedKStream<String, String> cogrouped =
                    ((KGroupedStream<String, String>) handles.get((String) grouped.get(0)))
                        .cogroup((key, value, agg) -> agg + "+" + value);
                for (Object input : grouped.subList(1, grouped.size())) {
                    cogrouped = cogrouped.cogroup((KGroupedStream<String, String>) handles.get((String) input),
                        (key, value, agg) -> agg + "+" + value);
                }
                handles.put(name, cogrouped.aggregate(() -> "",
                    (Materialized) Naming.materialized(node, Serdes.String())));
            } else if (node.containsKey("suppress")) {  // KTable#suppress (KIP-328)
                KTable<Object, Object> table = (KTable<Object, Object>) handles.get((String) node.get("input"));
                handles.put(name, table.suppress(suppressed(Oracle.map(node.get("suppress")))));
            } else if (node.containsKey("count") || node.containsKey("reduce") || node.containsKey("aggregate")) {
                Object grouped = handles.get((String) node.get("input"));
                if (grouped instanceof TimeWindowedKStream
                    || grouped instanceof org.apache.kafka.streams.kstream.SessionWindowedKStream) {
                    windowedKeys.put(name, windowSerdes.get((String) node.get("input")));
                }
                handles.put(name, aggregate(grouped, node));
            } else {
                String variant = node.containsKey("join") ? "inner" : node.containsKey("left_join") ? "left" : "outer";
                List<Object> sides = (List<Object>) node.get(variant.equals("inner") ? "join"
                    : variant.equals("left") ? "left_join" : "outer_join");
                Object left = handles.get((String) sides.get(0));
                Object right = handles.get((String) sides.get(1));
                boolean windowedSides = windowedKeys.containsKey((String) sides.get(0));
                if (windowedSides) {  // two windowed tables join by Windowed<K>
                    windowedKeys.put(name, windowedKeys.get((String) sides.get(0)));
                }
                ValueJoiner<String, String, String> joiner = joiner(node.get("joiner"));
                handles.put(name, join(left, right, variant, joiner, node, windowedSides));
            }
        }
    }

    /** emitStrategy(EmitStrategy.onWindowClose()) (KIP-825, 3.3+) on time, sliding or session windows, by
     *  reflection: the class is missing before 3.3. */
    static Object onWindowClose(Object windowed) throws Exception {
        Class<?> emitClass = Class.forName("org.apache.kafka.streams.kstream.EmitStrategy");
        Object emit = emitClass.getMethod("onWindowClose").invoke(null);
        Class<?> handle = windowed instanceof org.apache.kafka.streams.kstream.SessionWindowedKStream
            ? org.apache.kafka.streams.kstream.SessionWindowedKStream.class : TimeWindowedKStream.class;
        return handle.getMethod("emitStrategy", emitClass).invoke(windowed, emit);
    }

    /** kjoin's {until, time_limit_ms, max_records, max_bytes, when_full} as Suppressed: untilWindowCloses with a
     *  strict buffer (unbounded, or maxRecords(n) and/or maxBytes(b), shutDownWhenFull()), untilTimeLimit with such a
     *  buffer (emitEarlyWhenFull unless when_full is shut_down) or unbounded. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static org.apache.kafka.streams.kstream.Suppressed<Object> suppressed(Map<String, Object> spec) {
        Number records = (Number) spec.get("max_records");
        Number bytes = (Number) spec.get("max_bytes");
        boolean shutDown = "shut_down".equals(spec.get("when_full"));
        org.apache.kafka.streams.kstream.Suppressed.EagerBufferConfig eager = null;
        if (records != null) {
            eager = org.apache.kafka.streams.kstream.Suppressed.BufferConfig.maxRecords(records.longValue());
            if (bytes != null) {
                eager = eager.withMaxBytes(bytes.longValue());
            }
        } else if (bytes != null) {
            eager = org.apache.kafka.streams.kstream.Suppressed.BufferConfig.maxBytes(bytes.longValue());
        }
        if ("time_limit".equals(spec.get("until"))) {
            java.time.Duration limit = java.time.Duration.ofMillis(((Number) spec.get("time_limit_ms")).longValue());
            org.apache.kafka.streams.kstream.Suppressed.BufferConfig buffer = eager == null
                ? org.apache.kafka.streams.kstream.Suppressed.BufferConfig.unbounded()
                : shutDown ? eager.shutDownWhenFull()
                : eager;
            return org.apache.kafka.streams.kstream.Suppressed.untilTimeLimit(limit, buffer);
        }
        org.apache.kafka.streams.kstream.Suppressed.StrictBufferConfig strict = eager == null
            ? org.apache.kafka.streams.kstream.Suppressed.BufferConfig.unbounded()
            : eager.shutDownWhenFull();
        return (org.apache.kafka.streams.kstream.Suppressed) org.apache.kafka.streams.kstream.Suppressed
            .untilWindowCloses(strict);
    }

    /** A key as text: a windowed aggregate's {@code [key@start/end]} (Windowed.toString), any other as it is. */
    static String keyText(Object key) {
        if (key instanceof Windowed) {
            Windowed<?> windowed = (Windowed<?>) key;
            return "[" + windowed.key() + "@" + windowed.window().start() + "/" + windowed.window().end() + "]";
        }
        return key == null ? null : String.valueOf(key);
    }

    /** Tumbling or hopping windows, through each version's API (TimeWindows.of(size).grace(grace) before 3.0). */
    static TimeWindows timeWindows(Map<String, Object> window) throws Exception {
        long size = ((Number) window.get("size_ms")).longValue();
        Object advance = window.get("advance_ms");
        Object grace = window.get("grace_ms");
        java.time.Duration graceMs = java.time.Duration.ofMillis(grace == null ? 0L : ((Number) grace).longValue());
        TimeWindows windows;
        if (Oracle.atLeast(3, 0)) {
            windows = TimeWindows.ofSizeAndGrace(java.time.Duration.ofMillis(size), graceMs);
        } else {
            java.lang.reflect.Method of = TimeWindows.class.getMethod("of", java.time.Duration.class);
            java.lang.reflect.Method withGrace = TimeWindows.class.getMethod("grace", java.time.Duration.class);
            windows = (TimeWindows) withGrace.invoke(of.invoke(null, java.time.Duration.ofMillis(size)), graceMs);
        }
        if (advance != null) {
            windows = windows.advanceBy(java.time.Duration.ofMillis(((Number) advance).longValue()));
        }
        return windows;
    }

    /** Tumbling or hopping, session ({@code inactivity_gap_ms}) or sliding ({@code time_difference_ms}) windows,
     *  through each version's API (by reflection where a method is gone or not yet there). */
    static Object windowedBy(KGroupedStream<String, String> grouped, Map<String, Object> window) throws Exception {
        java.time.Duration grace = java.time.Duration.ofMillis(
            window.get("grace_ms") == null ? 0L : ((Number) window.get("grace_ms")).longValue());
        if (window.containsKey("inactivity_gap_ms")) {
            java.time.Duration gap = java.time.Duration.ofMillis(((Number) window.get("inactivity_gap_ms")).longValue());
            Class<org.apache.kafka.streams.kstream.SessionWindows> session = org.apache.kafka.streams.kstream.SessionWindows.class;
            org.apache.kafka.streams.kstream.SessionWindows windows = Oracle.atLeast(3, 0)
                ? org.apache.kafka.streams.kstream.SessionWindows.ofInactivityGapAndGrace(gap, grace)
                : (org.apache.kafka.streams.kstream.SessionWindows) session.getMethod("grace", java.time.Duration.class)
                    .invoke(session.getMethod("with", java.time.Duration.class).invoke(null, gap), grace);
            return grouped.windowedBy(windows);
        }
        if (window.containsKey("time_difference_ms")) {
            java.time.Duration difference =
                java.time.Duration.ofMillis(((Number) window.get("time_difference_ms")).longValue());
            Class<?> sliding = Class.forName("org.apache.kafka.streams.kstream.SlidingWindows");
            Object windows = Oracle.atLeast(3, 0)
                ? sliding.getMethod("ofTimeDifferenceAndGrace", java.time.Duration.class, java.time.Duration.class)
                    .invoke(null, difference, grace)
                : sliding.getMethod("withTimeDifferenceAndGrace", java.time.Duration.class, java.time.Duration.class)
                    .invoke(null, difference, grace);
            return KGroupedStream.class.getMethod("windowedBy", sliding).invoke(grouped, windows);
        }
        return grouped.windowedBy(timeWindows(window));
    }

    /** kjoin's aggregations: count (its Long as text), reduce concat (agg+value, subtractor agg-value), aggregate
     *  concat (initializer "", then the same adder and subtractor). The result is a KTable of text values. */
    @SuppressWarnings("unchecked")
    static Object aggregate(Object grouped, Map<String, Object> node) {
        Materialized<String, String, ?> text = Naming.materialized(node, Serdes.String());
        Materialized<String, Long, ?> counts = Naming.materialized(node, Serdes.Long());
        if (grouped instanceof KGroupedTable) {
            KGroupedTable<String, String> table = (KGroupedTable<String, String>) grouped;
            if (node.containsKey("count")) {
                return table.count((Materialized) counts).mapValues(value -> String.valueOf(value));
            }
            if (node.containsKey("reduce")) {
                return table.reduce((agg, value) -> agg + "+" + value, (agg, value) -> agg + "-" + value,
                    (Materialized) text);
            }
            return table.aggregate(() -> "", (key, value, agg) -> agg + "+" + value,
                (key, value, agg) -> agg + "-" + value, (Materialized) text);
        }
        if (grouped instanceof org.apache.kafka.streams.kstream.SessionWindowedKStream) {
            org.apache.kafka.streams.kstream.SessionWindowedKStream<String, String> sessions =
                (org.apache.kafka.streams.kstream.SessionWindowedKStream<String, String>) grouped;
            if (node.containsKey("count")) {
                return sessions.count((Materialized) counts).mapValues(value -> String.valueOf(value));
            }
            if (node.containsKey("reduce")) {
                return sessions.reduce((agg, value) -> agg + "+" + value, (Materialized) text);
            }
            return sessions.aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (key, one, two) -> one + two,
                (Materialized) text);
        }
        if (grouped instanceof TimeWindowedKStream) {
            TimeWindowedKStream<String, String> windowed = (TimeWindowedKStream<String, String>) grouped;
            if (node.containsKey("count")) {
                return windowed.count((Materialized) counts).mapValues(value -> String.valueOf(value));
            }
            if (node.containsKey("reduce")) {
                return windowed.reduce((agg, value) -> agg + "+" + value, (Materialized) text);
            }
            return windowed.aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (Materialized) text);
        }
        KGroupedStream<String, String> stream = (KGroupedStream<String, String>) grouped;
        if (node.containsKey("count")) {
            return stream.count((Materialized) counts).mapValues(value -> String.valueOf(value));
        }
        if (node.containsKey("reduce")) {
            return stream.reduce((agg, value) -> agg + "+" + value, (Materialized) text);
        }
        return stream.aggregate(() -> "", (key, value, agg) -> agg + "+" + value, (Materialized) text);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static Object join(Object left, Object right, String variant, ValueJoiner<String, String, String> joiner,
                       Map<String, Object> node, boolean windowed) throws Exception {
        Object keyed = node.get("joiner");
        if ("keyed_concat".equals(keyed) || "keys_concat".equals(keyed)) {
            return KeyedJoins.keyedJoin(left, right, variant, (String) keyed, node);
        }
        if (right instanceof GlobalKTable) {
            KStream<String, String> l = (KStream<String, String>) left;
            GlobalKTable<String, String> r = (GlobalKTable<String, String>) right;
            Object selector = node.get("key_selector");
            org.apache.kafka.streams.kstream.KeyValueMapper<String, String, String> select = selector == null
                ? (key, value) -> key
                : (key, value) -> selectKey(Oracle.map(selector), key, value);
            return "inner".equals(variant) ? l.join(r, select, joiner) : l.leftJoin(r, select, joiner);
        }
        if (left instanceof KStream && right instanceof KStream) {
            JoinWindows windows = Oracle.joinWindows(Oracle.map(node.get("window")));
            KStream<String, String> l = (KStream<String, String>) left;
            KStream<String, String> r = (KStream<String, String>) right;
            StreamJoined<String, String, String> joined = Naming.streamJoined(node);
            switch (variant) {
                case "inner": return l.join(r, joiner, windows, joined);
                case "left": return l.leftJoin(r, joiner, windows, joined);
                default: return l.outerJoin(r, joiner, windows, joined);
            }
        }
        if (left instanceof KStream) {
            KStream<String, String> l = (KStream<String, String>) left;
            KTable<String, String> r = (KTable<String, String>) right;
            Joined<String, String, String> joined = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
            if (node.get("grace_ms") != null) {
                joined = joined.withGracePeriod(java.time.Duration.ofMillis(((Number) node.get("grace_ms")).longValue()));
            }
            return "inner".equals(variant) ? l.join(r, joiner, joined) : l.leftJoin(r, joiner, joined);
        }
        KTable<String, String> l = (KTable<String, String>) left;
        KTable<String, String> r = (KTable<String, String>) right;
        Object path = node.get("foreign_key");
        // a windowed left table's result keeps its Windowed keys: its store takes the table's windowed key serde
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> fkStore = Naming.store(node) == null ? null
            : windowed ? (Materialized) windowedJoinStore(Naming.store(node)) : stored(Naming.store(node));
        if (path instanceof Map) {  // {key_or_field: path}: a BiFunction extractor (KIP-1104, 4.0)
            return KeyedJoins.foreignKeyWithKey(l, r, variant, joiner, (String) Oracle.map(path).get("key_or_field"),
                fkStore);
        }
        if (path != null) {
            java.util.function.Function<String, String> extractor = value -> field(value, (String) path);
            if (fkStore != null) {  // Materialized.as(store): the result's store
                Materialized<String, String, KeyValueStore<Bytes, byte[]>> store = fkStore;
                return "inner".equals(variant) ? l.join(r, extractor, joiner, store)
                    : l.leftJoin(r, extractor, joiner, store);
            }
            return "inner".equals(variant) ? l.join(r, extractor, joiner) : l.leftJoin(r, extractor, joiner);
        }
        if (Naming.store(node) != null) {  // a windowed table's join keeps Windowed<K> keys (windowedJoinStore)
            Materialized<String, String, KeyValueStore<Bytes, byte[]>> store = windowed
                ? (Materialized) windowedJoinStore(Naming.store(node)) : stored(Naming.store(node));
            switch (variant) {
                case "inner": return l.join(r, joiner, store);
                case "left": return l.leftJoin(r, joiner, store);
                default: return l.outerJoin(r, joiner, store);
            }
        }
        switch (variant) {
            case "inner": return l.join(r, joiner);
            case "left": return l.leftJoin(r, joiner);
            default: return l.outerJoin(r, joiner);
        }
    }

    /** kjoin's joiners: concat ({@code left-right}, the harness's JOINER) and object ({"left": l, "right": r}). */
    static ValueJoiner<String, String, String> joiner(Object spec) {
        if (spec == null || "concat".equals(spec) || "keyed_concat".equals(spec) || "keys_concat".equals(spec)) {
            return Oracle.JOINER;
        }
        if ("object".equals(spec)) {
            return (left, right) -> {
                Map<String, Object> both = new TreeMap<>();
                both.put("left", parsed(left));
                both.put("right", parsed(right));
                return Json.write(both);
            };
        }
        throw new IllegalArgumentException("joiner " + spec);
    }

    /** A value as kjoin holds it: a JSON object's text parsed, any other text as the string it is. */
    static Object parsed(String value) {
        if (value == null || !value.startsWith("{")) {
            return value;
        }
        try {
            return Json.parse(value);
        } catch (IllegalArgumentException notJson) {  // text that only starts like an object ({"f":1}-B): text
            return value;
        }
    }

    /** kjoin's predicates: value_not_null, key_in and key_not_in. A key is compared by its text ({@link #keyText}),
     *  so a windowed table's {@code [key@start/end]} means the same in a document and here. */
    @SuppressWarnings("unchecked")
    static boolean keep(Map<String, Object> spec, Object key, String value) {
        if (spec.containsKey("value_not_null")) {
            return value != null;
        }
        List<Object> keys = (List<Object>) spec.getOrDefault("key_in", spec.get("key_not_in"));
        boolean in = keys.contains(keyText(key));
        return spec.containsKey("key_in") == in;
    }

    /** A table's filter or mapValues kept in a store of its own, named after the node (Materialized.as). */
    static Materialized<String, String, KeyValueStore<Bytes, byte[]>> stored(String name) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(name)
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
    }

    /** A windowed table's join store named {@code name}, as an application writes {@code Materialized.as(name)}
     *  for a {@code KTable<Windowed<K>, V>}: with no key serde, since KTableImpl's join gives the Materialized the
     *  left table's key serde when it names none (a windowed aggregate's is the windowed serde of the key serde it
     *  was given: TimeWindowedKStreamImpl's FullTimeWindowedSerde, SessionWindowedKStreamImpl's
     *  SessionWindowedSerde). The store is a KeyValueStore of Windowed keys. */
    static Materialized<Object, String, KeyValueStore<Bytes, byte[]>> windowedJoinStore(String name) {
        return Materialized.<Object, String, KeyValueStore<Bytes, byte[]>>as(name).withValueSerde(Serdes.String());
    }

    /** The store a table's filter, filterNot or mapValues keeps when the node asks for one ({@code materialized},
     *  or {@code store}: its name; else the node's name); null when it keeps none. Of a windowed table it names the
     *  windowed serde of its keys, as an application must: KTableImpl's filter and mapValues give the new table its
     *  parent's key serde when the Materialized names none, but build the store from the Materialized's own
     *  (KeyValueStoreMaterializer), and the default serde (String) cannot write a Windowed key. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static Materialized<Object, String, KeyValueStore<Bytes, byte[]>> view(
            Map<String, Object> node, Map<String, org.apache.kafka.common.serialization.Serde<?>> windowedKeys) {
        if (!Boolean.TRUE.equals(node.get("materialized")) && Naming.store(node) == null) {
            return null;
        }
        String name = Naming.store(node) != null ? Naming.store(node) : (String) node.get("name");
        org.apache.kafka.common.serialization.Serde<?> keys = windowedKeys.get((String) node.get("input"));
        Materialized<Object, String, KeyValueStore<Bytes, byte[]>> store =
            Materialized.<Object, String, KeyValueStore<Bytes, byte[]>>as(name).withValueSerde(Serdes.String());
        return store.withKeySerde((org.apache.kafka.common.serialization.Serde) (keys != null ? keys : Serdes.String()));
    }

    /** The serde of a windowed aggregate's keys, as Kafka gives its result table: a time window's
     *  TimeWindowedSerde of its size (a sliding window's: its time difference, SlidingWindowedKStreamImpl), a
     *  session's SessionWindowedSerde, each over the String keys it groups. */
    static org.apache.kafka.common.serialization.Serde<?> windowedSerde(Map<String, Object> window) {
        if (window.containsKey("inactivity_gap_ms")) {
            return new org.apache.kafka.streams.kstream.WindowedSerdes.SessionWindowedSerde<>(Serdes.String());
        }
        Object size = window.containsKey("time_difference_ms") ? window.get("time_difference_ms")
            : window.get("size_ms");
        return new org.apache.kafka.streams.kstream.WindowedSerdes.TimeWindowedSerde<>(Serdes.String(),
            ((Number) size).longValue());
    }

    /** kjoin's {split: text, lower: bool}: the value cut at every text (String.split of the quoted text: trailing
     *  empty parts dropped), lower-cased first if asked; a null value has none. */
    static List<String> words(Map<String, Object> spec, String value) {
        if (value == null) {
            return new ArrayList<>();
        }
        String text = Boolean.TRUE.equals(spec.get("lower")) ? value.toLowerCase(java.util.Locale.ROOT) : value;
        return java.util.Arrays.asList(text.split(java.util.regex.Pattern.quote((String) spec.get("split"))));
    }

    static String mapValue(Map<String, Object> spec, String value) {
        if (spec.containsKey("fail_on")) {  // kjoin's map_values {fail_on: text}: a mapper that throws
            String text = (String) spec.get("fail_on");
            if (value != null && value.contains(text)) {
                throw new IllegalArgumentException("fail_on: the value " + value + " contains " + text);
            }
            return value;
        }
        if (spec.containsKey("append")) {
            return value == null ? null : value + spec.get("append");
        }
        return field(value, (String) spec.get("field"));
    }

    static String selectKey(Map<String, Object> spec, String key, String value) {
        if (spec.containsKey("value")) {
            return value;
        }
        if (spec.containsKey("field")) {
            return field(value, (String) spec.get("field"));
        }
        Map<String, Object> table = Oracle.map(spec.get("map"));
        return key != null && table.containsKey(key) ? Oracle.text(table.get(key)) : key;
    }

    /** kjoin's field_of: a field of a JSON object value as text; null for a null, a missing field or a value that
     *  is not a JSON object (text that only starts with a brace too). */
    static String field(String value, String path) {
        if (value == null || !value.startsWith("{")) {
            return null;
        }
        try {
            return Oracle.foreignKey(value, path);
        } catch (IllegalArgumentException notJson) {  // text that only starts like an object ({"f":1}-B)
            return null;
        }
    }
}
