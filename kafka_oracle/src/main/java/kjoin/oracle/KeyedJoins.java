package kjoin.oracle;

import java.util.Map;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.kstream.KStream;

/** The joins whose functions see the key: a ValueJoinerWithKey (KIP-149, 3.0), a ValueJoinerWithStreamAndMappedKey
 *  (KIP-1340, 4.4) and a foreign-key extractor that reads the key (KIP-1104, 4.0). A class of its own, apart from
 *  Processors' processValues (FixedKeyProcessor, 3.3), so that a Kafka 3.0 to 3.2 judge loads no class its jar does
 *  not have. */
final class KeyedJoins {
    private KeyedJoins() {
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
        // the key by its text: a windowed table's Windowed key as [key@start/end], as kjoin's key_or_field reads it
        java.util.function.BiFunction<Object, String, String> extractor = (key, value) -> {
            String found = TopologyOracle.field(value, path);
            return found != null ? found : TopologyOracle.keyText(key);
        };
        if (store != null) {  // Materialized.as(store): the result's store
            return "inner".equals(variant) ? left.join(right, extractor, joiner, store)
                : left.leftJoin(right, extractor, joiner, store);
        }
        return "inner".equals(variant) ? left.join(right, extractor, joiner) : left.leftJoin(right, extractor, joiner);
    }
}
