package kjoin.oracle;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * A whole app, a kjoin topology document, run as a real {@link KafkaStreams} application against a running broker:
 * {@code java kjoin.oracle.AppRunner BOOTSTRAP APPLICATION_ID < document.json}. The topology is built as
 * {@link TopologyOracle#build} builds it for TopologyTestDriver (the same DSL calls and functions); the application
 * reads its input topics, which the caller has created and filled, from the earliest offset, with
 * {@code max.task.idle.ms = 0} (a task takes what it has fetched and never waits for an empty partition: a lagging
 * partition's records are taken when they reach the broker), record caches off (every update forwarded), one stream
 * thread and a commit every 100 ms (so the caller can tell from the group's committed offsets when the application
 * has processed what was produced).
 *
 * <p>It prints {@code running} once the application runs, then runs until a line (or the end) arrives on stdin,
 * closes the application, removes its state directory and prints {@code closed}. The caller produces further records
 * meanwhile and reads the output topics itself.
 */
public final class AppRunner {
    private AppRunner() {
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("usage: AppRunner BOOTSTRAP_SERVERS APPLICATION_ID < document.json");
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Object> document = (Map<String, Object>) Json.parse(in.readLine());
        List<Object> nodes = (List<Object>) document.get("topology");
        boolean windowed = false;
        for (Object item : nodes) {
            Map<String, Object> node = Oracle.map(item);
            windowed |= node.get("window") != null || node.get("windowed_by") != null;
        }
        Path stateDir = Files.createTempDirectory("kjoin-app-");
        Properties props = Oracle.driverProperties(args[1], stateDir);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(Oracle.cacheConfig(), 0L);
        props.put("max.task.idle.ms", 0L);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100L);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        StreamsBuilder builder = Oracle.atLeast(3, 2)
            ? new StreamsBuilder(new org.apache.kafka.streams.TopologyConfig(new StreamsConfig(props)))
            : new StreamsBuilder();
        TopologyOracle.build(builder, nodes, new ArrayList<>(), windowed);
        Topology topology = builder.build(props);
        KafkaStreams streams = new KafkaStreams(topology, props);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING) {
                running.countDown();
            }
        });
        try {
            streams.start();
            if (!running.await(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the application did not reach RUNNING within 120 s: " + streams.state());
            }
            out.println("running");
            out.flush();
            in.readLine();
        } finally {
            streams.close(Duration.ofSeconds(30));
            streams.cleanUp();
            try (var files = Files.walk(stateDir)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
            out.println("closed");
            out.flush();
        }
    }
}
