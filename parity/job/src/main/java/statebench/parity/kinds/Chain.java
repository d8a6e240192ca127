package statebench.parity.kinds;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A chain's figures (DESIGN-CHAIN): every operator's RocksDB instance measured by its own
 * {@link Probe} ({@code flink-op<i>.json}), summed into {@code flink.json} as statebench's report
 * sums its instances: tickers, histogram counts and state calls over the instances; events and
 * watermarks as the chain's first operator read them; timers fired by every operator; column
 * families named {@code op<i>/<name>}; each operator's own figures under {@code operators}.
 */
final class Chain {
    private Chain() {}

    @SuppressWarnings("unchecked")
    static void sum(String outDir, int operators) throws Exception {
        Map<Integer, Map<String, Object>> measured;
        synchronized (Probe.MEASURED) {
            measured = new TreeMap<>(Probe.MEASURED);
        }
        if (measured.size() != operators) {
            System.err.println("parity: only " + measured.size() + " of the chain's " + operators
                    + " operators measured (no final watermark reached the others)");
            return;
        }
        Map<String, Object> json = new TreeMap<>();
        Map<String, Long> tickers = new TreeMap<>();
        Map<String, Long> histograms = new TreeMap<>();
        Map<String, Long> job = new TreeMap<>();
        Map<String, Object> cfs = new TreeMap<>();
        List<Object> states = new ArrayList<>();
        List<Object> perOperator = new ArrayList<>();
        for (Map.Entry<Integer, Map<String, Object>> e : measured.entrySet()) {
            int i = e.getKey();
            Map<String, Object> m = e.getValue();
            addAll(tickers, (Map<String, Object>) m.get("tickers"));
            addAll(histograms, (Map<String, Object>) m.get("histograms"));
            Map<String, Object> j = (Map<String, Object>) m.get("job");
            for (String k : new String[] {"gets", "puts", "deletes", "merges", "iterators", "state_batches",
                    "state_batch_entries", "event_timers_fired", "processing_timers_fired", "timers_fired"}) {
                job.merge(k, ((Number) j.get(k)).longValue(), Long::sum);
            }
            if (i == 0) {
                for (String k : new String[] {"events", "watermarks", "last_watermark", "processing_time"}) {
                    job.put(k, ((Number) j.get(k)).longValue());
                }
            }
            ((Map<String, Object>) m.get("column_families")).forEach((cf, c) -> cfs.put("op" + i + "/" + cf, c));
            for (Object s : (List<Object>) m.get("registered_states")) {
                states.add("op" + i + "/" + s);
            }
            Map<String, Object> op = new TreeMap<>();
            op.put("index", i);
            op.put("kind", m.get("kind"));
            op.put("job", j);
            Long emitted = ResultSink.EMITTED.get("op" + i + ".");
            op.put("emitted", emitted == null ? 0L : emitted);
            Map<String, Object> t = (Map<String, Object>) m.get("tickers");
            Map<String, Object> some = new TreeMap<>();
            for (String k : new String[] {"NUMBER_KEYS_READ", "NUMBER_KEYS_WRITTEN", "NUMBER_DB_SEEK", "NUMBER_DB_NEXT"}) {
                some.put(k, t.get(k));
            }
            op.put("tickers", some);
            op.put("column_families", m.get("column_families"));
            perOperator.add(op);
        }
        json.put("kind", "chain");
        json.put("tickers", tickers);
        json.put("histograms", histograms);
        json.put("job", job);
        json.put("column_families", cfs);
        json.put("registered_states", states);
        json.put("operators", perOperator);
        Probe.write(Path.of(outDir, "flink.json"), json);
    }

    private static void addAll(Map<String, Long> into, Map<String, Object> from) {
        if (from != null) {
            from.forEach((k, v) -> into.merge(k, ((Number) v).longValue(), Long::sum));
        }
    }
}
