package statebench.parity.kinds;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperator;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperatorBuilder;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;
import statebench.parity.ObservingOptionsFactory;

/**
 * One statebench operator kind through Flink 1.20.1's own operator, on the embedded RocksDB
 * backend in a local MiniCluster at parallelism 1, replaying a trace v2 that statebench replays
 * too (parity/run-kinds).
 *
 * <pre>
 * KindsJob --workload parity/kinds/X.yaml --trace T.csv --flink-conf profile.conf --out DIR
 *          [--watermark-every 64]
 * </pre>
 *
 * The workload's {@code job:} section (the contract with statebench's side) says which operator
 * and how; its {@code event-time.out-of-orderness} is the watermark bound. Writes
 * {@code DIR/flink.json} (RocksDB's tickers, the job's counters, per column family the state
 * calls, measured after the end-of-input watermark fired everything) and
 * {@code DIR/flink-results.csv} ({@code key,label,value}, DESIGN-19's results).
 */
public class KindsJob {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            opts.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String out = require(opts, "out");
        Files.createDirectories(Path.of(out));
        String workloadPath = require(opts, "workload");
        Object doc = new Load(LoadSettings.builder().build())
                .loadFromString(Files.readString(Path.of(workloadPath), StandardCharsets.UTF_8));
        Spec workload = new Spec(workloadPath, doc);
        Spec job = workload.child("job");
        if (job == null) {
            throw new IllegalArgumentException(workloadPath + " has no job: section");
        }
        Spec eventTime = workload.child("event-time");
        long outOfOrderness = eventTime == null ? 0 : eventTime.millis("out-of-orderness", 0);

