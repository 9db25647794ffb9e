package kjoin.oracle;

import java.util.Set;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.ProcessorWrapper;
import org.apache.kafka.streams.processor.api.WrappedFixedKeyProcessorSupplier;
import org.apache.kafka.streams.processor.api.WrappedProcessorSupplier;
import org.apache.kafka.streams.state.StoreBuilder;

/** {@link OrderLog} as Kafka 4.0+'s own hook (KIP-1112, {@code processor.wrapper.class}): Kafka wraps every
 *  processor of the topology it builds. Named by its class name only: older versions lack its interface. */
public final class OrderLogWrapper implements ProcessorWrapper {
    @Override
    public <KIn, VIn, KOut, VOut> WrappedProcessorSupplier<KIn, VIn, KOut, VOut> wrapProcessorSupplier(
        String name, ProcessorSupplier<KIn, VIn, KOut, VOut> supplier) {
        return new WrappedProcessorSupplier<>() {
            @Override
            public Set<StoreBuilder<?>> stores() {
                return supplier.stores();
            }

            @Override
            public Processor<KIn, VIn, KOut, VOut> get() {
                return OrderLog.logged(supplier.get());
            }
        };
    }

    @Override
    public <KIn, VIn, VOut> WrappedFixedKeyProcessorSupplier<KIn, VIn, VOut> wrapFixedKeyProcessorSupplier(
        String name, FixedKeyProcessorSupplier<KIn, VIn, VOut> supplier) {
        return new WrappedFixedKeyProcessorSupplier<>() {
            @Override
            public Set<StoreBuilder<?>> stores() {
                return supplier.stores();
            }

            @Override
            public FixedKeyProcessor<KIn, VIn, VOut> get() {
                return OrderLog.Fixed.logged(supplier.get());
            }
        };
    }
}
