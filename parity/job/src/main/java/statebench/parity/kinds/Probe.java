package statebench.parity.kinds;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.rocksdb.HistogramType;
import org.rocksdb.RocksDB;
import org.rocksdb.Statistics;
import org.rocksdb.TickerType;
import statebench.parity.ObservingOptionsFactory;

/**
 * What every kind's operator shares: the measurement. Attached to Flink's own operator (a
 * subclass that only calls this around {@code super}), it
 * <ul>
 *   <li>counts the elements and the timers the operator fires;</li>
 *   <li>replaces the keyed backend's RocksDB handle by a {@link CountingRocksDB} on the same
 *       database (merges per column family: RocksDB has no ticker for them);</li>
 *   <li>makes processing time, which state TTL reads, statebench's replay clock: the largest
 *       event time the operator has seen (statebench: {@code EventSource::replay_time} of a
 *       trace), for the state and for RocksDB's TTL compaction filter;</li>
 *   <li>after the end-of-input watermark has fired everything, writes out the timer service's
 *       pending write batch and records the run ({@code flink.json}).</li>
 * </ul>
 */
public final class Probe implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    /** statebench's replay clock for a trace: the newest event time read so far. */
    public static final class ReplayClock implements TtlTimeProvider, java.io.Serializable {
        private static final long serialVersionUID = 1L;
        volatile long now = Long.MIN_VALUE;

        @Override
        public long currentTimestamp() {
            return now;
        }
    }

    /** Each chained operator's replay clock by index (one JVM), for what it emits to the next. */
    static final Map<Integer, ReplayClock> CLOCKS = new java.util.concurrent.ConcurrentHashMap<>();

    /** Every measured operator's figures by operator index (one JVM: the MiniCluster's). */
    static final Map<Integer, Map<String, Object>> MEASURED = new TreeMap<>();

    private final String outDir;
    private final String kind;
    /** The operator's index in a chain; -1: the job's only operator. */
    private final int index;
    private transient CountingRocksDB counting;
    /** The backend's own RocksDB object, put back before the backend is disposed. */
    private transient RocksDB original;
    final ReplayClock clock = new ReplayClock();
    long events;
    long eventTimers;
    long processingTimers;
    long watermarks;
    long lastWatermark = Long.MIN_VALUE;
    boolean measured;
    private boolean installed;
    /** After measuring: flush and compact every state column family, counting what the TTL filter drops. */
    boolean compactAtEnd;
    /** The operator's parallelism: above 1 each subtask measures into outDir/subtask-&lt;index&gt;. */
    int parallelism = 1;
    /** When the first element arrived (System.nanoTime), 0 before. */
    private transient long firstNanos;
    /** When the final watermark arrived (System.nanoTime), 0 before. */
    private transient long endNanos;

    public Probe(String outDir, String kind) {
        this(outDir, kind, -1);
    }

    /** Operator {@code index} of a chain: writes {@code flink-op<i>.json} (KindsJob sums them into flink.json). */
    public Probe(String outDir, String kind, int index) {
        this.outDir = outDir;
        this.kind = kind;
        this.index = index;
    }

    static Field field(Class<?> type, String name) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        throw new IllegalStateException(type.getName() + " has no field " + name + " (not Flink 1.20.1?)");
    }

    /** Before the operator's open() creates its states. */
    void install(KeyedStateBackend<?> backend) throws Exception {
        if (installed) {
            return;
        }
        installed = true;
        if (index >= 0) {
            CLOCKS.put(index, clock);
        }
        Field db = field(backend.getClass(), "db");
        original = (RocksDB) db.get(backend);
        counting = new CountingRocksDB(original);
        db.set(backend, counting);
        // TtlStateFactory takes the backend's time provider when a state is created.
        field(backend.getClass(), "ttlTimeProvider").set(backend, clock);
        // RocksDB's TTL compaction filter asks the manager's provider (a factory per TTL state,
        // made when the state is registered).
        Object manager = field(backend.getClass(), "ttlCompactFiltersManager").get(backend);
        field(manager.getClass(), "ttlTimeProvider").set(manager, clock);
    }

    /**
     * Puts the backend's own RocksDB object back: the backend closes the database through it
     * when disposed (the counting view owns nothing, so closing it would leave the database and
     * its compactions running on freed options and compaction filters). After measuring, and
     * from the operator's close() in any case.
     */
    void uninstall(KeyedStateBackend<?> backend) throws Exception {
        if (original != null && backend != null) {
            field(backend.getClass(), "db").set(backend, original);
            original = null;
        }
    }

    void onElement(long timestamp) {
        if (events == 0) {
            firstNanos = System.nanoTime();
        }
        events++;
        if (timestamp > clock.now) {
            clock.now = timestamp;
        }
    }

    /**
     * An element that may come from a chained operator: its processing time is the one that
     * operator had when it emitted it (statebench runs one clock for the whole chain: the
     * source's replay time), not the record's timestamp.
     */
    void onElement(long timestamp, Object value) {
        if (value instanceof KEvent && ((KEvent) value).now != Long.MIN_VALUE) {
            if (events == 0) {
                firstNanos = System.nanoTime();
            }
            events++;
            long now = ((KEvent) value).now;
            if (now > clock.now) {
                clock.now = now;
            }
        } else {
            onElement(timestamp);
        }
    }

    /**
     * A regular watermark (the maximum one is measured after it fired everything, but the
     * subtask's clock stops when it arrives: the end of input, as ParityOperator's does).
     */
    void onWatermark(Watermark mark) {
        if (mark.getTimestamp() != Long.MAX_VALUE) {
            lastWatermark = mark.getTimestamp();
            watermarks++;
        } else if (endNanos == 0) {
            endNanos = System.nanoTime();
        }
    }

    void measure(KeyedStateBackend<?> backend) throws Exception {
        if (measured) {
            return;
        }
        measured = true;
        // This subtask's directory: the start of its key-group range names it (Flink gives
        // operator index i the key groups whose keyGroup * parallelism / 256 is i).
        String outDir = this.outDir;
        if (parallelism > 1) {
            int start = ((org.apache.flink.runtime.state.CheckpointableKeyedStateBackend<?>) backend)
                    .getKeyGroupRange().getStartKeyGroup();
            Path dir = Path.of(outDir, "subtask-" + (start * parallelism / 256));
            Files.createDirectories(dir);
            outDir = dir.toString();
        }
        Map<String, Object> json = new TreeMap<>();
        json.put("kind", kind);
        json.put("backend_class", backend.getClass().getName());
        // Flink writes the timer service's pending batch before every snapshot and at close;
        // statebench at the end of its run. Before reading any counter.
        Object wrapper = field(backend.getClass(), "writeBatchWrapper").get(backend);
        wrapper.getClass().getMethod("flush").invoke(wrapper);

        // The Statistics of this backend's RocksDB instance (its options factory's); a chain has
        // one instance per operator.
        Statistics stats = ObservingOptionsFactory.statisticsOf(backend);
        Map<String, Object> tickers = new TreeMap<>();
        Map<String, Object> histograms = new TreeMap<>();
        if (stats != null) {
            for (TickerType t : TickerType.values()) {
                if (t != TickerType.TICKER_ENUM_MAX) {
                    tickers.put(t.name(), stats.getTickerCount(t));
                }
            }
            for (HistogramType h : new HistogramType[] {HistogramType.FLUSH_TIME, HistogramType.COMPACTION_TIME}) {
                histograms.put(h.name() + "_count", stats.getHistogramData(h).getCount());
            }
        }
        json.put("tickers", tickers);
        json.put("histograms", histograms);
        Map<String, Object> job = new TreeMap<>();
        job.put("events", events);
        job.put("event_timers_fired", eventTimers);
        job.put("processing_timers_fired", processingTimers);
        job.put("timers_fired", eventTimers + processingTimers);
        job.put("watermarks", watermarks);
        job.put("last_watermark", lastWatermark);
        // From the first element to the end of input (the final watermark's arrival, before it
        // fired the windows and timers left): the subtask's processing time.
        long end = endNanos == 0 ? System.nanoTime() : endNanos;
        job.put("elapsed_ms", firstNanos == 0 ? 0 : (end - firstNanos) / 1_000_000);
        job.put("processing_time", clock.now);
        job.put("merges", counting.total(CountingRocksDB.MERGES));
        job.put("gets", counting.total(CountingRocksDB.GETS));
        job.put("puts", counting.total(CountingRocksDB.PUTS));
        job.put("deletes", counting.total(CountingRocksDB.DELETES));
        job.put("iterators", counting.total(CountingRocksDB.ITERATORS));
        job.put("state_batches", counting.batches);
        job.put("state_batch_entries", counting.batchEntries);
        // The SST files the state lives in at the end (statebench's live SST), every column family.
        long liveSst;
        try {
            liveSst = counting.getAggregatedLongProperty("rocksdb.live-sst-files-size");
        } catch (Exception e) {
            liveSst = -1;
        }
        job.put("live_sst_bytes", liveSst);
        json.put("job", job);
        json.put("column_families", counting.snapshot());
        Map<?, ?> states = (Map<?, ?>) field(backend.getClass(), "kvStateInformation").get(backend);
        json.put("registered_states", new ArrayList<>(new java.util.TreeSet<>(
                states.keySet().stream().map(Object::toString).collect(java.util.stream.Collectors.toList()))));

        File base = (File) field(backend.getClass(), "instanceBasePath").get(backend);
        File dbDir = new File(base, "db");
        List<String> copied = new ArrayList<>();
        File[] files = dbDir.listFiles();
        if (files != null) {
            File latest = null;
            long latestNumber = -1;
            for (File f : files) {
                String name = f.getName();
                if (name.startsWith("OPTIONS-")) {
                    long n = Long.parseLong(name.substring("OPTIONS-".length()));
                    if (n > latestNumber) {
                        latestNumber = n;
                        latest = f;
                    }
                }
            }
            if (latest != null) {
                String name = index <= 0 ? "flink.OPTIONS" : "flink.op" + index + ".OPTIONS";
                Files.copy(latest.toPath(), Path.of(outDir, name), StandardCopyOption.REPLACE_EXISTING);
                copied.add(latest.getName());
            }
        }
        if (index < 0) {
            statebench.parity.RocksDBFiles.copyLogs(dbDir, outDir, copied);
        }
        json.put("copied_files", copied);
        json.put("index", index);
        if (compactAtEnd) {
            json.put("compaction_at_end", compactAtEnd(backend, stats));
        }
        synchronized (MEASURED) {
            MEASURED.put(index, json);
        }
        write(Path.of(outDir, index < 0 ? "flink.json" : "flink-op" + index + ".json"), json);
        uninstall(backend);
    }

    /**
     * Once everything is measured: per state column family, its keys, then a flush and a manual
     * compaction of the whole range (RocksDB runs the column family's compaction filter: Flink's
     * TTL filter, on this probe's replay clock), then its keys again and what the filter dropped
     * (ticker COMPACTION_KEY_DROP_USER).
     */
    private Map<String, Object> compactAtEnd(KeyedStateBackend<?> backend, Statistics stats) throws Exception {
        Map<String, Object> out = new TreeMap<>();
        Map<?, ?> states = (Map<?, ?>) field(backend.getClass(), "kvStateInformation").get(backend);
        RocksDB db = original != null ? original : (RocksDB) field(backend.getClass(), "db").get(backend);
        for (Map.Entry<?, ?> e : states.entrySet()) {
            String name = e.getKey().toString();
            if (name.startsWith("_timer_state/")) {
                continue;
            }
            org.rocksdb.ColumnFamilyHandle cf =
                    (org.rocksdb.ColumnFamilyHandle) field(e.getValue().getClass(), "columnFamilyHandle").get(e.getValue());
            long dropBefore = stats == null ? 0 : stats.getTickerCount(TickerType.COMPACTION_KEY_DROP_USER);
            long before = countKeys(db, cf);
            try (org.rocksdb.FlushOptions flush = new org.rocksdb.FlushOptions().setWaitForFlush(true)) {
                db.flush(flush, cf);
            }
            db.compactRange(cf);
            long after = countKeys(db, cf);
            Map<String, Object> c = new TreeMap<>();
            c.put("keys_before", before);
            c.put("keys_after", after);
            c.put("dropped_by_filter", stats == null ? -1
                    : stats.getTickerCount(TickerType.COMPACTION_KEY_DROP_USER) - dropBefore);
            out.put(name, c);
        }
        out.put("clock", clock.now);
        return out;
    }

    private static long countKeys(RocksDB db, org.rocksdb.ColumnFamilyHandle cf) {
        long n = 0;
        try (org.rocksdb.RocksIterator it = db.newIterator(cf)) {
            for (it.seekToFirst(); it.isValid(); it.next()) {
                n++;
            }
        }
        return n;
    }

    static void write(Path path, Object root) throws IOException {
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
