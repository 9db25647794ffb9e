package kjoin.oracle;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The topologies of Kafka Streams' own examples (apache/kafka streams/examples: Pipe, LineSplit, WordCountDemo,
 * WordCountProcessorDemo, TemperatureDemo, PageViewUntypedDemo) and a GlobalKTable join of the developer guide, built
 * with the DSL as the examples build them (String serdes, the same operations, topic and store names), printed as
 * {@code Topology.describe()} prints them: one JSON line {@code {"name": .., "text": ..}} each. kjoin's
 * {@code Topology.from_describe} reads these texts (tests/test_topology_describe.py): what it can model it builds, the
 * rest it refuses with reasons. The examples that kjoin builds are judged record by record through TopologyOracle.
 * {@code named-whole-app} is the course's app with every operation named by the application, as real apps often do.
 */
public final class DescribeExamples {
    private DescribeExamples() {
    }

    public static void main(String[] args) {
        Map<String, Topology> examples = new LinkedHashMap<>();
        examples.put("kafka-pipe", pipe());
        examples.put("kafka-line-split", lineSplit());
        examples.put("kafka-word-count", wordCount());
        examples.put("kafka-word-count-processor", wordCountProcessor());
        examples.put("kafka-temperature", temperature());
        examples.put("kafka-page-view-untyped", pageView());
        examples.put("kafka-global-table-join", globalTableJoin());
        examples.put("named-whole-app", namedWholeApp());
        examples.put("kafka4-process-values-split", processValuesSplit());
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (Map.Entry<String, Topology> entry : examples.entrySet()) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("name", entry.getKey());
            line.put("text", entry.getValue().describe().toString());
            out.println(Json.write(line));
        }
        out.flush();
    }

    /** A DSL application: a new StreamsBuilder, the application's own body, built. */
    static Topology app(Consumer<StreamsBuilder> body) {
        StreamsBuilder builder = new StreamsBuilder();
        body.accept(builder);
        return builder.build();
    }

    /** The examples' input: streams-plaintext-input, a line of text a record. */
    static KStream<String, String> plaintext(StreamsBuilder builder) {
        return builder.stream("streams-plaintext-input");
    }

    static Topology pipe() {
        return app(builder -> plaintext(builder).to("streams-pipe-output"));
    }

    static Topology lineSplit() {
        return app(builder -> plaintext(builder)
            .flatMapValues(value -> Arrays.asList(value.split("\\W+")))
            .to("streams-linesplit-output"));
    }

    static Topology wordCount() {
        return app(builder -> {
            KTable<String, Long> counts = plaintext(builder)
                .flatMapValues(value -> Arrays.asList(value.toLowerCase(Locale.getDefault()).split(" ")))
                .groupBy((key, value) -> value)
                .count();
            counts.toStream().to("streams-wordcount-output", Produced.with(Serdes.String(), Serdes.Long()));
        });
    }

    static Topology wordCountProcessor() {
        Topology topology = new Topology();
        topology.addSource("Source", "streams-plaintext-input");
        topology.addProcessor("Process", () -> new Processor<String, String, String, String>() {
            private KeyValueStore<String, Integer> counts;
            private ProcessorContext<String, String> context;

            @Override
            public void init(ProcessorContext<String, String> context) {
                this.context = context;
                this.counts = context.getStateStore("Counts");
            }

            @Override
            public void process(Record<String, String> record) {
                for (String word : record.value().toLowerCase(Locale.getDefault()).split("\\W+")) {
                    Integer old = counts.get(word);
                    counts.put(word, old == null ? 1 : old + 1);
                    context.forward(new Record<>(word, String.valueOf(counts.get(word)), record.timestamp()));
                }
            }
        }, "Source");
        topology.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("Counts"), Serdes.String(),
            Serdes.Integer()), "Process");
        topology.addSink("Sink", "streams-wordcount-processor-output", "Process");
        return topology;
    }

    static Topology temperature() {
        return app(builder -> {
            KStream<String, String> source = builder.stream("iot-temperature");
            source
                .selectKey((key, value) -> "temp")
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(5), Duration.ofSeconds(1)))
                .reduce((a, b) -> Integer.parseInt(a) > Integer.parseInt(b) ? a : b)
                .toStream()
                .filter((key, value) -> Integer.parseInt(value) > 20)
                .to("iot-temperature-max");
        });
    }

    static Topology pageView() {
        return app(builder -> {
            KStream<String, String> views = builder.stream("streams-pageview-input");
            KTable<String, String> users = builder.table("streams-userprofile-input");
            KTable<String, String> userRegions = users.mapValues(record -> record.split(",")[0]);
            views
                .leftJoin(userRegions, (view, region) -> view + "@" + (region == null ? "UNKNOWN" : region))
                .map((user, viewRegion) -> new KeyValue<>(viewRegion.split("@")[1], viewRegion))
                .groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofDays(7), Duration.ofSeconds(1))
                    .advanceBy(Duration.ofSeconds(1)))
                .count()
                .toStream()
                .map((key, count) -> new KeyValue<>(key.key(), String.valueOf(count)))
                .to("streams-pageviewstats-untyped-output");
        });
    }

    static Topology globalTableJoin() {
        return app(builder -> {
            KStream<String, String> orders = builder.stream("orders");
            GlobalKTable<String, String> products = builder.globalTable("products");
            orders.join(products, (orderId, order) -> order.split(",")[0], (order, product) -> order + "/" + product)
                .to("enriched-orders");
        });
    }

    /** The course's whole app and joins of every kind, each operation named by the application (Named.as, Joined.as,
     * StreamJoined.withName, TableJoined.as): what describe() prints then. */
    static Topology namedWholeApp() {
        return app(builder -> {
            KStream<String, String> orders = builder.stream("orders");
            KStream<String, String> payments = builder.stream("payments");
            KTable<String, String> customers = builder.table("customers");
            KTable<String, String> addresses = builder.table("addresses");
            KTable<String, String> regions = builder.table("regions");
            orders.selectKey((id, order) -> order.split(",")[0], Named.as("by-customer"))
                .join(customers, (order, name) -> order + "/" + name, Joined.as("with-name"))
                .leftJoin(addresses, (order, city) -> order + "/" + city, Joined.as("with-city"))
                .to("enriched-orders", Produced.as("enriched-sink"));
            orders.outerJoin(payments, (o, p) -> o + "/" + p, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(10)),
                    StreamJoined.<String, String, String>as("paid").withName("paid"))
                .to("paid-orders");
            customers.leftJoin(addresses, (c, a) -> c + "/" + a, Named.as("profiles"))
                .join(regions, c -> c.split(",")[0], (c, r) -> c + "/" + r, TableJoined.as("located"))
                .toStream(Named.as("located-changes"))
                .to("located-customers");
        });
    }

    /** A Kafka 4.x application: filterNot, peek, a de-duplicating processValues with a store of its own, and a
     *  split into two named branches (KIP-820, KIP-418), as an application written without transform* or branch. */
    static Topology processValuesSplit() {
        return app(builder -> {
            builder.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore("last-status"),
                Serdes.String(), Serdes.String()));
            Map<String, KStream<String, String>> branches = builder.<String, String>stream("orders")
                .filterNot((key, value) -> value == null)
                .peek((key, value) -> { })
                .processValues(() -> new FixedKeyProcessor<String, String, String>() {
                    private FixedKeyProcessorContext<String, String> context;
                    private KeyValueStore<String, String> last;

                    @Override
                    public void init(FixedKeyProcessorContext<String, String> context) {
                        this.context = context;
                        this.last = context.getStateStore("last-status");
                    }

                    @Override
                    public void process(FixedKeyRecord<String, String> record) {
                        if (!record.value().equals(last.get(record.key()))) {
                            last.put(record.key(), record.value());
                            context.forward(record);
                        }
                    }
                }, "last-status")
                .split(Named.as("route-"))
                .branch((key, value) -> value.startsWith("paid"), Branched.as("paid"))
                .defaultBranch(Branched.as("other"));
            branches.get("route-paid").to("paid-orders");
            branches.get("route-other").to("other-orders");
        });
    }
}
