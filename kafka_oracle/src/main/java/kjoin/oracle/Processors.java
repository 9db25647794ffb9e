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
}
