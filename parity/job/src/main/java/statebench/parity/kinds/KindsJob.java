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
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
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
        String mode;
        DataStream<Out> results;
        switch (kind) {
            case "dedup": {
                String keep = job.string("keep", "first");
                Functions.Ttl ttl = Functions.Ttl.of(job);
                mode = "dedup-" + keep;
                if (keep.equals("first")) {
                    results = keyed.transform("dedup", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.DedupFirst(ttl), probe));
                } else if (keep.equals("last")) {
                    results = keyed.transform("dedup", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.DedupLast(ttl), probe));
                } else {
                    throw new IllegalArgumentException(workloadPath + ": job.keep must be first or last, not " + keep);
                }
                break;
            }
            case "aggregate": {
                mode = "aggregate";
                String function = job.string("function", "reduce");
                Functions.Ttl ttl = Functions.Ttl.of(job);
                if (function.equals("aggregate")) {
                    results = keyed.transform("aggregate", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.Aggregate(ttl), probe));
                } else if (function.equals("reduce") && ttl.ttlMs == 0) {
                    // keyBy().reduce(f): what KeyedStream.reduce builds (StreamGroupedReduceOperator,
                    // the type's serializer), with the Probe around it.
                    KeyedStream<Tuple3<String, Long, Long>, String> counted = source.map(Functions::counted)
                            .returns(Functions.COUNTED)
                            .keyBy((KeySelector<Tuple3<String, Long, Long>, String>) t -> t.f0, Types.STRING);
                    ReduceFunction<Tuple3<String, Long, Long>> reduce = (a, b) -> Tuple3.of(a.f0, a.f1 + b.f1, a.f2 + b.f2);
                    results = counted.transform("Keyed Reduce", Functions.COUNTED, new ProbedReduceOperator<>(reduce,
                                    Functions.COUNTED.createSerializer(env.getConfig().getSerializerConfig()), probe))
                            .map(t -> new Out(t.f0, t.f1, t.f2, 0, 0)).returns(outType);
                } else {
                    throw new IllegalArgumentException(workloadPath + ": job.function must be reduce (no ttl) or aggregate");
                }
                break;
            }
            case "process": {
                mode = "process";
                ProcessInterpreter fn = ProcessInterpreter.of(job, job.raw("states"), job.raw("on-event"),
                        job.raw("on-timer"));
                results = keyed.transform("process", outType, new ProbedKeyedProcessOperator<>(fn, probe));
                break;
            }
            case "window": {
                mode = "window";
                results = window(env, job, source, probe, outType);
                break;
            }
            case "interval-join": {
                mode = "join";
                // left.intervalJoin(right).between(lower, upper)[.lowerBoundExclusive()]...
                // .process(f): KeyedStream.IntervalJoined.process's operator and serializers.
                TypeSerializer<Tuple3<String, Long, byte[]>> serializer =
                        Functions.RECORD.createSerializer(env.getConfig().getSerializerConfig());
                results = keyed.transform("Interval Join", outType, new ProbedIntervalJoinOperator<String>(
                        job.millis("lower"), job.millis("upper"), job.bool("lower-inclusive", true),
                        job.bool("upper-inclusive", true), serializer, new Functions.EmitPair(), probe));
                break;
            }
            default:
                throw new IllegalArgumentException(workloadPath + ": job.kind '" + kind
                        + "' has no Flink job here (dedup, aggregate, process, window, interval-join)");
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

    /**
     * keyBy().window(assigner).allowedLateness(L).reduce/aggregate/process(...), the operator
     * built as WindowedStream builds it (WindowOperatorBuilder), with the Probe around it.
     */
    private static DataStream<Out> window(StreamExecutionEnvironment env, Spec job, DataStream<KEvent> source,
            Probe probe, TypeInformation<Out> outType) throws Exception {
        String assignerName = job.string("assigner");
        long offset = job.millis("offset", 0);
        WindowAssigner<Object, TimeWindow> assigner;
        switch (assignerName) {
            case "tumbling":
                assigner = TumblingEventTimeWindows.of(Duration.ofMillis(job.millis("size")), Duration.ofMillis(offset));
                break;
            case "sliding":
                assigner = SlidingEventTimeWindows.of(Duration.ofMillis(job.millis("size")),
                        Duration.ofMillis(job.millis("slide")), Duration.ofMillis(offset));
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
                KeyedStream<Tuple3<String, Long, Long>, String> counted = source.map(Functions::counted)
                        .returns(Functions.COUNTED)
                        .keyBy((KeySelector<Tuple3<String, Long, Long>, String>) t -> t.f0, Types.STRING);
                WindowOperatorBuilder<Tuple3<String, Long, Long>, String, TimeWindow> b =
                        builder(env, assigner, counted, lateness);
                ReduceFunction<Tuple3<String, Long, Long>> reduce = (x, y) -> Tuple3.of(x.f0, x.f1 + y.f1, x.f2 + y.f2);
                WindowOperator<String, Tuple3<String, Long, Long>, ?, Out, TimeWindow> op =
                        b.reduce(reduce, new Functions.EmitReduced());
                return counted.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe));
            }
            case "aggregate":
            case "process": {
                KeyedStream<Tuple3<String, Long, byte[]>, String> records = source.map(Functions::record)
                        .returns(Functions.RECORD)
                        .keyBy((KeySelector<Tuple3<String, Long, byte[]>, String>) t -> t.f0, Types.STRING);
                WindowOperatorBuilder<Tuple3<String, Long, byte[]>, String, TimeWindow> b =
                        builder(env, assigner, records, lateness);
                WindowOperator<String, Tuple3<String, Long, byte[]>, ?, Out, TimeWindow> op = function.equals("process")
                        ? b.process(new Functions.EmitElements())
                        : b.aggregate(new Functions.CountSum(), new Functions.EmitAggregated(),
                                Types.TUPLE(Types.LONG, Types.LONG));
                return records.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe));
            }
            default:
                throw new IllegalArgumentException("job.function must be reduce, aggregate or process, not " + function);
        }
    }

    private static <T> WindowOperatorBuilder<T, String, TimeWindow> builder(StreamExecutionEnvironment env,
            WindowAssigner<Object, TimeWindow> assigner, KeyedStream<T, String> input, long lateness) {
        // WindowedStream's constructor: the assigner's default trigger (EventTimeTrigger); then
        // .allowedLateness(L), called also with 0 as the window kind's job does.
        WindowOperatorBuilder<T, String, TimeWindow> b = new WindowOperatorBuilder<>(assigner,
                assigner.getDefaultTrigger(), env.getConfig(), input.getType(), input.getKeySelector(),
                input.getKeyType());
        b.allowedLateness(Duration.ofMillis(lateness));
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
