package kjoin.oracle;

import java.util.Map;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The names a document gives Kafka's stores and repartition topics: {@code store} (Materialized.as, or
 * StreamJoined.withStoreName for a stream-stream join) and {@code as} (Grouped.as, Repartitioned.as). Kafka derives
 * from them the names describe() lists (a stream-stream join's {@code <store>-this-join-store}, an aggregate's
 * {@code <store>-repartition}); kjoin's describe() must list the same (tests/test_topology_store_names.py).
 */
final class Naming {
    private Naming() {
    }

    static String store(Map<String, Object> node) {
        return (String) node.get("store");
    }

    /** Materialized.with(serdes), or Materialized.as(store).with(serdes) when the node names its store. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static <V> Materialized<String, V, ?> materialized(Map<String, Object> node, Serde<V> values) {
        String store = store(node);
        if (store == null) {
            return (Materialized) Materialized.with(Serdes.String(), values);
        }
        return (Materialized) Materialized.<String, V, KeyValueStore<Bytes, byte[]>>as(store)
            .withKeySerde(Serdes.String()).withValueSerde(values);
    }

    static StreamJoined<String, String, String> streamJoined(Map<String, Object> node) {
        StreamJoined<String, String, String> joined =
            StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String());
        return store(node) == null ? joined : joined.withStoreName(store(node));
    }

    static Grouped<String, String> grouped(Map<String, Object> node) {
        Grouped<String, String> grouped = Grouped.with(Serdes.String(), Serdes.String());
        return node.get("as") == null ? grouped : grouped.withName((String) node.get("as"));
    }

    static Repartitioned<String, String> repartitioned(Map<String, Object> node) {
        Repartitioned<String, String> repartitioned = Repartitioned.with(Serdes.String(), Serdes.String());
        return node.get("as") == null ? repartitioned : repartitioned.withName((String) node.get("as"));
    }
}
