package statebench.parity;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.functions.source.SourceFunction;

/** Emits the trace's events in file order, then ends (Flink then sends the final maximum watermark). */
@SuppressWarnings("deprecation")
public class TraceSource implements SourceFunction<TraceEvent> {
    private static final long serialVersionUID = 1L;
    private final String path;
    private volatile boolean running = true;

    public TraceSource(String path) {
        this.path = path;
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
    public void run(SourceContext<TraceEvent> ctx) throws IOException {
        for (TraceEvent e : read(path)) {
            if (!running) {
                return;
            }
            synchronized (ctx.getCheckpointLock()) {
                ctx.collect(e);
            }
        }
    }

    @Override
    public void cancel() {
        running = false;
    }
}
