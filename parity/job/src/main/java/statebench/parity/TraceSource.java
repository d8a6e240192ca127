package statebench.parity;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.functions.source.SourceFunction;

/**
 * Emits the trace's events in file order, then ends (Flink then sends the final maximum watermark).
 *
 * <p>Optionally paced ({@code eventsPerSecond} &gt; 0: at most that many events a second, in
 * batches of a tenth of a second) and held open after the last event ({@code holdMs} &gt; 0: the
 * source then emits nothing more, and neither ends nor advances the watermark, for that long, so
 * the job, its RocksDB instance and its metrics stay alive; a cancel ends the hold).
 * parity/rest-evidence uses both to read Flink's RocksDB native metrics from a running job:
 * Flink updates those gauges every 5 s, first 5–10 s after they are registered.
 */
@SuppressWarnings("deprecation")
public class TraceSource implements SourceFunction<TraceEvent> {
    private static final long serialVersionUID = 1L;
    private final String path;
    private final long eventsPerSecond;
    private final long holdMs;
    private volatile boolean running = true;

    public TraceSource(String path) {
        this(path, 0, 0);
    }

    public TraceSource(String path, long eventsPerSecond, long holdMs) {
        this.path = path;
        this.eventsPerSecond = eventsPerSecond;
        this.holdMs = holdMs;
    }

    /**
     * The trace: CSV {@code user,event_time[,partition]}; the job keys each record by the
     * trace's own key string, as statebench's trace replay does (docs/trace.md).
     */
    static List<TraceEvent> read(String path) throws IOException {
        List<TraceEvent> events = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(path), StandardCharsets.UTF_8)) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#") || line.startsWith("user,")) {
                continue;
            }
            String[] f = line.split(",");
            events.add(new TraceEvent(f[0].trim(), Long.parseLong(f[1].trim())));
        }
        return events;
    }

    @Override
    public void run(SourceContext<TraceEvent> ctx) throws IOException, InterruptedException {
        long batch = Math.max(1, eventsPerSecond / 10);
        long started = System.nanoTime();
        long emitted = 0;
        for (TraceEvent e : read(path)) {
            if (!running) {
                return;
            }
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(e);
            }
            emitted++;
            if (eventsPerSecond > 0 && emitted % batch == 0) {
                // Sleep until this many events are due.
                long dueNanos = emitted * 1_000_000_000L / eventsPerSecond;
                long aheadMs = (dueNanos - (System.nanoTime() - started)) / 1_000_000L;
                if (aheadMs > 0) {
                    Thread.sleep(aheadMs);
                }
            }
        }
        long holdUntil = System.currentTimeMillis() + holdMs;
        while (running && System.currentTimeMillis() < holdUntil) {
            Thread.sleep(Math.min(100, Math.max(1, holdUntil - System.currentTimeMillis())));
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}
