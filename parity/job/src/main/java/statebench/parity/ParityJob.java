package statebench.parity;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.FallbackKey;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * The field report's ad frequency job on Flink 1.20.1's embedded RocksDB state backend, in a
 * local MiniCluster at parallelism 1, replaying a trace that statebench replays too.
 *
 * <pre>
 * ParityJob --trace T.csv --windows 1m=60000,5m=300000 --out-of-orderness 3000
 *           --watermark-every 64 --ttl 2592000000 --serializer pojo|kryo
 *           (--flink-conf profile.conf | --flink-conf-dir DIR [--factory-knobs F]) --out DIR
 *           [--events-per-second N] [--hold-ms MS] [--environment local|context] [--parallelism N]
 * </pre>
 *
 * {@code --events-per-second} paces the source (default 0: as fast as it goes) and
 * {@code --hold-ms} keeps it open that long after the last event ({@link TraceSource}).
 * {@code --parallelism} is the keyed operator's (default 1; the source and sink keep 1): above 1
 * each subtask measures into {@code --out}/subtask-&lt;index&gt; ({@code statebench flink run}).
 * {@code --environment context} runs in the environment Flink gives a submitted program (a session
 * cluster's {@code /jars/:id/run} or its CLI; parity/rest-evidence) at parallelism 1 instead of
 * the default local MiniCluster; the program then returns once the job is submitted, without
 * waiting for it or checking its output.
 *
 * {@code --flink-conf} holds {@code key: value} lines ({@code statebench profiles show --flink}),
 * set one by one here. {@code --flink-conf-dir} is a directory with a {@code config.yaml}
 * ({@code statebench export --format flink}) that Flink itself loads
 * ({@link GlobalConfiguration#loadConfiguration(String)}, as a cluster reads its conf/); the knobs
 * that file can only name in comments, for an options factory, come from {@code --factory-knobs}
 * ({@code knob: value} lines) and reach {@link ObservingOptionsFactory} as {@code statebench.<knob>}.
 * With a config directory the operator also flushes {@code window-stats} after measuring and
 * records the bloom bits per key of the SST file that wrote ({@code parity/export-check}).
 */
public class ParityJob {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String out = require(opts, "out");
        Files.createDirectories(Path.of(out));

        // windows: label=ms, in the workload's order (statebench's window labels).
        List<String> labels = new ArrayList<>();
        List<Long> windows = new ArrayList<>();
        for (String w : require(opts, "windows").split(",")) {
            String[] kv = w.split("=");
            labels.add(kv[0].trim());
            windows.add(Long.parseLong(kv[1].trim()));
        }

        String trace = require(opts, "trace");
        List<TraceEvent> events = TraceSource.read(trace);
        long users = events.stream().map(e -> e.user).distinct().count();

        Configuration conf = new Configuration();
        Map<String, String> profile = new LinkedHashMap<>();
        String confDir = opts.get("flink-conf-dir");
        boolean exportCheck = confDir != null;
        if (exportCheck) {
            // Flink parses the exported config.yaml itself; nothing of it is mapped here. The
            // knobs the export names an options-factory call for go explicitly to our factory.
            Configuration loaded = RocksDBFiles.loadExported(confDir, opts.get("factory-knobs"), conf);
            profile.putAll(new TreeMap<>(loaded.toMap()));
            StringBuilder read = new StringBuilder();
            profile.forEach((k, v) -> read.append(k).append(": ").append(v).append('\n'));
            Files.writeString(Path.of(out, "flink-loaded-config.txt"), read.toString(), StandardCharsets.UTF_8);
        } else {
            profile.putAll(readKeyValues(require(opts, "flink-conf")));
            profile.forEach(conf::setString);
        }
        Set<String> known = knownRocksDBKeys();
        List<String> unknown = new ArrayList<>();
        for (String key : profile.keySet()) {
            if (key.startsWith("state.backend.rocksdb.") && !known.contains(key)) {
                unknown.add(key);
                System.err.println("parity: Flink 1.20.1 has no option '" + key + "' (it would be ignored)");
            }
        }
        // The harness's own settings; the exported file must not set them otherwise.
        for (String key : new String[] {"state.backend.rocksdb.options-factory", "state.backend.rocksdb.localdir"}) {
            if (profile.containsKey(key)) {
                throw new IllegalArgumentException("the profile sets '" + key + "', which the parity job sets itself");
            }
        }
        conf.setString("state.backend.type", "rocksdb");
        conf.setString("state.backend.rocksdb.options-factory", ObservingOptionsFactory.class.getName());
        conf.setString("state.backend.rocksdb.localdir", new File(out, "flink-rocksdb").getAbsolutePath());
        // statebench's MAX_PARALLELISM: 256 key groups, a 2-byte key-group prefix.
        conf.setString("pipeline.max-parallelism", "256");
        conf.setString("pipeline.auto-watermark-interval", "0");
        boolean kryo = opts.getOrDefault("serializer", "pojo").equals("kryo");
        conf.setString("pipeline.force-kryo", Boolean.toString(kryo));

        String environment = opts.getOrDefault("environment", "local");
        int parallelism = Integer.parseInt(opts.getOrDefault("parallelism", "1"));
        StreamExecutionEnvironment env;
        if (environment.equals("local")) {
            env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
            env.setParallelism(1);
        } else if (environment.equals("context")) {
            env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.setParallelism(1);
        } else {
            throw new IllegalArgumentException("--environment is local or context, not '" + environment + "'");
        }
        long eventsPerSecond = Long.parseLong(opts.getOrDefault("events-per-second", "0"));
        long holdMs = Long.parseLong(opts.getOrDefault("hold-ms", "0"));
        long outOfOrderness = Long.parseLong(require(opts, "out-of-orderness"));
        long every = Long.parseLong(opts.getOrDefault("watermark-every", "64"));
        long ttl = Long.parseLong(require(opts, "ttl"));

        @SuppressWarnings("deprecation")
        var source = env.addSource(new TraceSource(trace, eventsPerSecond, holdMs), "trace", TypeInformation.of(TraceEvent.class));
        source.assignTimestampsAndWatermarks(
                        WatermarkStrategy.<TraceEvent>forGenerator(ctx -> new EveryNthEventWatermarks(outOfOrderness, every))
                                .withTimestampAssigner((e, ts) -> e.eventTime))
                .keyBy((KeySelector<TraceEvent, String>) e -> e.user, Types.STRING)
                .transform("frequency", Types.VOID,
                        new ParityOperator(new FrequencyFunction(labels, windows, ttl), out, exportCheck))
                .setParallelism(parallelism)
                .sinkTo(new DiscardingSink<>());

        Files.writeString(Path.of(out, "flink-config-check.txt"),
                "events " + events.size() + "\nusers " + users + "\nserializer " + (kryo ? "kryo" : "pojo")
                        + "\nunknown_keys " + String.join(" ", unknown) + "\n",
                StandardCharsets.UTF_8);
        if (environment.equals("context")) {
            // Submitted to a cluster: a detached submission returns here at once. No System.exit:
            // this main runs inside the cluster's JobManager.
            env.executeAsync("statebench parity");
            return;
        }
        long start = System.nanoTime();
        env.execute("statebench parity");
        System.err.printf("parity: Flink job finished in %.1f s%n", (System.nanoTime() - start) / 1e9);
        if (!Files.exists(parallelism == 1 ? Path.of(out, "flink.json") : Path.of(out, "subtask-0", "flink.json"))) {
            System.err.println("parity: the job ended without measuring (no final watermark reached the operator)");
            System.exit(1);
        }
    }

    /** {@code key: value} lines; blank lines and {@code #} comments skipped. */
    static Map<String, String> readKeyValues(String path) throws IOException {
        Map<String, String> values = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Path.of(path), StandardCharsets.UTF_8)) {
            line = line.trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int colon = line.indexOf(':');
            values.put(line.substring(0, colon).trim(), line.substring(colon + 1).trim());
        }
        return values;
    }

    private static String require(Map<String, String> opts, String key) {
        String v = opts.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing --" + key);
        }
        return v;
    }

    /** Every key (and fallback key) of Flink's RocksDB option classes. */
    private static Set<String> knownRocksDBKeys() throws Exception {
        Set<String> keys = new TreeSet<>();
        for (String cls : new String[] {"org.apache.flink.contrib.streaming.state.RocksDBConfigurableOptions",
                "org.apache.flink.contrib.streaming.state.RocksDBOptions",
                "org.apache.flink.contrib.streaming.state.RocksDBNativeMetricOptions"}) {
            for (Field f : Class.forName(cls).getFields()) {
                if (ConfigOption.class.isAssignableFrom(f.getType())) {
                    ConfigOption<?> o = (ConfigOption<?>) f.get(null);
                    keys.add(o.key());
                    for (FallbackKey k : o.fallbackKeys()) {
                        keys.add(k.getKey());
                    }
                }
            }
        }
        return keys;
    }
}
