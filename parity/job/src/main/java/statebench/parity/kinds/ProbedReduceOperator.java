package statebench.parity.kinds;

import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.operators.StreamGroupedReduceOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Flink's {@link StreamGroupedReduceOperator}, what {@code keyBy().reduce(f)} runs (its ValueState
 * {@code _op_state}: get, reduce, put per element), measured by a {@link Probe}.
 */
public class ProbedReduceOperator<IN> extends StreamGroupedReduceOperator<IN> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;

    public ProbedReduceOperator(ReduceFunction<IN> reducer, TypeSerializer<IN> serializer, Probe probe) {
        super(reducer, serializer);
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
        probe.onElement(element.getTimestamp());
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
}
