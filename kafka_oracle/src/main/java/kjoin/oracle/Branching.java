package kjoin.oracle;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Predicate;

/** A stream split into branches: split() (KIP-418, 2.8) and the legacy branch (before 4.0). A class of its own, apart
 *  from Processors' processValues (3.3), so that a Kafka 2.8 judge loads no class its jar does not have. */
final class Branching {
    private Branching() {
    }

    /** split(Named.as(name)) with a Branched.as branch per {name, filter} entry and the {name, default} one. */
    @SuppressWarnings("unchecked")
    static Map<String, KStream<String, String>> split(KStream<String, String> stream, String name,
                                                      List<Object> entries) {
        BranchedKStream<String, String> split = stream.split(Named.as(name));
        for (Object item : entries) {
            Map<String, Object> entry = Oracle.map(item);
            String branch = (String) entry.get("name");
            if (Boolean.TRUE.equals(entry.get("default"))) {
                return split.defaultBranch(Branched.as(branch));
            }
            Map<String, Object> spec = Oracle.map(entry.get("filter"));
            split = split.branch((key, value) -> TopologyOracle.keep(spec, key, value), Branched.as(branch));
        }
        return split.noDefaultBranch();
    }

    /** The legacy KStream.branch(Named, Predicate...) (removed in 4.0, so called by reflection): its children are
     *  <name>-predicate-<i>. */
    @SuppressWarnings("unchecked")
    static Map<String, KStream<String, String>> legacyBranch(KStream<String, String> stream, String name,
                                                             List<Object> specs) throws Exception {
        Predicate<String, String>[] predicates = new Predicate[specs.size()];
        for (int i = 0; i < specs.size(); i++) {
            Map<String, Object> spec = Oracle.map(specs.get(i));
            predicates[i] = (key, value) -> TopologyOracle.keep(spec, key, value);
        }
        Object made = KStream.class.getMethod("branch", Named.class, Predicate[].class)
            .invoke(stream, Named.as(name), predicates);
        Map<String, KStream<String, String>> branches = new HashMap<>();
        KStream<String, String>[] streams = (KStream<String, String>[]) made;
        for (int i = 0; i < streams.length; i++) {
            branches.put(name + "-predicate-" + i, streams[i]);
        }
        return branches;
    }
}
