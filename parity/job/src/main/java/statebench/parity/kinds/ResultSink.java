package statebench.parity.kinds;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;

/**
 * The results per (key, label) as DESIGN-19 defines them, kept from what the kind's operator
 * emits (the latest value per key and label). Everything runs in this JVM (MiniCluster,
 * parallelism 1), so the table is static and written out after the job.
 */
@SuppressWarnings("deprecation")
public class ResultSink implements SinkFunction<Out> {
    private static final long serialVersionUID = 1L;

    /** key -> label -> value, in the order the job wrote them. */
    static final Map<String, Map<String, Long>> RESULTS = new TreeMap<>();
    static long records;

    /** dedup-first, dedup-last, aggregate, window, join, process. */
    private final String mode;

    public ResultSink(String mode) {
        this.mode = mode;
    }

    @Override
    public void invoke(Out o, Context context) {
        synchronized (RESULTS) {
            records++;
            Map<String, Long> r = RESULTS.computeIfAbsent(o.key, k -> new TreeMap<>());
            switch (mode) {
                case "dedup-first":
                    // a = the emitted record's event time.
                    r.merge("emitted", 1L, Long::sum);
                    break;
                case "dedup-last":
                    r.merge("emitted", 1L, Long::sum);
                    r.put("last-time", o.a);
                    break;
                case "aggregate":
                    // a = count, b = sum of value sizes of the current accumulator.
                    r.put("count", o.a);
                    r.put("sum", o.b);
                    break;
                case "window":
                    // a = start, b = end, c = element count, d = sum of value sizes.
                    r.merge("fired", 1L, Long::sum);
                    r.merge("elements", o.c, Long::sum);
                    r.merge("digest", Mix.mix(o.a, o.b, o.c, o.d), Long::sum);
                    break;
                case "join":
                    // a = left time, b = right time, c = left value size, d = right value size.
                    r.merge("pairs", 1L, Long::sum);
                    r.merge("digest", Mix.mix(o.a, o.b, o.c, o.d), Long::sum);
                    break;
                case "process":
                    // a = 1 for an element, 0 for a timer; b = the digest term it read.
                    r.merge("events", o.a, Long::sum);
                    r.merge("digest", o.b, Long::sum);
                    break;
                default:
                    throw new IllegalStateException("unknown result mode " + mode);
            }
        }
    }

    /** `key,label,value` lines, sorted. */
    static void write(Path path) throws IOException {
        List<String> lines = new ArrayList<>();
        synchronized (RESULTS) {
            RESULTS.forEach((key, labels) -> labels.forEach((label, v) -> lines.add(key + "," + label + "," + v)));
        }
        lines.sort(null);
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        Files.writeString(path, sb.toString(), StandardCharsets.UTF_8);
    }
}
