package kjoin.oracle;

import java.io.BufferedReader;
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
import java.util.stream.Stream;

import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;

/**
 * The benchmark's Kafka Streams baseline: replays records from files through the same topology the oracle builds,
 * one TopologyTestDriver per Kafka task (input partition), in-memory stores for everything (key-value and window
 * stores; {@code -Dkjoin.oracle.stores=rocksdb}: Kafka's default RocksDB stores), record caches off, the driver's
 * wall clock moved with the real one (so time-driven work such as the outer-join buffer's sweep runs as often as in a
 * deployment), and reports its own elapsed time.
 *
 * <p>{@code java kjoin.oracle.Replay '<scenario JSON without events>' FILE_OR_DIR...}: every file (a directory's
 * {@code part-*} files, in name order) holds one record a line, {@code partition TAB side TAB key TAB value TAB ts},
 * {@code \N} for null, a partition's records in the order they are piped (their append order). Writes one JSON line:
 * {@code {"records": .., "outputs": .., "seconds": .., "tasks": ..}}; the seconds cover building the drivers, piping
 * (with String serialisation) and draining the output topic, not the JVM's start or reading the files' names.
 */
public final class Replay {
    private Replay() {
    }

    static final String NULL = "\\N";

    /** One Kafka task: its driver and topics. */
    static final class Task {
        final TopologyTestDriver driver;
        final TestInputTopic<String, String> left;
        final TestInputTopic<String, String> right;
        final TestOutputTopic<String, String> output;
        long piped;
        long wallClock = System.nanoTime();

        Task(Map<String, Object> scenario, Path stateDir) throws Exception {
            Properties props = Oracle.driverProperties("kjoin-replay", stateDir);
            // Unlike Oracle.run, the outer-join buffer keeps Kafka's default sweep interval (1 s of wall-clock time):
            // main() moves the driver's wall clock with the real one. Sweeping on every record (Oracle's 0 ms, for
            // exact per-record outputs) copies the buffer's keys each time and makes a long replay quadratic.
            props.put(Oracle.cacheConfig(), 0L);
            if (Oracle.IN_MEMORY) {  // -Dkjoin.oracle.stores=rocksdb: Kafka's default (RocksDB) stores instead
                props.put("default.dsl.store", "in_memory");
                props.put("dsl.store.suppliers.class",
                    "org.apache.kafka.streams.state.BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers");
            }
            StreamsBuilder builder = Oracle.atLeast(3, 2)
                ? new StreamsBuilder(new org.apache.kafka.streams.TopologyConfig(new StreamsConfig(props)))
                : new StreamsBuilder();
            Oracle.build(builder, scenario, List.of());
            Topology topology = builder.build(props);
            driver = new TopologyTestDriver(topology, props);
            left = driver.createInputTopic("left", new StringSerializer(), new StringSerializer());
            right = driver.createInputTopic("right", new StringSerializer(), new StringSerializer());
            output = driver.createOutputTopic("output", new StringDeserializer(), new StringDeserializer());
        }

        long drain() {
            long count = 0;
            while (!output.isEmpty()) {
                output.readRecord();
                count++;
            }
            return count;
        }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            throw new IllegalArgumentException("usage: Replay '<scenario JSON>' FILE_OR_DIR...");
        }
        Map<String, Object> scenario = (Map<String, Object>) Json.parse(args[0]);
        List<Path> files = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            Path path = Path.of(args[i]);
            if (Files.isDirectory(path)) {
                try (Stream<Path> listing = Files.list(path)) {
                    listing.filter(p -> p.getFileName().toString().startsWith("part-")).sorted().forEach(files::add);
                }
            } else {
                files.add(path);
            }
        }
        Path stateDir = Files.createTempDirectory("kjoin-replay-");
        Map<Integer, Task> tasks = new HashMap<>();
        long records = 0;
        long outputs = 0;
        long started = System.nanoTime();
        for (Path file : files) {
            try (BufferedReader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                    if (line.isEmpty()) {
                        continue;
                    }
                    String[] cells = line.split("\t", -1);
                    if (cells.length != 5) {
                        throw new IllegalArgumentException(file + ": expected partition, side, key, value, ts "
                            + "separated by tabs, got: " + line);
                    }
                    int partition = Integer.parseInt(cells[0]);
                    Task task = tasks.get(partition);
                    if (task == null) {
                        task = new Task(scenario, stateDir.resolve("task-" + partition));
                        tasks.put(partition, task);
                    }
                    String key = NULL.equals(cells[2]) ? null : cells[2];
                    String value = NULL.equals(cells[3]) ? null : cells[3];
                    ("left".equals(cells[1]) ? task.left : task.right).pipeInput(key, value, Long.parseLong(cells[4]));
                    records++;
                    if (++task.piped % 1024 == 0) {
                        outputs += task.drain();
                        long now = System.nanoTime();
                        task.driver.advanceWallClockTime(java.time.Duration.ofNanos(now - task.wallClock));
                        task.wallClock = now;
                    }
                }
            }
        }
        for (Task task : tasks.values()) {
            outputs += task.drain();
            task.driver.close();
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        try (Stream<Path> leftovers = Files.walk(stateDir)) {
            leftovers.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("records", records);
        report.put("outputs", outputs);
        report.put("seconds", seconds);
        report.put("tasks", (long) tasks.size());
        report.put("version", Oracle.VERSION);
        report.put("stores", Oracle.IN_MEMORY ? "in-memory" : "rocksdb");
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        out.println(Json.write(report));
    }
}
