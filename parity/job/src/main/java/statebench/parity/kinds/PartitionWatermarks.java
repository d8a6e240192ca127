package statebench.parity.kinds;

import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;

/**
 * A source's watermark as a Kafka source makes it from per-split watermarks: per partition
 * bounded out-of-orderness (max event time - bound - 1), the minimum over the source's
 * partitions (Long.MIN_VALUE until each has had a record), emitted after every {@code every}-th
 * record of this source and only when it moved forward: where statebench's valve emits a
 * source's watermark (engine/two_inputs.rs).
 */
public class PartitionWatermarks implements WatermarkGenerator<KEvent> {
    private final long outOfOrderness;
    private final long every;
    private final Map<Integer, Long> maxSeen = new HashMap<>();
    private long seen;
    private long emitted = Long.MIN_VALUE;

    /** {@code partitions}: the partitions this source reads. */
    public PartitionWatermarks(long outOfOrderness, long every, int[] partitions) {
        this.outOfOrderness = outOfOrderness;
        this.every = every;
        for (int p : partitions) {
            maxSeen.put(p, Long.MIN_VALUE);
        }
    }

    @Override
    public void onEvent(KEvent event, long eventTimestamp, WatermarkOutput output) {
        maxSeen.merge(event.partition, event.time, Math::max);
        seen++;
        if (seen % every != 0) {
            return;
        }
        long min = Long.MAX_VALUE;
        for (long m : maxSeen.values()) {
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

    @Override
    public void onPeriodicEmit(WatermarkOutput output) {}
}
