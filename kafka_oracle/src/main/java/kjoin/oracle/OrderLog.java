package kjoin.oracle;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.StoreBuilder;

/**
 * The order in which each task processes its records, for {@link BrokerHarness}: every processor of the topology is
 * wrapped in one that logs the record (its context's topic, partition, offset) before the processor runs; the first
 * processor a record reaches logs it, the others see it again and are ignored.
 *
 * <p>How the processors get wrapped depends on the version: Kafka 4.0+ wraps them itself, given a
 * {@code ProcessorWrapper} ({@link OrderLogWrapper}, KIP-1112; named by its class name so that this class loads on
 * versions without the interface). Before 4.0 there is no such hook: {@link #wrapBuilt} replaces the supplier of every
 * processor of the built topology (its {@code InternalTopologyBuilder}'s node factories) before the application
 * starts, so each task's processors are the same wrapped processors as on 4.0+. Nothing else changes: the topology,
 * its names, stores and repartition topics are Kafka's own.
 */
final class OrderLog {
    private OrderLog() {
    }

    /** Whether this version has {@code ProcessorWrapper} (Kafka 4.0+). */
    static final boolean WRAPPER_API = present("org.apache.kafka.streams.processor.api.ProcessorWrapper");

    private static boolean present(String name) {
        try {
            Class.forName(name, false, OrderLog.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException absent) {
            return false;
        }
    }

    static <KIn, VIn, KOut, VOut> Processor<KIn, VIn, KOut, VOut> logged(Processor<KIn, VIn, KOut, VOut> inner) {
        return new Processor<>() {
            ProcessorContext<KOut, VOut> context;

            @Override
            public void init(ProcessorContext<KOut, VOut> context) {
                this.context = context;
                inner.init(context);
            }

            @Override
            public void process(Record<KIn, VIn> record) {
                BrokerHarness.saw(context.taskId(), context.recordMetadata());
                inner.process(record);
            }

            @Override
            public void close() {
                inner.close();
            }
        };
    }

    static <KIn, VIn, KOut, VOut> ProcessorSupplier<KIn, VIn, KOut, VOut> logged(
        ProcessorSupplier<KIn, VIn, KOut, VOut> supplier) {
        return new ProcessorSupplier<>() {
            @Override
            public Set<StoreBuilder<?>> stores() {
                return supplier.stores();
            }

            @Override
            public Processor<KIn, VIn, KOut, VOut> get() {
                return logged(supplier.get());
            }
        };
    }

    /** The fixed-key processors (Kafka 3.3+): a class of its own, loaded only where they exist. */
    static final class Fixed {
        private Fixed() {
        }

        static <KIn, VIn, VOut> FixedKeyProcessor<KIn, VIn, VOut> logged(FixedKeyProcessor<KIn, VIn, VOut> inner) {
            return new FixedKeyProcessor<>() {
                FixedKeyProcessorContext<KIn, VOut> context;

                @Override
                public void init(FixedKeyProcessorContext<KIn, VOut> context) {
                    this.context = context;
                    inner.init(context);
                }

                @Override
                public void process(FixedKeyRecord<KIn, VIn> record) {
                    BrokerHarness.saw(context.taskId(), context.recordMetadata());
                    inner.process(record);
                }

                @Override
                public void close() {
                    inner.close();
                }
            };
        }

        static <KIn, VIn, VOut> FixedKeyProcessorSupplier<KIn, VIn, VOut> logged(
            FixedKeyProcessorSupplier<KIn, VIn, VOut> supplier) {
            return new FixedKeyProcessorSupplier<>() {
                @Override
                public Set<StoreBuilder<?>> stores() {
                    return supplier.stores();
                }

                @Override
                public FixedKeyProcessor<KIn, VIn, VOut> get() {
                    return logged(supplier.get());
                }
            };
        }
    }

    /** Wraps every processor of {@code topology} (built, not yet running) in place: Kafka before 4.0. A topology
     *  whose processors cannot be found this way is refused rather than run without its order. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void wrapBuilt(Topology topology) {
        int wrapped = 0;
        try {
            Object internal = field(Topology.class, "internalTopologyBuilder").get(topology);
            Map<String, Object> factories = (Map<String, Object>) field(internal.getClass(), "nodeFactories").get(internal);
            for (Object factory : factories.values()) {
                String kind = factory.getClass().getSimpleName();
                if (!kind.equals("ProcessorNodeFactory") && !kind.equals("FixedKeyProcessorNodeFactory")) {
                    continue;  // sources and sinks: Kafka's own wrapper leaves them too
                }
                Field supplier = field(factory.getClass(), "supplier");
                Object inner = supplier.get(factory);
                if (inner instanceof ProcessorSupplier) {
                    supplier.set(factory, logged((ProcessorSupplier) inner));
                } else {
                    supplier.set(factory, Fixed.logged((FixedKeyProcessorSupplier) inner));
                }
                wrapped++;
            }
        } catch (ReflectiveOperationException | RuntimeException error) {
            throw new IllegalStateException("cannot log the processing order on this Kafka version: its topology "
                + "builder has no node factories with processor suppliers (" + error + ")", error);
        }
        if (wrapped == 0) {
            throw new IllegalStateException("cannot log the processing order: the built topology has no processors");
        }
    }

    private static Field field(Class<?> owner, String name) throws NoSuchFieldException {
        for (Class<?> type = owner; type != null; type = type.getSuperclass()) {
            try {
                Field found = type.getDeclaredField(name);
                found.setAccessible(true);
                return found;
            } catch (NoSuchFieldException next) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(owner.getName() + "." + name);
    }
}
