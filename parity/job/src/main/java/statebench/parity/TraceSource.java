package statebench.parity;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
     * The trace: CSV {@code user,event_time[,partition]}; keys are {@code user-N}, N dense in
     * order of first appearance, as statebench's trace loader numbers them.
     */
    static List<TraceEvent> read(String path) throws IOException {
        List<TraceEvent> events = new ArrayList<>();
        Map<String, Integer> ids = new HashMap<>();
        for (String line : Files.readAllLines(Path.of(path), StandardCharsets.UTF_8)) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#") || line.startsWith("user,")) {
                continue;
            }
            String[] f = line.split(",");
            int id = ids.computeIfAbsent(f[0].trim(), k -> ids.size());
            events.add(new TraceEvent("user-" + id, Long.parseLong(f[1].trim())));
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
