package kjoin.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.RecordMetadata;

/**
 * kjoin's second oracle: a real {@link KafkaStreams} application against a running broker, where the first
 * ({@link Oracle}) pipes records through TopologyTestDriver in kjoin's own order. What this one judges is the order:
 * which record each task took next from its input partitions, as Kafka's {@code PartitionGroup} chooses it.
 *
 * <p>{@code java kjoin.oracle.BrokerHarness BOOTSTRAP}: reads one scenario a line on stdin (kjoin's
 * {@code Scenario.to_dict()} for the topology, {@link Oracle#build} builds it) with
 * <ul>
 *   <li>{@code records}: {@code [{side, partition, key, value, ts, phase}]} in the order they are produced
 *       (each partition's records in their offset order); phase 0 is produced before the application starts,
 *       phase 1 once it has processed every record of phase 0, phase 2 once it has processed phase 1's, and so on
 *       (a lagging side: records that reach the application later);</li>
 *   <li>{@code max_task_idle_ms} (default 0: wait for data known to be on the broker, not for new data).</li>
 * </ul>
 * and answers one JSON line: {@code {"id", "outputs": [[source, key, value, ts]], "order": [[task, topic,
 * partition, offset]]}}: the output topic's records in the order the application wrote them (one partition, one
 * stream thread: each task's outputs keep their order), each with the input record whose processing produced it
 * (a header the input records carry, and Kafka Streams forwards, {@code "left:0:3"}: side, partition, offset); and
 * every record each task processed, in the order processed, from the record context of the first processor it
 * reached ({@link OrderLog}: a {@code ProcessorWrapper} around every processor of the topology on Kafka 4.0+,
 * KIP-1112; before 4.0 the built topology's processor suppliers, wrapped in place). Or
 * {@code {"id", "error"}}.
 *
 * <p>Per scenario: the input topics {@code s<n>-left}, {@code s<n>-right} (the scenario's partitions; {@link Oracle#build}
 * names them {@code left} and {@code right}, {@link Renaming} reads them under the scenario's prefix) are created,
 * filled, and deleted afterwards with the application's internal topics; a fresh {@code application.id} and state
 * directory; record caches off; one stream thread. The output topic {@code output} (one partition) serves every
 * scenario, read from where the previous one ended: the scenarios run one after another.
 */
public final class BrokerHarness {
    static final String SOURCE_HEADER = "kjoin.source";
    static final List<String> SIDES = List.of("left", "right");
    static final String OUTPUT = "output";

    /** The prefix of this scenario's input topics ({@code s7-left}): the record log names topics without it. */
    static volatile String prefix = "";

    /** Every record a processor of the running application saw: task, topic, partition, offset (first sight). */
    static final List<List<Object>> SEEN = new ArrayList<>();
    static final Set<String> SEEN_KEYS = new HashSet<>();

    private final String bootstrap;
    private final Admin admin;
    /** One producer for every scenario's input records. */
    private final KafkaProducer<String, String> producer;
    private final Path stateRoot;
    private int count;

