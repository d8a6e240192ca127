package statebench.parity.kinds;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.co.IntervalJoinOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Flink's {@link IntervalJoinOperator} on its two real inputs ({@code left.keyBy().intervalJoin(
 * right.keyBy()).between(lo, hi).process(f)} builds it with these arguments and runs it in a
 * {@code TwoInputStreamTask}), measured by a {@link Probe}. Each input has its own watermark;
 * the operator's is their minimum ({@code processWatermark1/2}), which reaches
 * {@link #processWatermark}.
 *
 * <p>{@code startDelayMs}: open() waits this long before the task reads its inputs, so the
 * sources have filled both inputs' network buffers: the task then reads with both inputs backed
 * up (one element of each in turn), statebench's {@code read: alternate}.
 */
public class ProbedTwoInputIntervalJoin<K> extends IntervalJoinOperator<K, Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;
    private final long startDelayMs;

    public ProbedTwoInputIntervalJoin(long lowerBound, long upperBound, boolean lowerBoundInclusive,
            boolean upperBoundInclusive, TypeSerializer<Tuple3<String, Long, byte[]>> serializer,
            ProcessJoinFunction<Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> udf,
            Probe probe, long startDelayMs) {
        super(lowerBound, upperBound, lowerBoundInclusive, upperBoundInclusive, null, null, serializer,
                serializer.duplicate(), udf);
        this.probe = probe;
        this.startDelayMs = startDelayMs;
    }

    @Override
    public void open() throws Exception {
        probe.install(getKeyedStateBackend());
        super.open();
        if (startDelayMs > 0) {
            Thread.sleep(startDelayMs);
        }
    }

    @Override
    public void close() throws Exception {
        probe.uninstall(getKeyedStateBackend());
        super.close();
    }

    @Override
    public void processElement1(StreamRecord<Tuple3<String, Long, byte[]>> record) throws Exception {
        probe.onElement(record.getTimestamp());
        super.processElement1(record);
    }

    @Override
    public void processElement2(StreamRecord<Tuple3<String, Long, byte[]>> record) throws Exception {
        probe.onElement(record.getTimestamp());
        super.processElement2(record);
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
