package statebench.parity.kinds;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.functions.source.SourceFunction;

/** Emits a trace's records in file order, then ends (Flink then sends the final maximum watermark). */
@SuppressWarnings("deprecation")
public class KindsSource implements SourceFunction<KEvent> {
    private static final long serialVersionUID = 1L;
    private final String path;
    /** Emit only this input's records (-1: every record). */
    private final int input;
    private volatile boolean running = true;
    /** Sources of this JVM that have emitted their last record (a local MiniCluster's). */
    static final java.util.concurrent.atomic.AtomicInteger ENDED = new java.util.concurrent.atomic.AtomicInteger();

    public KindsSource(String path) {
        this(path, -1);
    }

    /** A source of only {@code input}'s records (a join's source per input), in file order. */
    public KindsSource(String path, int input) {
        this(path, input, 0);
    }

    /** Records per second it emits at most (0: as fast as the job takes them). */
    private final long eventsPerSecond;

    /** Paced to {@code eventsPerSecond} (the workload's {@code rate:}; 0: unpaced). */
    public KindsSource(String path, int input, long eventsPerSecond) {
        this.path = path;
        this.input = input;
        this.eventsPerSecond = eventsPerSecond;
    }

    /**
     * Trace v2: CSV {@code key,event_time,partition,value_size,input} (v1's {@code key,event_time[,partition]}
     * read with value size 0 and input 0). The job keys each record by the trace's own key string,
     * as statebench's trace replay does (docs/trace.md).
     */
    static List<KEvent> read(String path) throws IOException {
        List<KEvent> events = new ArrayList<>();
        int number = 0;
        for (String line : Files.readAllLines(Path.of(path), StandardCharsets.UTF_8)) {
            number++;
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#") || line.startsWith("user,") || line.startsWith("key,")) {
                continue;
            }
            String[] f = line.split(",");
            if (f.length < 2) {
                throw new IOException(path + " line " + number + ": expected key,event_time[,partition,value_size,input]");
            }
            int partition = f.length > 2 ? Integer.parseInt(f[2].trim()) : 0;
            int size = f.length > 3 ? Integer.parseInt(f[3].trim()) : 0;
            int input = f.length > 4 ? Integer.parseInt(f[4].trim()) : 0;
            events.add(new KEvent(f[0].trim(), Long.parseLong(f[1].trim()), partition, size, input));
        }
        return events;
    }

    @Override
    public void run(SourceContext<KEvent> ctx) throws IOException, InterruptedException {
        long batch = Math.max(1, eventsPerSecond / 10);
        long started = System.nanoTime();
        long emitted = 0;
        for (KEvent e : read(path)) {
            if (!running) {
                return;
            }
            if (input >= 0 && e.input != input) {
                continue;
            }
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(e);
            }
            emitted++;
            if (eventsPerSecond > 0 && emitted % batch == 0) {
                // Sleep until this many records are due.
                long aheadMs = (emitted * 1_000_000_000L / eventsPerSecond - (System.nanoTime() - started)) / 1_000_000L;
                if (aheadMs > 0) {
                    Thread.sleep(aheadMs);
                }
            }
        }
        ENDED.incrementAndGet();
    }

    @Override
    public void cancel() {
        running = false;
    }
}