    BrokerHarness(String bootstrap) throws Exception {
        this.bootstrap = bootstrap;
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        this.admin = Admin.create(props);
        this.producer = producer();
        this.stateRoot = StateDirs.create("kjoin-broker-");  // removed when the JVM exits
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            throw new IllegalArgumentException("usage: BrokerHarness BOOTSTRAP_SERVERS < scenarios.jsonl");
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BrokerHarness harness = new BrokerHarness(args[0]);
        harness.createOutput();
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (!line.isBlank()) {
                    out.println(harness.answer(line));
                    out.flush();
                }
            }
        } finally {
            harness.producer.close(Duration.ofSeconds(10));
            harness.admin.close(Duration.ofSeconds(10));
            StateDirs.delete(harness.stateRoot);
        }
    }

    String answer(String line) {
        Map<String, Object> result = new LinkedHashMap<>();
        Object id = null;
        try {
            @SuppressWarnings("unchecked")
            Map<String, Object> scenario = (Map<String, Object>) Json.parse(line);
            id = scenario.get("id");
            result.put("id", id);
            run(scenario, result);
        } catch (Exception | LinkageError | AssertionError error) {
            StringBuilder message = new StringBuilder();
            for (Throwable cause = error; cause != null; cause = cause.getCause()) {
                message.append(message.length() == 0 ? "" : " <- ").append(cause.getClass().getSimpleName())
                    .append(": ").append(cause.getMessage());
                if (cause.getCause() == null) {  // where it was thrown: the first frames, down to the harness's own
                    StackTraceElement[] frames = cause.getStackTrace();
                    for (int i = 0; i < frames.length && i < 12; i++) {
                        message.append(i == 0 ? " at " : " < ").append(frames[i]);
                        if (frames[i].getClassName().startsWith("kjoin.")) {
                            break;
                        }
                    }
                }
            }
            result.clear();
            result.put("id", id);
            result.put("error", message.toString());
        }
        return Json.write(result);
    }

    @SuppressWarnings("unchecked")
    void run(Map<String, Object> scenario, Map<String, Object> result) throws Exception {
        count++;
        String applicationId = "kjoin-broker-" + ProcessHandle.current().pid() + "-" + count;
        int partitions = scenario.get("partitions") == null ? 1 : ((Number) scenario.get("partitions")).intValue();
        boolean selfJoin = Oracle.flag(scenario, "self_join");
        List<Map<String, Object>> records = new ArrayList<>();
        for (Object item : (List<Object>) scenario.get("records")) {
            records.add(Oracle.map(item));
        }
        // The caller may choose the prefix: the order in which a poll's partitions reach their tasks (the consumer's
        // HashMap of topic-partitions) follows the topic names' hashes.
        prefix = scenario.get("topic_prefix") == null ? "s" + count + "-" : (String) scenario.get("topic_prefix");
        List<NewTopic> topics = new ArrayList<>();
        topics.add(new NewTopic(prefix + "left", partitions, (short) 1));
        if (!selfJoin) {
            topics.add(new NewTopic(prefix + "right", partitions, (short) 1));
        }
        admin.createTopics(topics).all().get(30, TimeUnit.SECONDS);
        awaitLeaders(topics);
        TopicPartition output = new TopicPartition(OUTPUT, 0);
        long outputStart = admin.listOffsets(Map.of(output, org.apache.kafka.clients.admin.OffsetSpec.latest()))
            .partitionResult(output).get(30, TimeUnit.SECONDS).offset();
        Path stateDir = Files.createTempDirectory(stateRoot, "s" + count + "-");
        synchronized (SEEN) {
            SEEN.clear();
            SEEN_KEYS.clear();
        }
        KafkaStreams streams = null;
        try {
            Map<String, Integer> offsets = new HashMap<>();
            int early = produce(producer, records, 0, offsets);
            Properties props = streamsProperties(scenario, applicationId, stateDir);
            StreamsBuilder builder = new Renaming(new org.apache.kafka.streams.TopologyConfig(new StreamsConfig(props)));
            List<String> caching = new ArrayList<>();
            if (scenario.get("caching") != null) {
                throw new IllegalArgumentException("caching: a cache flushes at commits, on the wall clock; "
                    + "the broker oracle runs without record caches");
            }
            Oracle.build(builder, scenario, caching);
            Topology topology = builder.build(props);
            if (!OrderLog.WRAPPER_API) {
                OrderLog.wrapBuilt(topology);
            }
            checkTopics(topology);
            streams = new KafkaStreams(topology, props);
            Throwable[] failure = new Throwable[1];
            streams.setUncaughtExceptionHandler(error -> {
                failure[0] = error;
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                    .SHUTDOWN_CLIENT;
            });
            streams.start();
            List<List<Object>> outputs = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = outputConsumer(outputStart)) {
                long quietMs = ((Number) scenario.getOrDefault("quiet_ms", 700L)).longValue();
                int last = 0;
                for (Map<String, Object> record : records) {
                    last = Math.max(last, phase(record));
                }
                readUntilQuiet(consumer, outputs, early, last == 0 ? quietMs : 0, failure, applicationId, topics);
                for (int phase = 1; phase <= last; phase++) {  // later records: once the earlier are processed
                    int upTo = produce(producer, records, phase, offsets);
                    readUntilQuiet(consumer, outputs, upTo, phase == last ? quietMs : 0, failure, applicationId,
                        topics);
                }
            }
            result.put("outputs", outputs);
            synchronized (SEEN) {
                result.put("order", new ArrayList<>(SEEN));
            }
        } finally {
            if (streams != null) {
                closeFully(streams);
                streams.cleanUp();
            }
            deleteTopics(prefix, applicationId);
            try (var files = Files.walk(stateDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** Closes ``streams`` and waits until it has stopped (NOT_RUNNING or ERROR): {@code cleanUp} refuses an
     *  application whose close has not completed ("Cannot clean up while running."), and on a loaded machine one
     *  {@code close(timeout)} can return false with its stream thread still shutting down. A close that is already
     *  under way is waited on again, up to five minutes in all. */
    static void closeFully(KafkaStreams streams) {
        long deadline = System.currentTimeMillis() + CLOSE_TIMEOUT_MS;
        while (!streams.close(Duration.ofSeconds(30)) && !streams.state().hasCompletedShutdown()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the application did not stop within " + CLOSE_TIMEOUT_MS / 1000
                    + " s of close() (state " + streams.state() + "): its state directory is not cleaned up");
            }
        }
    }

    static final long CLOSE_TIMEOUT_MS = 300_000;

    /** The application's settings: Kafka's defaults but for what makes a run reproducible. */
    Properties streamsProperties(Map<String, Object> scenario, String applicationId, Path stateDir) {
        Properties props = Oracle.driverProperties(applicationId, stateDir);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // No record caches: every update is forwarded when it is processed, as in TopologyTestDriver.
        props.put(Oracle.cacheConfig(), 0L);
        // The outer-join buffer swept on every record (Oracle.run: its default is a second of wall-clock time).
        props.put("__emit.interval.ms.kstreams.outer.join.spurious.results.fix__", 0L);
        Object idle = scenario.get("max_task_idle_ms");
        props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, idle == null ? 0L : ((Number) idle).longValue());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100L);
        props.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 0);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (OrderLog.WRAPPER_API) {  // by name: the class implements an interface that older versions lack
            props.put("processor.wrapper.class", "kjoin.oracle.OrderLogWrapper");
        }
        props.put(StreamsConfig.STATE_CLEANUP_DELAY_MS_CONFIG, 600_000L);
        Object delay = scenario.get("send_delay_ms");
        SlowSend.delayMs = delay == null ? 0L : ((Number) delay).longValue();
        if (SlowSend.delayMs > 0) {
            props.put(StreamsConfig.producerPrefix(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG), SlowSend.class.getName());
        }
        if (Oracle.flag(scenario, "optimize")) {
            props.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
        }
        if (Oracle.IN_MEMORY && !List.of("stream-stream", "window-aggregate", "wtable-wtable")
            .contains(scenario.get("join"))) {  // as Oracle.run: key-value stores in memory
            props.put("default.dsl.store", "in_memory");
            props.put("dsl.store.suppliers.class",
                "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers");
        }
        return props;
    }

    KafkaProducer<String, String> producer() {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        // One request in flight: a retried batch cannot overtake a later one, so each partition's records land in the
        // order given (no idempotence: no producer id to wait for).
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    /** Produces the records of ``phase`` in order, each to its partition with its timestamp and a header naming it;
     *  returns how many records of phases up to ``phase`` there are. */
    int produce(KafkaProducer<String, String> producer, List<Map<String, Object>> records, int phase,
                Map<String, Integer> offsets) throws Exception {
        List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
        List<String> expected = new ArrayList<>();
        int upTo = 0;
        for (Map<String, Object> record : records) {
            int itsPhase = phase(record);
            if (itsPhase <= phase) {
                upTo++;
            }
            if (itsPhase != phase) {
                continue;
            }
            String side = (String) record.get("side");
            int partition = ((Number) record.get("partition")).intValue();
            int offset = offsets.merge(side + ":" + partition, 1, Integer::sum) - 1;
            String source = side + ":" + partition + ":" + offset;
            ProducerRecord<String, String> message = new ProducerRecord<>(prefix + side, partition,
                ((Number) record.get("ts")).longValue(), Oracle.text(record.get("key")), Oracle.text(record.get("value")));
            message.headers().add(SOURCE_HEADER, source.getBytes(StandardCharsets.UTF_8));
            sent.add(producer.send(message));
            expected.add(source);
        }
        producer.flush();
        for (int i = 0; i < sent.size(); i++) {
            org.apache.kafka.clients.producer.RecordMetadata metadata = sent.get(i).get(30, TimeUnit.SECONDS);
            String at = metadata.topic().substring(prefix.length()) + ":" + metadata.partition() + ":"
                + metadata.offset();
            if (!at.equals(expected.get(i))) {
                throw new IllegalStateException("record " + expected.get(i) + " landed at " + at);
            }
        }
        return upTo;
    }

    static int phase(Map<String, Object> record) {
        return record.get("phase") == null ? 0 : ((Number) record.get("phase")).intValue();
    }

    KafkaConsumer<String, String> outputConsumer(long start) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        KafkaConsumer<String, String> consumer =
            new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        TopicPartition output = new TopicPartition(OUTPUT, 0);
        consumer.assign(List.of(output));
        consumer.seek(output, start);
        return consumer;
    }

    /** Reads the output topic until the application has processed ``inputs`` input records and then nothing has
     *  happened (no record processed, none written) for ``quietMs``; with {@code quietMs > 0} (the last read of a
     *  scenario) also until the application has committed (see {@link #caughtUp}): a record is logged when its
     *  processing starts, and the outputs it writes reach the broker when the producer sends them, which on a loaded
     *  machine can take longer than any quiet time (the last output of sweep scenario 309 was once missed so). */
    void readUntilQuiet(KafkaConsumer<String, String> consumer, List<List<Object>> outputs, int inputs, long quietMs,
                        Throwable[] failure, String applicationId, List<NewTopic> inputTopics) throws Exception {
        long deadline = System.currentTimeMillis() + 120_000;
        long lastChange = System.currentTimeMillis();
        int seen = -1;
        while (true) {
            if (failure[0] != null) {
                throw new IllegalStateException("the application failed", failure[0]);
            }
            boolean changed = false;
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(50))) {
                Header header = record.headers().lastHeader(SOURCE_HEADER);
                List<Object> output = new ArrayList<>();
                output.add(header == null ? null : new String(header.value(), StandardCharsets.UTF_8));
                output.add(record.key());
                output.add(record.value());
                output.add(record.timestamp());
                outputs.add(output);
                changed = true;
            }
            int inputsSeen;
            int now;
            synchronized (SEEN) {
                now = SEEN.size();
                inputsSeen = 0;
                for (List<Object> entry : SEEN) {
                    if (SIDES.contains(entry.get(1))) {
                        inputsSeen++;
                    }
                }
            }
            if (now != seen) {
                seen = now;
                changed = true;
            }
            long time = System.currentTimeMillis();
            if (changed) {
                lastChange = time;
            } else if (inputsSeen >= inputs && time - lastChange >= quietMs) {
                if (quietMs == 0 || caughtUp(consumer, applicationId, inputTopics)) {
                    return;
                }
                lastChange = time;  // not committed yet: wait another quiet time
            }
            if (time > deadline) {
                throw new IllegalStateException("the application processed " + inputsSeen + " of " + inputs
                    + " input records in 120 s");
            }
        }
    }

    /** Whether the application has committed every partition it reads (the scenario's input partitions and its
     *  internal topics') at that partition's end, and ``consumer`` has read the output topic to its end. Kafka
     *  Streams flushes its producer before it commits (at least once), so every output of every processed record is
     *  on the broker then. */
    boolean caughtUp(KafkaConsumer<String, String> consumer, String applicationId, List<NewTopic> inputTopics)
        throws Exception {
        Map<TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed = admin
            .listConsumerGroupOffsets(applicationId).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> ends = new HashMap<>();
        for (NewTopic topic : inputTopics) {
            for (int partition = 0; partition < topic.numPartitions(); partition++) {
                ends.put(new TopicPartition(topic.name(), partition), org.apache.kafka.clients.admin.OffsetSpec.latest());
            }
        }
        for (TopicPartition partition : committed.keySet()) {
            ends.put(partition, org.apache.kafka.clients.admin.OffsetSpec.latest());
        }
        TopicPartition output = new TopicPartition(OUTPUT, 0);
        ends.put(output, org.apache.kafka.clients.admin.OffsetSpec.latest());
        var latest = admin.listOffsets(ends).all().get(30, TimeUnit.SECONDS);
        for (var entry : latest.entrySet()) {
            long end = entry.getValue().offset();
            if (entry.getKey().equals(output)) {
                if (consumer.position(output) < end) {
                    return false;
                }
                continue;
            }
            var offset = committed.get(entry.getKey());
            if (end > 0 && (offset == null || offset.offset() < end)) {
                return false;
            }
        }
        return true;
    }

    /** Deletes the scenario's input topics and the application's internal topics (their names are never used
     *  again: no need to wait until the broker has removed them). */
    void deleteTopics(String inputPrefix, String applicationId) throws Exception {
        List<String> doomed = new ArrayList<>();
        for (String name : admin.listTopics().names().get(30, TimeUnit.SECONDS)) {
            if (name.startsWith(inputPrefix) || name.startsWith(applicationId + "-")) {
                doomed.add(name);
            }
        }
        if (!doomed.isEmpty()) {
            admin.deleteTopics(doomed).all().get(30, TimeUnit.SECONDS);
        }
    }

    /** Waits until the broker serves a leader for every partition of ``topics``: the controller has created them
     *  when createTopics returns, and an application that starts before the broker knows them fails its rebalance
     *  (MissingSourceTopicException). */
    void awaitLeaders(List<NewTopic> topics) throws Exception {
        List<String> names = new ArrayList<>();
        for (NewTopic topic : topics) {
            names.add(topic.name());
        }
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            boolean ready = true;
            try {
                for (var description : admin.describeTopics(names).allTopicNames().get(10, TimeUnit.SECONDS).values()) {
                    for (var partition : description.partitions()) {
                        ready &= partition.leader() != null && !partition.leader().isEmpty();
                    }
                }
            } catch (java.util.concurrent.ExecutionException unknownYet) {
                ready = false;
            }
            if (ready) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("topics " + names + " have no leader for every partition after 30 s");
            }
            Thread.sleep(20);
        }
    }

    /** The shared output topic (one partition): created when the harness starts, if the broker has none. */
    void createOutput() throws Exception {
        if (!admin.listTopics().names().get(30, TimeUnit.SECONDS).contains(OUTPUT)) {
            admin.createTopics(List.of(new NewTopic(OUTPUT, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
    }

    /** No source topic of the topology is an unrenamed {@code left} or {@code right} (the internal topics appear
     *  without the application id here; Kafka Streams prefixes them when it runs). */
    static void checkTopics(Topology topology) {
        for (org.apache.kafka.streams.TopologyDescription.Subtopology sub : topology.describe().subtopologies()) {
            for (org.apache.kafka.streams.TopologyDescription.Node node : sub.nodes()) {
                if (node instanceof org.apache.kafka.streams.TopologyDescription.Source) {
                    for (String topic : ((org.apache.kafka.streams.TopologyDescription.Source) node).topicSet()) {
                        if (SIDES.contains(topic)) {
                            throw new IllegalStateException("source topic " + topic + " was not renamed");
                        }
                    }
                }
            }
        }
    }

    /** Oracle.build's topology on this scenario's input topics: {@code left} is read from {@code s7-left}. */
    static final class Renaming extends StreamsBuilder {
        Renaming(org.apache.kafka.streams.TopologyConfig config) {
            super(config);
        }

        static String renamed(String topic) {
            return SIDES.contains(topic) ? prefix + topic : topic;
        }

        @Override
        public synchronized <K, V> org.apache.kafka.streams.kstream.KStream<K, V> stream(
            java.util.Collection<String> topics, org.apache.kafka.streams.kstream.Consumed<K, V> consumed) {
            List<String> names = new ArrayList<>();
            for (String topic : topics) {
                names.add(renamed(topic));
            }
            return super.stream(names, consumed);
        }

        @Override
        public synchronized <K, V> org.apache.kafka.streams.kstream.KTable<K, V> table(
            String topic, org.apache.kafka.streams.kstream.Consumed<K, V> consumed,
            org.apache.kafka.streams.kstream.Materialized<K, V,
                org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>> store) {
            return super.table(renamed(topic), consumed, store);
        }

        @Override
        public synchronized <K, V> org.apache.kafka.streams.kstream.KTable<K, V> table(
            String topic, org.apache.kafka.streams.kstream.Consumed<K, V> consumed) {
            return super.table(renamed(topic), consumed);
        }
    }

    /** {@code send_delay_ms}: the application's producer holds each output that long before sending it, as a
     *  loaded machine may (the test that the harness waits for the application's commit, not for a quiet time). */
    public static final class SlowSend implements org.apache.kafka.clients.producer.ProducerInterceptor<Object, Object> {
        static volatile long delayMs;

        @Override
        public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
            if (OUTPUT.equals(record.topic())) {
                try {
                    Thread.sleep(delayMs);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
            return record;
        }

        @Override
        public void onAcknowledgement(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception exception) {
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    static void saw(Object taskId, java.util.Optional<RecordMetadata> metadata) {
        if (metadata.isEmpty()) {
            return;
        }
        RecordMetadata where = metadata.get();
        String topic = where.topic().startsWith(prefix) ? where.topic().substring(prefix.length()) : where.topic();
        String key = topic + ":" + where.partition() + ":" + where.offset();
        synchronized (SEEN) {
            if (SEEN_KEYS.add(key)) {
                List<Object> entry = new ArrayList<>();
                entry.add(String.valueOf(taskId));
                entry.add(topic);
                entry.add((long) where.partition());
                entry.add(where.offset());
                SEEN.add(entry);
            }
        }
    }
}
