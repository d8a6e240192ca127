package statebench.parity;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;

/**
 * Bounded out-of-orderness (max event time - bound - 1), emitted after every {@code every}-th
 * event and only when it moved forward: exactly where statebench's engine emits its watermarks
 * (it advances every 64 events instead of on Flink's 200 ms wall-clock timer, so that the state
 * traffic is the same run to run). No periodic emission.
 */
public class EveryNthEventWatermarks implements WatermarkGenerator<TraceEvent> {
    private final long outOfOrderness;
    private final long every;
    private long maxSeen = Long.MIN_VALUE;
    private long seen;
    private long emitted = Long.MIN_VALUE;

    public EveryNthEventWatermarks(long outOfOrderness, long every) {
        this.outOfOrderness = outOfOrderness;
        this.every = every;
    }

    @Override
    public void onEvent(TraceEvent event, long eventTimestamp, WatermarkOutput output) {
        maxSeen = Math.max(maxSeen, event.eventTime);
        seen++;
        if (seen % every == 0) {
            long wm = maxSeen - outOfOrderness - 1;
            if (wm > emitted) {
                emitted = wm;
                output.emitWatermark(new Watermark(wm));
            }
        }
    }

    @Override
    public void onPeriodicEmit(WatermarkOutput output) {}
}
