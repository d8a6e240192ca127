package statebench.parity;

import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.contrib.streaming.state.ConfigurableRocksDBOptionsFactory;
import org.apache.flink.contrib.streaming.state.RocksDBOptionsFactory;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.RateLimiter;
import org.rocksdb.Statistics;

/**
 * Keeps every option Flink sets; only attaches a {@link Statistics} (to observe) and applies the
 * statebench knobs Flink has no configuration key for ({@code statebench.<knob>} lines of
 * {@code statebench profiles show --flink}). An unknown {@code statebench.*} key is an error, so a
 * knob added to statebench later is never silently left out here.
 */
public class ObservingOptionsFactory implements ConfigurableRocksDBOptionsFactory {
    private static final long serialVersionUID = 1L;
    static final String PREFIX = "statebench.";

    /** The statistics of the (one, at parallelism 1) RocksDB instance, read by the harness. */
    static volatile Statistics statistics;
    /** The rate limiter attached to that instance, if io.rate-limit-per-sec asked for one. */
    static volatile RateLimiter rateLimiter;

    /**
     * The statistics of the instance this factory made options for: each keyed state backend
     * (each operator of a chain: its own RocksDB instance) configures its own factory.
     */
    transient volatile Statistics instanceStatistics;

    private final Map<String, String> knobs = new TreeMap<>();

    /**
     * The statistics of {@code backend}'s own RocksDB instance (the factory its options
     * container holds); the JVM's last instance's if its factory is not this one.
     */
    public static Statistics statisticsOf(Object backend) throws ReflectiveOperationException {
        Object container = field(backend.getClass(), "optionsContainer").get(backend);
        Object factory = field(container.getClass(), "optionsFactory").get(container);
        Statistics own = factory instanceof ObservingOptionsFactory
                ? ((ObservingOptionsFactory) factory).instanceStatistics
                : null;
        return own != null ? own : statistics;
    }

    private static java.lang.reflect.Field field(Class<?> type, String name) throws NoSuchFieldException {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        throw new NoSuchFieldException(type.getName() + "." + name);
    }

    @Override
    public RocksDBOptionsFactory configure(ReadableConfig configuration) {
        for (Map.Entry<String, String> e : configuration.toMap().entrySet()) {
            if (e.getKey().startsWith(PREFIX)) {
                knobs.put(e.getKey().substring(PREFIX.length()), e.getValue());
            }
        }
        for (String key : knobs.keySet()) {
            switch (key) {
                case "use-direct-reads":
                case "use-direct-io-for-flush-and-compaction":
                case "io.rate-limit-per-sec":
                case "compaction.level.multiplier":
                case "compaction.level0-slowdown-writes-trigger":
                case "compaction.level0-stop-writes-trigger":
                case "compaction.soft-pending-compaction-bytes-limit":
                case "compaction.hard-pending-compaction-bytes-limit":
                case "compaction.disable-auto-compactions":
                    break;
                case "memory.mode":
                    // How Flink provides the memory (managed or fixed-per-slot): the harness's
                    // profile.conf sizes it with fixed-per-slot either way; RocksDB's cache and
                    // WriteBufferManager are the same.
                    break;
                case "target":
                    // Whose RocksDB statebench imitates: this job is that RocksDB.
                    if (!"flink-1.20".equals(knobs.get(key))) {
                        throw new IllegalArgumentException("statebench profile has target '" + knobs.get(key)
                                + "': a Flink 1.20 job is compared only with target flink-1.20");
                    }
                    break;
                default:
                    throw new IllegalArgumentException("ObservingOptionsFactory does not know the statebench knob '"
                            + key + "': map it to a RocksDB option here");
            }
        }
        return this;
    }

    @Override
    public DBOptions createDBOptions(DBOptions current, Collection<AutoCloseable> handlesToClose) {
        Statistics stats = new Statistics();
        handlesToClose.add(stats);
        current.setStatistics(stats);
        statistics = stats;
        instanceStatistics = stats;
        if (knobs.containsKey("use-direct-reads")) {
            current.setUseDirectReads(Boolean.parseBoolean(knobs.get("use-direct-reads")));
        }
        if (knobs.containsKey("use-direct-io-for-flush-and-compaction")) {
            current.setUseDirectIoForFlushAndCompaction(
                    Boolean.parseBoolean(knobs.get("use-direct-io-for-flush-and-compaction")));
        }
        long rate = bytes(knobs.getOrDefault("io.rate-limit-per-sec", "0"));
        if (rate > 0) {
            // statebench's values: 100 ms refill period, fairness 10.
            RateLimiter limiter = new RateLimiter(rate, 100_000, 10);
            handlesToClose.add(limiter);
            current.setRateLimiter(limiter);
            rateLimiter = limiter;
        }
        return current;
    }

    @Override
    public ColumnFamilyOptions createColumnOptions(ColumnFamilyOptions current, Collection<AutoCloseable> handlesToClose) {
        String v;
        if ((v = knobs.get("compaction.level.multiplier")) != null) {
            current.setMaxBytesForLevelMultiplier(Double.parseDouble(v));
        }
        if ((v = knobs.get("compaction.level0-slowdown-writes-trigger")) != null) {
            current.setLevel0SlowdownWritesTrigger(Integer.parseInt(v));
        }
        if ((v = knobs.get("compaction.level0-stop-writes-trigger")) != null) {
            current.setLevel0StopWritesTrigger(Integer.parseInt(v));
        }
        if ((v = knobs.get("compaction.soft-pending-compaction-bytes-limit")) != null) {
            current.setSoftPendingCompactionBytesLimit(bytes(v));
        }
        if ((v = knobs.get("compaction.hard-pending-compaction-bytes-limit")) != null) {
            current.setHardPendingCompactionBytesLimit(bytes(v));
        }
        if ((v = knobs.get("compaction.disable-auto-compactions")) != null) {
            current.setDisableAutoCompactions(Boolean.parseBoolean(v));
        }
        return current;
    }

    /** statebench's size syntax: {@code 64mb}, {@code 4kb}, {@code 0b} or bare bytes. */
    static long bytes(String text) {
        String t = text.trim().toLowerCase();
        String[] units = {"tb", "gb", "mb", "kb", "b"};
        long[] factors = {1L << 40, 1L << 30, 1L << 20, 1L << 10, 1L};
        for (int i = 0; i < units.length; i++) {
            if (t.endsWith(units[i])) {
                return Long.parseLong(t.substring(0, t.length() - units[i].length()).trim()) * factors[i];
            }
        }
        return Long.parseLong(t);
    }
}
