package statebench.parity.kinds;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple3;
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
 * Each record becomes the element the join helper's job maps it to (key, event time, payload),
 * in the element's own StreamRecord with the record's timestamp.
 */
public class ProbedIntervalJoinOperator<K> extends IntervalJoinOperator<K, Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out>
        implements OneInputStreamOperator<KEvent, Out> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;

    public ProbedIntervalJoinOperator(long lowerBound, long upperBound, boolean lowerBoundInclusive,
            boolean upperBoundInclusive, TypeSerializer<Tuple3<String, Long, byte[]>> serializer,
            ProcessJoinFunction<Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> udf,
            Probe probe) {
        super(lowerBound, upperBound, lowerBoundInclusive, upperBoundInclusive, null, null, serializer,
                serializer.duplicate(), udf);
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
    public void processElement(StreamRecord<KEvent> element) throws Exception {
        probe.onElement(element.getTimestamp());
        // The element each side's map makes of its record (key, event time, payload).
        KEvent e = element.getValue();
        StreamRecord<Tuple3<String, Long, byte[]>> record =
                new StreamRecord<>(Functions.record(e), element.getTimestamp());
        if (e.input == 0) {
            processElement1(record);
        } else {
            processElement2(record);
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
