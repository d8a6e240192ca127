package statebench.parity.kinds;

import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/** Flink's {@link KeyedProcessOperator} (what {@code keyBy().process(f)} runs), measured by a {@link Probe}. */
public class ProbedKeyedProcessOperator<K, IN, OUT> extends KeyedProcessOperator<K, IN, OUT> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;

    public ProbedKeyedProcessOperator(KeyedProcessFunction<K, IN, OUT> function, Probe probe) {
        super(function);
        this.probe = probe;
    }

    @Override
    public void open() throws Exception {
        probe.install(getKeyedStateBackend());
        super.open();
    }

    @Override
    public void close() throws Exception {
        probe.uninstall(getKeyedStateBackend());
        super.close();
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        probe.onElement(element.getTimestamp(), element.getValue());
        super.processElement(element);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        probe.onWatermark(mark);
        super.processWatermark(mark);
        if (mark.getTimestamp() == Long.MAX_VALUE) {
            probe.measure(getKeyedStateBackend());
        }
    }

    @Override
    public void onEventTime(InternalTimer<K, VoidNamespace> timer) throws Exception {
        probe.eventTimers++;
        super.onEventTime(timer);
    }

    @Override
    public void onProcessingTime(InternalTimer<K, VoidNamespace> timer) throws Exception {
        probe.processingTimers++;
        super.onProcessingTime(timer);
    }
}
