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
 * <p>open() waits until the job's {@code sources} have ended (at most {@code startDelayMs}), so
 * both inputs' network buffers hold everything: the task then reads with both inputs backed up
 * (one element of each in turn), statebench's {@code read: alternate}.
 */
public class ProbedTwoInputIntervalJoin<K> extends IntervalJoinOperator<K, Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;
    private final long startDelayMs;
    private final int sources;

    public ProbedTwoInputIntervalJoin(long lowerBound, long upperBound, boolean lowerBoundInclusive,
            boolean upperBoundInclusive, TypeSerializer<Tuple3<String, Long, byte[]>> serializer,
            ProcessJoinFunction<Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> udf,
            Probe probe, long startDelayMs, int sources) {
        super(lowerBound, upperBound, lowerBoundInclusive, upperBoundInclusive, null, null, serializer,
                serializer.duplicate(), udf);
        this.probe = probe;
        this.startDelayMs = startDelayMs;
        this.sources = sources;
    }

    @Override
    public void open() throws Exception {
        probe.install(getKeyedStateBackend());
        super.open();
        // Until the sources have ended (in a local MiniCluster they share this JVM), at most
        // startDelayMs, then a moment for their last buffers to be handed over: 200 ms was
        // once too short on a busy 2-core CI machine (the task took one input's last buffers
        // late: the same results, 66 fewer iterator nexts than statebench's alternate order).
        long deadline = System.nanoTime() + startDelayMs * 1_000_000L;
        while (KindsSource.ENDED.get() < sources && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        if (startDelayMs > 0) {
            Thread.sleep(1000);
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
