package statebench.parity;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The field report's ad frequency counter: keyBy(user); for each event and each window, +1 in
 * {@code window-stats} and a record in {@code timer-state} of what the event-time timer at
 * {@code eventTime + window} must decrement; the timer applies it.
 *
 * <p>The counters are the harness's: every MapState call the job makes, counted where it is made.
 */
public class FrequencyFunction extends KeyedProcessFunction<String, TraceEvent, Void> {
    private final List<String> labels;
    private final List<Long> windows;
    private final long timerStateTtlMs;

    transient MapState<String, AdsFrequencyStats> windowStats;
    transient MapState<Long, TimerDecrement> timerState;

    long events;
    long statsGets, statsPuts, statsDeletes;
    long timerStateGets, timerStatePuts, timerStateDeletes;
    long timersRegistered, timersFired, missingDecrements, negativeCounts;

    public FrequencyFunction(List<String> labels, List<Long> windows, long timerStateTtlMs) {
        this.labels = labels;
        this.windows = windows;
        this.timerStateTtlMs = timerStateTtlMs;
    }

    @Override
    public void open(Configuration parameters) {
        windowStats = getRuntimeContext().getMapState(
                new MapStateDescriptor<>("window-stats", Types.STRING,
                        TypeInformation.of(AdsFrequencyStats.class)));
        MapStateDescriptor<Long, TimerDecrement> timerStateDescriptor = new MapStateDescriptor<>(
                "timer-state", Types.LONG, TypeInformation.of(TimerDecrement.class));
        // Flink's default cleanup: in background, i.e. RocksDB's compaction filter. A TTL of 0:
        // none (a workload without timer-state-ttl).
        if (timerStateTtlMs > 0) {
            timerStateDescriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(timerStateTtlMs))
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                    .build());
        }
        timerState = getRuntimeContext().getMapState(timerStateDescriptor);
    }

    @Override
    public void processElement(TraceEvent event, Context ctx, Collector<Void> out) throws Exception {
        for (int i = 0; i < labels.size(); i++) {
            String label = labels.get(i);
            AdsFrequencyStats stats = windowStats.get(label);
            statsGets++;
            if (stats == null) {
                stats = new AdsFrequencyStats();
                stats.firstEventTime = event.eventTime;
                stats.lastEventTime = event.eventTime;
            }
            stats.count += 1;
            stats.lastEventTime = Math.max(stats.lastEventTime, event.eventTime);
            windowStats.put(label, stats);
            statsPuts++;

            long fireAt = event.eventTime + windows.get(i);
            TimerDecrement decrement = timerState.get(fireAt);
            timerStateGets++;
            if (decrement == null) {
                decrement = new TimerDecrement();
            }
            decrement.windows.merge(label, 1, Integer::sum);
            timerState.put(fireAt, decrement);
            timerStatePuts++;

            ctx.timerService().registerEventTimeTimer(fireAt);
            timersRegistered++;
        }
        events++;
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Void> out) throws Exception {
        if (ctx.timerService().currentWatermark() == Long.MAX_VALUE) {
            // Harness only: the end of the bounded input fires every remaining timer; statebench's
            // run ends without that final watermark, and the measurement was taken before it.
            return;
        }
        timersFired++;
        try {
            TimerDecrement decrement = timerState.get(timestamp);
            timerStateGets++;
            if (decrement == null) {
                missingDecrements++;
                return;
            }
            for (Map.Entry<String, Integer> e : decrement.windows.entrySet()) {
                AdsFrequencyStats stats = windowStats.get(e.getKey());
                statsGets++;
                if (stats == null) {
                    missingDecrements++;
                    continue;
                }
                stats.count -= e.getValue();
                if (stats.count < 0) {
                    negativeCounts++;
                }
                if (stats.count <= 0) {
                    windowStats.remove(e.getKey());
                    statsDeletes++;
                } else {
                    windowStats.put(e.getKey(), stats);
                    statsPuts++;
                }
            }
        } finally {
            timerState.remove(timestamp);
            timerStateDeletes++;
        }
    }
}
