package kjoin.oracle;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;

/**
 * A table-table join result's old values ({@code send_old_values: true}): what the output topic never shows.
 *
 * <p>A KTable forwards {@code Change(newValue, oldValue)} to its children; {@code toStream()} keeps only the new
 * value. kjoin's {@code send_old_values} is Kafka's {@code KTableImpl.enableSendingOldValues}, which the DSL calls when
 * a downstream operator needs the old value (a {@code groupBy}, an outer table-table join). The harness calls it on
 * the join's result and hangs a processor of its own under the result's node, beside {@code toStream()}: it writes
 * every {@code Change} as the JSON {@code [newValue, oldValue]} to the topic {@link #TOPIC}. The new Processor API it
 * uses exists from Kafka 2.7 (KIP-478), so older judges refuse such a scenario.
 */
final class OldValues {
    static final String TOPIC = "old-values";
    private static final String NODE = "KJOIN-ORACLE-OLD-VALUES";

    private OldValues() {
    }

    /** Ask {@code table} to send old values, as a downstream operator that needs them would. */
    static void enable(KTable<String, String> table) throws Exception {
        if (!Oracle.atLeast(2, 7)) {
            throw new IllegalArgumentException("send_old_values: the harness reads old values through the Processor "
                + "API of Kafka 2.7+ (KIP-478)");
        }
        try {  // 2.6+: enableSendingOldValues(boolean forceMaterialization)
            Method method = table.getClass().getMethod("enableSendingOldValues", boolean.class);
            method.invoke(table, true);
        } catch (NoSuchMethodException older) {
            table.getClass().getMethod("enableSendingOldValues").invoke(table);
        }
    }

    /** The processor node whose children receive {@code table}'s {@code Change}s (AbstractStream's name). */
    static String node(KTable<String, String> table) throws Exception {
        for (Class<?> type = table.getClass(); type != null; type = type.getSuperclass()) {
            try {
                Field name = type.getDeclaredField("name");
                name.setAccessible(true);
                return (String) name.get(table);
            } catch (NoSuchFieldException notHere) {
                // look in the superclass
            }
        }
        throw new IllegalStateException("no processor name on " + table.getClass());
    }

    /** Hang the observer under {@code parent} in the built {@code topology}, writing to {@link #TOPIC}. */
    static void attach(Topology topology, String parent) {
        topology.addProcessor(NODE, Observer::new, parent);
        topology.addSink(NODE + "-SINK", TOPIC, new StringSerializer(), new StringSerializer(), NODE);
    }

    /** Writes each {@code Change(newValue, oldValue)} it receives as {@code [newValue, oldValue]}. */
    static final class Observer implements Processor<String, Object, String, String> {
        private ProcessorContext<String, String> context;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, Object> record) {
            List<Object> pair = new ArrayList<>();
            pair.add(field(record.value(), "newValue"));
            pair.add(field(record.value(), "oldValue"));
            context.forward(record.withValue(Json.write(pair)));
        }

        private static Object field(Object change, String name) {
            try {
                return change.getClass().getField(name).get(change);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("not a Change: " + change, e);
            }
        }
    }
}
