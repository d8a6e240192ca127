package statebench.parity;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.FlushOptions;
import org.rocksdb.HistogramType;
import org.rocksdb.RateLimiter;
import org.rocksdb.RocksDB;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;

/**
 * Flink's {@link KeyedProcessOperator} running {@link FrequencyFunction}, plus the measurement:
 * when the end of the bounded input arrives (the maximum watermark, which would fire every
 * remaining timer), it first records what the run did up to the last regular watermark — the
 * point where statebench's run ends — while the RocksDB instance is still open: the job's
 * counters, RocksDB's tickers and histograms, copies of RocksDB's LOG and OPTIONS files, and the
 * final count of every (user, window).
 */
public class ParityOperator extends KeyedProcessOperator<String, TraceEvent, Void> {
    private static final long serialVersionUID = 1L;

    private final String outDir;
    /** parity/export-check: also record what the OPTIONS file does not show (see measure). */
    private final boolean exportCheck;
    private long lastWatermark = Long.MIN_VALUE;
    private long watermarks;
    private boolean measured;

    public ParityOperator(FrequencyFunction function, String outDir, boolean exportCheck) {
        super(function);
        this.outDir = outDir;
        this.exportCheck = exportCheck;
    }

    /** When this subtask's first record arrived (System.nanoTime), 0 before. */
    private long firstRecordNanos;

    @Override
    public void processElement(org.apache.flink.streaming.runtime.streamrecord.StreamRecord<TraceEvent> element)
            throws Exception {
        if (firstRecordNanos == 0) {
            firstRecordNanos = System.nanoTime();
        }
        super.processElement(element);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        if (mark.getTimestamp() == Long.MAX_VALUE) {
            if (!measured) {
                measured = true;
                measure();
            }
        } else {
            lastWatermark = mark.getTimestamp();
            watermarks++;
        }
        super.processWatermark(mark);
    }

    private static Field field(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        return null;
    }

    /**
     * Where this subtask writes: {@code outDir} itself at parallelism 1 (what parity/run reads),
     * else {@code outDir/subtask-<index>} (statebench flink run: one RocksDB instance each).
     */
    private String subtaskDir() throws Exception {
        int parallelism = getRuntimeContext().getNumberOfParallelSubtasks();
        if (parallelism == 1) {
            return outDir;
        }
        Path dir = Path.of(outDir, "subtask-" + getRuntimeContext().getIndexOfThisSubtask());
        Files.createDirectories(dir);
        return dir.toString();
    }

    @SuppressWarnings("deprecation")
    private void measure() throws Exception {
        String outDir = subtaskDir();
        FrequencyFunction fn = (FrequencyFunction) getUserFunction();
        KeyedStateBackend<String> backend = getKeyedStateBackend();
        Json json = new Json();
        json.put("backend_class", backend.getClass().getName());

        // statebench writes out its timer service's pending write batch when its run ends; Flink
        // does the same before every snapshot and at close. Do it here, before reading counters.
        Field batchField = field(backend.getClass(), "writeBatchWrapper");
        boolean flushed = false;
        if (batchField != null) {
            Object wrapper = batchField.get(backend);
            wrapper.getClass().getMethod("flush").invoke(wrapper);
            flushed = true;
        }
        json.put("timer_batch_flushed_before_measuring", flushed);

        Statistics stats = ObservingOptionsFactory.statisticsOf(backend);
        Map<String, Object> tickers = new TreeMap<>();
        Map<String, Object> histograms = new TreeMap<>();
        if (stats != null) {
            for (TickerType t : TickerType.values()) {
                if (t == TickerType.TICKER_ENUM_MAX) {
                    continue;
                }
                tickers.put(t.name(), stats.getTickerCount(t));
            }
            for (HistogramType h : new HistogramType[] {HistogramType.FLUSH_TIME, HistogramType.COMPACTION_TIME,
                    HistogramType.DB_GET, HistogramType.DB_WRITE}) {
                histograms.put(h.name() + "_count", stats.getHistogramData(h).getCount());
            }
        }
        json.put("tickers", tickers);
        json.put("histograms", histograms);

        Map<String, Object> job = new TreeMap<>();
        job.put("events", fn.events);
        job.put("window_stats_gets", fn.statsGets);
        job.put("window_stats_puts", fn.statsPuts);
        job.put("window_stats_deletes", fn.statsDeletes);
        job.put("timer_state_gets", fn.timerStateGets);
        job.put("timer_state_puts", fn.timerStatePuts);
        job.put("timer_state_deletes", fn.timerStateDeletes);
        job.put("timers_registered", fn.timersRegistered);
        job.put("timers_fired", fn.timersFired);
        job.put("missing_decrements", fn.missingDecrements);
        job.put("negative_counts", fn.negativeCounts);
        job.put("last_watermark", lastWatermark);
        // From the first record to the end of input: the subtask's processing time.
        job.put("elapsed_ms", firstRecordNanos == 0 ? 0 : (System.nanoTime() - firstRecordNanos) / 1_000_000);
        job.put("watermarks", watermarks);
        json.put("job", job);

        // RocksDB's files, copied while the instance is open (Flink deletes it on dispose).
        Field baseField = field(backend.getClass(), "instanceBasePath");
        File dbDir = baseField == null ? null : new File((File) baseField.get(backend), "db");
        List<String> copied = new ArrayList<>();
        if (dbDir != null && dbDir.isDirectory()) {
            json.put("rocksdb_dir", dbDir.getPath());
            File[] files = dbDir.listFiles();
            Arrays.sort(files);
            File latestOptions = null;
            long latestNumber = -1;
            for (File f : files) {
                String name = f.getName();
                if (name.startsWith("OPTIONS-")) {
                    long n = Long.parseLong(name.substring("OPTIONS-".length()));
                    if (n > latestNumber) {
                        latestNumber = n;
                        latestOptions = f;
                    }
                }
            }
            RocksDBFiles.copyLogs(dbDir, outDir, copied);
            if (latestOptions != null) {
                Files.copy(latestOptions.toPath(), Path.of(outDir, "flink.OPTIONS"), StandardCopyOption.REPLACE_EXISTING);
                copied.add(latestOptions.getName());
            }
        }
        json.put("copied_files", copied);
        if (exportCheck) {
            json.put("export_check", exportCheckValues(backend));
        }
        json.write(Path.of(outDir, "flink.json"));

        // Final counts, after the counters were read (this scan reads RocksDB too).
        List<String> lines = new ArrayList<>();
        try (Stream<String> keys = backend.getKeys("window-stats", VoidNamespace.INSTANCE)) {
            for (String key : (Iterable<String>) keys::iterator) {
                setCurrentKey(key);
                for (Map.Entry<String, AdsFrequencyStats> e : fn.windowStats.entries()) {
                    lines.add(key + "," + e.getKey() + "," + e.getValue().count);
                }
            }
        }
        lines.sort(null);
        StringBuilder sb = new StringBuilder();
        for (String l : lines) {
            sb.append(l).append('\n');
        }
        Files.writeString(Path.of(outDir, "flink-final-counts.csv"), sb.toString(), StandardCharsets.UTF_8);
    }

