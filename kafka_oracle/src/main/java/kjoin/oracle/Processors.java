package kjoin.oracle;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The processors a topology document names for {@code process_values} and {@code process} (KIP-820), as
 * kjoin.topology.custom implements them: {@code count_per_key} (a running count per key in the processor's store,
 * forwarded as text; a null key is not counted), {@code dedupe} (a record goes on only when its value differs from the
 * key's last one, kept in the store; a null key passes), {@code swap} (process only: the value becomes the key and the
 * key the value). Each processor has a key-value store of its own, added to the builder under the document's name.
 */
final class Processors {
    private Processors() {
    }

    /** The store a node's processor keeps its state in: the document's {@code store}, else {@code <name>-store}. */
    static String addStore(StreamsBuilder builder, Map<String, Object> node) {
        Object given = node.get("store");
        String store = given != null ? (String) given : node.get("name") + "-store";
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.inMemoryKeyValueStore(store), Serdes.String(), Serdes.String()));
        return store;
    }

    static KStream<String, String> processValues(StreamsBuilder builder, KStream<String, String> stream,
                                                 Map<String, Object> node) {
        Map<String, Object> spec = Oracle.map(node.get("process_values"));
        String store = addStore(builder, node);
        boolean count = spec.containsKey("count_per_key");
        return stream.processValues(() -> new FixedKeyProcessor<String, String, String>() {
            private FixedKeyProcessorContext<String, String> context;
            private KeyValueStore<String, String> kept;

            @Override
            public void init(FixedKeyProcessorContext<String, String> context) {
                this.context = context;
                this.kept = context.getStateStore(store);
            }

            @Override
            public void process(FixedKeyRecord<String, String> record) {
                String forwarded = step(kept, count, record.key(), record.value());
                if (forwarded != SKIP) {
                    context.forward(record.withValue(forwarded));
                }
            }
        }, store);
    }

    static KStream<String, String> process(StreamsBuilder builder, KStream<String, String> stream,
                                           Map<String, Object> node) {
        Map<String, Object> spec = Oracle.map(node.get("process"));
        String store = addStore(builder, node);
        boolean count = spec.containsKey("count_per_key");
        boolean swap = spec.containsKey("swap");
        return stream.process(() -> new Processor<String, String, String, String>() {
            private ProcessorContext<String, String> context;
            private KeyValueStore<String, String> kept;

            @Override
            public void init(ProcessorContext<String, String> context) {
                this.context = context;
                this.kept = context.getStateStore(store);
            }

            @Override
            public void process(Record<String, String> record) {
                if (swap) {
                    context.forward(new Record<>(record.value(), record.key(), record.timestamp()));
                    return;
                }
                String forwarded = step(kept, count, record.key(), record.value());
                if (forwarded != SKIP) {
                    context.forward(record.withValue(forwarded));
                }
            }
        }, store);
    }

    /** Marks "forward nothing" (a value of its own: null is a value a record may carry). */
    private static final String SKIP = new String("skip");

    /** count_per_key or dedupe on one record: the value to forward, or SKIP. */
    private static String step(KeyValueStore<String, String> kept, boolean count, String key, String value) {
        if (count) {
            if (key == null) {
                return SKIP;
            }
            String seen = kept.get(key);
            String next = Long.toString(seen == null ? 1 : Long.parseLong(seen) + 1);
            kept.put(key, next);
            return next;
        }
        if (key == null) {
            return value;
        }
        String seen = kept.get(key);
        if (seen != null && Objects.equals(seen, value)) {
            return SKIP;
        }
        kept.put(key, value);
        return value;
    }

    /** A KStream join whose joiner sees the key: keyed_concat ({@code key/left-right}, a ValueJoinerWithKey, 3.0)
     *  or, with a global table, keys_concat ({@code streamKey/mappedKey/left-right}, a
     *  ValueJoinerWithStreamAndMappedKey, 4.4). */
    @SuppressWarnings("unchecked")
    static Object keyedJoin(Object left, Object right, String variant, String spec, Map<String, Object> node)
        throws Exception {
        KStream<String, String> l = (KStream<String, String>) left;
        org.apache.kafka.streams.kstream.ValueJoinerWithKey<String, String, String, String> joiner =
            (key, lv, rv) -> key + "/" + Oracle.JOINER.apply(lv, rv);
        if (right instanceof org.apache.kafka.streams.kstream.GlobalKTable) {
            org.apache.kafka.streams.kstream.GlobalKTable<String, String> r =
                (org.apache.kafka.streams.kstream.GlobalKTable<String, String>) right;
            Object selector = node.get("key_selector");
            org.apache.kafka.streams.kstream.KeyValueMapper<String, String, String> select = selector == null
                ? (key, value) -> key
                : (key, value) -> TopologyOracle.selectKey(Oracle.map(selector), key, value);
            if ("keys_concat".equals(spec)) {
                org.apache.kafka.streams.kstream.ValueJoinerWithStreamAndMappedKey<String, String, String, String, String>
                    both = (streamKey, mappedKey, lv, rv) -> streamKey + "/" + mappedKey + "/" + Oracle.JOINER.apply(lv, rv);
                return "inner".equals(variant) ? l.join(r, select, both) : l.leftJoin(r, select, both);
            }
            return "inner".equals(variant) ? l.join(r, select, joiner) : l.leftJoin(r, select, joiner);
        }
        if (right instanceof KStream) {
            org.apache.kafka.streams.kstream.JoinWindows windows = Oracle.joinWindows(Oracle.map(node.get("window")));
            KStream<String, String> r = (KStream<String, String>) right;
            org.apache.kafka.streams.kstream.StreamJoined<String, String, String> joined =
                org.apache.kafka.streams.kstream.StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
            switch (variant) {
                case "inner": return l.join(r, joiner, windows, joined);
                case "left": return l.leftJoin(r, joiner, windows, joined);
                default: return l.outerJoin(r, joiner, windows, joined);
            }
        }
        org.apache.kafka.streams.kstream.KTable<String, String> r = (org.apache.kafka.streams.kstream.KTable<String, String>) right;
        org.apache.kafka.streams.kstream.Joined<String, String, String> joined =
            org.apache.kafka.streams.kstream.Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
        if (node.get("grace_ms") != null) {
            joined = joined.withGracePeriod(java.time.Duration.ofMillis(((Number) node.get("grace_ms")).longValue()));
        }
        return "inner".equals(variant) ? l.join(r, joiner, joined) : l.leftJoin(r, joiner, joined);
    }

    /** A foreign-key join whose extractor reads the key too (KIP-1104's BiFunction, 4.0): the field at path of the
     *  value, else the key (kjoin's {key_or_field: path}). */
    static Object foreignKeyWithKey(org.apache.kafka.streams.kstream.KTable<String, String> left,
                                    org.apache.kafka.streams.kstream.KTable<String, String> right, String variant,
                                    org.apache.kafka.streams.kstream.ValueJoiner<String, String, String> joiner,
                                    String path,
                                    org.apache.kafka.streams.kstream.Materialized<String, String,
                                        org.apache.kafka.streams.state.KeyValueStore<
                                            org.apache.kafka.common.utils.Bytes, byte[]>> store) {
        java.util.function.BiFunction<String, String, String> extractor = (key, value) -> {
            String found = TopologyOracle.field(value, path);
            return found != null ? found : key;
        };
        if (store != null) {  // Materialized.as(store): the result's store
            return "inner".equals(variant) ? left.join(right, extractor, joiner, store)
                : left.leftJoin(right, extractor, joiner, store);
        }
        return "inner".equals(variant) ? left.join(right, extractor, joiner) : left.leftJoin(right, extractor, joiner);
    }
}