        Configuration conf = new Configuration();
        Map<String, String> profile = readKeyValues(require(opts, "flink-conf"));
        profile.forEach(conf::setString);
        conf.setString("state.backend.type", "rocksdb");
        conf.setString("state.backend.rocksdb.options-factory", ObservingOptionsFactory.class.getName());
        conf.setString("state.backend.rocksdb.localdir", new File(out, "flink-rocksdb").getAbsolutePath());
        // statebench's MAX_PARALLELISM: 256 key groups, a 2-byte key-group prefix.
        conf.setString("pipeline.max-parallelism", "256");
        conf.setString("pipeline.auto-watermark-interval", "0");
        conf.setString("pipeline.force-kryo", "false");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);

        String trace = require(opts, "trace");
        List<KEvent> events = KindsSource.read(trace);
        long every = Long.parseLong(opts.getOrDefault("watermark-every", "64"));
        String kind = job.string("kind");
        int inputs = kind.equals("interval-join") ? 2 : 1;
        Probe probe = new Probe(new File(out).getAbsolutePath(), kind);

        @SuppressWarnings("deprecation")
        DataStream<KEvent> source = env.addSource(new KindsSource(trace), "trace", TypeInformation.of(KEvent.class))
                .assignTimestampsAndWatermarks(WatermarkStrategy
                        .<KEvent>forGenerator(ctx -> new InputWatermarks(outOfOrderness, every, inputs))
                        .withTimestampAssigner((e, ts) -> e.time));
        KeyedStream<KEvent, String> keyed = source.keyBy((KeySelector<KEvent, String>) e -> e.key, Types.STRING);
        TypeInformation<Out> outType = TypeInformation.of(Out.class);
        TypeInformation<Acc> accType = TypeInformation.of(Acc.class);
        String mode;
        DataStream<Out> results;
        switch (kind) {
            case "dedup": {
                String keep = job.string("keep", "first");
                if (!keep.equals("first") && !keep.equals("last")) {
                    throw new IllegalArgumentException(workloadPath + ": job.keep must be first or last, not " + keep);
                }
                mode = "dedup-" + keep;
                Functions.Ttl ttl = ttl(job);
                results = keyed.transform("dedup", outType, new ProbedKeyedProcessOperator<>(
                        new Functions.Dedup(job.string("state-name", "dedup"), keep.equals("last"), ttl), probe));
                break;
            }
            case "aggregate": {
                mode = "aggregate";
                Functions.Ttl ttl = ttl(job);
                if (ttl.ttlMs > 0) {
                    results = keyed.transform("aggregate", outType, new ProbedKeyedProcessOperator<>(
                            new Functions.TtlAggregate(job.string("state-name", "aggregate"), ttl), probe));
                } else {
                    // keyBy().reduce(f): KeyedStream.reduce's operator and serializer.
                    KeyedStream<Acc, String> accs = source.map(Acc::of).returns(accType)
                            .keyBy((KeySelector<Acc, String>) a -> a.key, Types.STRING);
                    ReduceFunction<Acc> reduce = Acc::merge;
                    results = accs.transform("Keyed Reduce", accType, new ProbedReduceOperator<>(reduce,
                                    accType.createSerializer(env.getConfig().getSerializerConfig()), probe))
                            .map(a -> new Out(a.key, a.count, a.sum, 0, 0)).returns(outType);
                }
                break;
            }
            case "window": {
                mode = "window";
                results = window(env, job, source, keyed, probe, outType, accType);
                break;
            }
            case "interval-join": {
                mode = "join";
                long lower = job.millis("lower");
                long upper = job.millis("upper");
                results = keyed.transform("Interval Join", outType, new ProbedIntervalJoinOperator<String>(
                        lower, upper, job.bool("lower-inclusive", true), job.bool("upper-inclusive", true),
                        TypeInformation.of(KEvent.class).createSerializer(env.getConfig().getSerializerConfig()),
                        new Functions.EmitPair(), probe));
                break;
            }
            default:
                throw new IllegalArgumentException(workloadPath + ": job.kind '" + kind
                        + "' has no Flink job here (dedup, aggregate, window, interval-join)");
        }
        job.done();
        @SuppressWarnings("deprecation")
        var sink = results.addSink(new ResultSink(mode));
        sink.name("results");

        Files.writeString(Path.of(out, "flink-trace.txt"), "events " + events.size() + "\nkeys "
                + events.stream().map(e -> e.key).distinct().count() + "\n", StandardCharsets.UTF_8);
        long start = System.nanoTime();
        env.execute("statebench parity: " + kind);
        System.err.printf("parity: Flink %s job finished in %.1f s%n", kind, (System.nanoTime() - start) / 1e9);
        if (!Files.exists(Path.of(out, "flink.json"))) {
            System.err.println("parity: the job ended without measuring (no final watermark reached the operator)");
            System.exit(1);
        }
        ResultSink.write(Path.of(out, "flink-results.csv"));
    }

    private static Functions.Ttl ttl(Spec job) {
        Functions.Ttl ttl = new Functions.Ttl();
        ttl.ttlMs = job.millis("ttl", 0);
        ttl.compactionFilter = job.bool("ttl-compaction-filter", true);
        ttl.queryTimeAfter = job.number("ttl-query-time-after", 1000);
        ttl.updateOnRead = job.string("ttl-update", "on-create-and-write").equals("on-read-and-write");
        return ttl;
    }

    /** keyBy().window(assigner).reduce/aggregate/process(...), built as WindowedStream builds it. */
    private static DataStream<Out> window(StreamExecutionEnvironment env, Spec job, DataStream<KEvent> source,
            KeyedStream<KEvent, String> keyed, Probe probe, TypeInformation<Out> outType,
            TypeInformation<Acc> accType) throws Exception {
        String assignerName = job.string("assigner");
        WindowAssigner<Object, TimeWindow> assigner;
        switch (assignerName) {
            case "tumbling":
                assigner = TumblingEventTimeWindows.of(Duration.ofMillis(job.millis("size")));
                break;
            case "sliding":
                assigner = SlidingEventTimeWindows.of(Duration.ofMillis(job.millis("size")),
                        Duration.ofMillis(job.millis("slide")));
                break;
            case "session":
                assigner = EventTimeSessionWindows.withGap(Duration.ofMillis(job.millis("gap")));
                break;
            default:
                throw new IllegalArgumentException("job.assigner must be tumbling, sliding or session, not " + assignerName);
        }
        long lateness = job.millis("allowed-lateness", 0);
        String function = job.string("function");
        switch (function) {
            case "reduce": {
                KeyedStream<Acc, String> accs = source.map(Acc::of).returns(accType)
                        .keyBy((KeySelector<Acc, String>) a -> a.key, Types.STRING);
                WindowOperatorBuilder<Acc, String, TimeWindow> b = builder(env, assigner, accs, lateness);
                ReduceFunction<Acc> reduce = Acc::merge;
                WindowOperator<String, Acc, ?, Out, TimeWindow> op = b.reduce(reduce, new Functions.EmitAcc());
                return accs.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe));
            }
            case "aggregate": {
                WindowOperatorBuilder<KEvent, String, TimeWindow> b = builder(env, assigner, keyed, lateness);
                WindowOperator<String, KEvent, ?, Out, TimeWindow> op =
                        b.aggregate(new Functions.CountSum(), new Functions.EmitAcc(), accType);
                return keyed.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe));
            }
            case "process": {
                WindowOperatorBuilder<KEvent, String, TimeWindow> b = builder(env, assigner, keyed, lateness);
                WindowOperator<String, KEvent, ?, Out, TimeWindow> op = b.process(new Functions.EmitElements());
                return keyed.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe));
            }
            default:
                throw new IllegalArgumentException("job.function must be reduce, aggregate or process, not " + function);
        }
    }

    private static <T> WindowOperatorBuilder<T, String, TimeWindow> builder(StreamExecutionEnvironment env,
            WindowAssigner<Object, TimeWindow> assigner, KeyedStream<T, String> input, long lateness) {
        // WindowedStream's constructor: the assigner's default trigger (EventTimeTrigger).
        WindowOperatorBuilder<T, String, TimeWindow> b = new WindowOperatorBuilder<>(assigner,
                assigner.getDefaultTrigger(), env.getConfig(), input.getType(), input.getKeySelector(),
                input.getKeyType());
        if (lateness > 0) {
            b.allowedLateness(Duration.ofMillis(lateness));
        }
        return b;
    }

    /** {@code key: value} lines; blank lines and {@code #} comments skipped. */
    private static Map<String, String> readKeyValues(String path) throws Exception {
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
}
