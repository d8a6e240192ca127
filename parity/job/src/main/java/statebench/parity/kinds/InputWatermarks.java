package statebench.parity.kinds;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;

/**
 * Bounded out-of-orderness per input (max event time - bound - 1), combined as a two-input
 * operator combines its inputs' watermarks (the minimum; an input without records holds it at
 * Long.MIN_VALUE), emitted after every {@code every}-th record and only when it moved forward:
 * where statebench's engine emits its watermarks (parity/EveryNthEventWatermarks for one input).
 */
public class InputWatermarks implements WatermarkGenerator<KEvent> {
    private final long outOfOrderness;
    private final long every;
    private final int inputs;
    private final long[] maxSeen;
    private long seen;
    private long emitted = Long.MIN_VALUE;

    public InputWatermarks(long outOfOrderness, long every, int inputs) {
        this.outOfOrderness = outOfOrderness;
        this.every = every;
        this.inputs = inputs;
        this.maxSeen = new long[inputs];
        java.util.Arrays.fill(maxSeen, Long.MIN_VALUE);
    }

    @Override
    public void onEvent(KEvent event, long eventTimestamp, WatermarkOutput output) {
        int i = inputs == 1 ? 0 : event.input;
        maxSeen[i] = Math.max(maxSeen[i], event.time);
        seen++;
        if (seen % every == 0) {
            long min = Long.MAX_VALUE;
            for (long m : maxSeen) {
                min = Math.min(min, m);
            }
            if (min == Long.MIN_VALUE) {
                return;
            }
            long wm = min - outOfOrderness - 1;
            if (wm > emitted) {
                emitted = wm;
                output.emitWatermark(new Watermark(wm));
            }
        }
    }

    @Override
    public void onPeriodicEmit(WatermarkOutput output) {}
}