    /**
     * What parity/export-check compares beyond the OPTIONS file and LOG (taken after both were
     * copied): the WriteBufferManager's capacity as Flink computed it, the rate limiter the
     * options factory attached (read back from RocksDB), and the table properties of the SST file
     * a flush of {@code window-stats} writes now (its filter size gives the bloom bits per key in
     * effect, which neither OPTIONS file names).
     */
    private Map<String, Object> exportCheckValues(KeyedStateBackend<String> backend) throws Exception {
        Map<String, Object> values = new TreeMap<>();
        Field containerField = field(backend.getClass(), "optionsContainer");
        Object container = containerField.get(backend);
        Object wbm = container.getClass().getMethod("getWriteBufferManagerCapacity").invoke(container);
        values.put("write_buffer_manager_capacity", wbm);
        RateLimiter limiter = ObservingOptionsFactory.rateLimiter;
        values.put("rate_limiter_bytes_per_second", limiter == null ? 0L : limiter.getBytesPerSecond());

        RocksDB db = (RocksDB) field(backend.getClass(), "db").get(backend);
        Map<?, ?> states = (Map<?, ?>) field(backend.getClass(), "kvStateInformation").get(backend);
        Object info = states.get("window-stats");
        ColumnFamilyHandle handle = (ColumnFamilyHandle) info.getClass().getField("columnFamilyHandle").get(info);
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
            db.flush(flush, handle);
        }
        values.put("window_stats_table_properties", db.getProperty(handle, "rocksdb.aggregated-table-properties"));
        return values;
    }

    /** A tiny JSON writer: strings, numbers, booleans, lists of strings and nested maps. */
    static final class Json {
        private final Map<String, Object> root = new TreeMap<>();

        void put(String key, Object value) {
            root.put(key, value);
        }

        void write(Path path) throws IOException {
            StringBuilder sb = new StringBuilder();
            value(sb, root, "");
            sb.append('\n');
            Files.writeString(path, sb.toString(), StandardCharsets.UTF_8);
        }

        private static void value(StringBuilder sb, Object v, String indent) {
            if (v instanceof Map) {
                sb.append("{");
                String sep = "\n";
                for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                    sb.append(sep).append(indent).append("  ");
                    string(sb, e.getKey().toString());
                    sb.append(": ");
                    value(sb, e.getValue(), indent + "  ");
                    sep = ",\n";
                }
                sb.append("\n").append(indent).append("}");
            } else if (v instanceof List) {
                sb.append("[");
                String sep = "";
                for (Object o : (List<?>) v) {
                    sb.append(sep);
                    value(sb, o, indent);
                    sep = ", ";
                }
                sb.append("]");
            } else if (v instanceof Number || v instanceof Boolean) {
                sb.append(v);
            } else if (v == null) {
                sb.append("null");
            } else {
                string(sb, v.toString());
            }
        }

        private static void string(StringBuilder sb, String s) {
            sb.append('"');
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') {
                    sb.append('\\').append(c);
                } else if (c < 0x20) {
                    sb.append(String.format("\\u%04x", (int) c));
                } else {
                    sb.append(c);
                }
            }
            sb.append('"');
        }
    }
}
