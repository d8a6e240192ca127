package statebench.parity.kinds;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.co.IntervalJoinOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Flink's {@link IntervalJoinOperator} (what {@code left.intervalJoin(right).between(lo, hi)
 * .process(f)} runs, constructed with the same arguments), fed from ONE keyed stream of both
 * inputs' records in trace order: each record goes to {@code processElement1} (input 0, left) or
 * {@code processElement2} (input 1, right). Two real inputs would interleave as the network
 * delivers them, which no replay can reproduce; statebench reads the trace in its order. The
 * operator's watermark is the one the source computes over both inputs (the minimum of the two
 * inputs' bounded-out-of-orderness watermarks, as Flink's two-input operator combines them).
 */
public class ProbedIntervalJoinOperator<K> extends IntervalJoinOperator<K, KEvent, KEvent, Out>
        implements OneInputStreamOperator<KEvent, Out> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;

    public ProbedIntervalJoinOperator(long lowerBound, long upperBound, boolean lowerBoundInclusive,
            boolean upperBoundInclusive, TypeSerializer<KEvent> serializer, ProcessJoinFunction<KEvent, KEvent, Out> udf,
            Probe probe) {
        super(lowerBound, upperBound, lowerBoundInclusive, upperBoundInclusive, null, null, serializer, serializer, udf);
        this.probe = probe;
    }

    @Override
    public void open() throws Exception {
        probe.install(getKeyedStateBackend());
        super.open();
    }

    @Override
    public void processElement(StreamRecord<KEvent> element) throws Exception {
        probe.onElement(element.getTimestamp());
        if (element.getValue().input == 0) {
            processElement1(element);
        } else {
            processElement2(element);
        }
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
    public void onEventTime(InternalTimer<K, String> timer) throws Exception {
        probe.eventTimers++;
        super.onEventTime(timer);
    }
}
