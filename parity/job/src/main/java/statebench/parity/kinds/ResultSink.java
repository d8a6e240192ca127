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

    /** Records each chained operator emitted, by its label prefix ("" for a job's only operator). */
    static final Map<String, Long> EMITTED = new TreeMap<>();

    /** dedup-first, dedup-last, aggregate, window, join, process. */
    private final String mode;
    /** A chained operator's label prefix ({@code op<i>.}, DESIGN-CHAIN), "" for a job's only operator. */
    private final String prefix;

    public ResultSink(String mode) {
        this(mode, "");
    }

    public ResultSink(String mode, String prefix) {
        this.mode = mode;
        this.prefix = prefix;
    }

    @Override
    public void invoke(Out o, Context context) {
        synchronized (RESULTS) {
            records++;
            EMITTED.merge(prefix, 1L, Long::sum);
            Map<String, Long> all = RESULTS.computeIfAbsent(o.key, k -> new TreeMap<>());
            Map<String, Long> r = prefix.isEmpty() ? all : new Prefixed(all, prefix);
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

    /** A key's results seen through a label prefix (put, merge). */
    private static final class Prefixed extends java.util.AbstractMap<String, Long> {
        private final Map<String, Long> inner;
        private final String prefix;

        Prefixed(Map<String, Long> inner, String prefix) {
            this.inner = inner;
            this.prefix = prefix;
        }

        @Override
        public Long put(String label, Long value) {
            return inner.put(prefix + label, value);
        }

        @Override
        public Long merge(String label, Long value,
                java.util.function.BiFunction<? super Long, ? super Long, ? extends Long> f) {
            return inner.merge(prefix + label, value, f);
        }

        @Override
        public java.util.Set<Map.Entry<String, Long>> entrySet() {
            throw new UnsupportedOperationException("write-only view");
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
