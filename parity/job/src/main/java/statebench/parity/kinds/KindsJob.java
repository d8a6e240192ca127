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
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
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
 *          [--watermark-every 64] [--compact-at-end true]
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
        Spec eventTime = workload.child("event-time");
        long outOfOrderness = eventTime == null ? 0 : eventTime.millis("out-of-orderness", 0);

        Configuration conf = new Configuration();
        String confDir = opts.get("flink-conf-dir");
        if (confDir != null) {
            // statebench flink run: the profile's exported config.yaml, as Flink loads it.
            statebench.parity.RocksDBFiles.loadExported(confDir, opts.get("factory-knobs"), conf);
        } else {
            readKeyValues(require(opts, "flink-conf")).forEach(conf::setString);
        }
        conf.setString("state.backend.type", "rocksdb");
        conf.setString("state.backend.rocksdb.options-factory", ObservingOptionsFactory.class.getName());
        conf.setString("state.backend.rocksdb.localdir", new File(out, "flink-rocksdb").getAbsolutePath());
        // statebench's MAX_PARALLELISM: 256 key groups, a 2-byte key-group prefix.
        conf.setString("pipeline.max-parallelism", "256");
        conf.setString("pipeline.auto-watermark-interval", "0");
        conf.setString("pipeline.force-kryo", "false");
        // An interval join with two real inputs (read: alternate) reads them backed up: the
        // sources' outputs hold the whole trace (no backpressure stops a source), and the join
        // starts once every source has ended (ProbedTwoInputIntervalJoin), so Flink's task takes
        // one element of each input in turn from the first element to the last.
        List<Spec> peek = operators(workloadPath, workload);
        if (peek.get(0).string("kind").equals("interval-join")
                && !peek.get(0).string("read", "alternate").equals("arrival")
                && !opts.getOrDefault("environment", "local").equals("context")) {
            conf.setString("taskmanager.network.memory.floating-buffers-per-gate", "1024");
            conf.setString("taskmanager.network.memory.max-buffers-per-channel", "1024");
            conf.setString("taskmanager.memory.network.min", "256mb");
            conf.setString("taskmanager.memory.network.max", "256mb");
            // Every record visible to the join as soon as its source wrote it (no 100 ms flusher):
            // once the sources have ended, nothing is left in a buffer the join cannot see yet.
            conf.setString("execution.buffer-timeout.interval", "0 ms");
        }
        // --environment context: submitted to a cluster (statebench flink run), its keyed
        // operators at --parallelism (the source stays 1).
        boolean context = opts.getOrDefault("environment", "local").equals("context");
        int parallelism = Integer.parseInt(opts.getOrDefault("parallelism", "1"));
        StreamExecutionEnvironment env = context
                ? StreamExecutionEnvironment.getExecutionEnvironment(conf)
                : StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        // Everything but the keyed operator at 1 (Operators.keyed sets it to --parallelism): a
        // map before keyBy at --parallelism would shuffle the trace round-robin first.
        env.setParallelism(1);

        String trace = require(opts, "trace");
        List<KEvent> events = KindsSource.read(trace);
        long every = Long.parseLong(opts.getOrDefault("watermark-every", "64"));
        List<Spec> operators = operators(workloadPath, workload);
        String kind0 = operators.get(0).string("kind");
        boolean chain = operators.size() > 1;

        // The source's watermark: the minimum over the trace's partitions (a join's trace keeps
        // its inputs on partitions of their own: each input's own watermark, then the minimum).
        int[] partitions = Operators.union(inputPartitions(events));
        // --events-per-second: the workload's rate: (statebench flink run); 0 unpaced.
        long eventsPerSecond = Long.parseLong(opts.getOrDefault("events-per-second", "0"));
        // A join with two real inputs makes its own sources (Operators.twoInputJoin): no other
        // source may run beside them (the join starts when they have ended).
        boolean twoInputs = kind0.equals("interval-join")
                && !operators.get(0).string("read", "alternate").equals("arrival");
        @SuppressWarnings("deprecation")
        DataStream<KEvent> source = twoInputs ? null
                : env.addSource(new KindsSource(trace, -1, eventsPerSecond), "trace", TypeInformation.of(KEvent.class))
                        .assignTimestampsAndWatermarks(WatermarkStrategy
                                .<KEvent>forGenerator(ctx -> new PartitionWatermarks(outOfOrderness, every, partitions))
                                .withTimestampAssigner((e, ts) -> e.time));
        // A chain (DESIGN-CHAIN): source -> keyBy -> op0 -> keyBy -> op1 ..., parallelism 1, every
        // task in the one slot (slot sharing), each keyed operator its own RocksDB instance sharing
        // the slot's memory (fixed-per-slot / managed: one cache and WriteBufferManager).
        DataStream<KEvent> input = source;
        for (int i = 0; i < operators.size(); i++) {
            Spec job = operators.get(i);
            String kind = job.string("kind");
            if (i > 0 && kind.equals("interval-join")) {
                throw new IllegalArgumentException(job.where() + ": an interval join runs only as a chain's first operator");
            }
            Probe probe = chain ? new Probe(new File(out).getAbsolutePath(), kind, i)
                    : new Probe(new File(out).getAbsolutePath(), kind);
            probe.compactAtEnd = Boolean.parseBoolean(opts.getOrDefault("compact-at-end", "false"));
            probe.parallelism = context ? parallelism : 1;
            job.string("read", "");
            Operators.Built built = i == 0 && twoInputs
                    ? Operators.twoInputJoin(env, job, trace, outOfOrderness, every,
                            job.string("sources", workload.raw("inputs") != null ? "two" : "one").equals("two"),
                            inputPartitions(events), eventsPerSecond, share(events), probe,
                            Long.parseLong(opts.getOrDefault("join-start-delay-ms", context ? "0" : "60000")))
                    : Operators.build(env, workloadPath, job, kind, input, probe);
            job.done();
            String prefix = chain ? "op" + i + "." : "";
            if (context) {
                // On a cluster nothing reads the results back (ResultSink keeps them in the
                // TaskManager's heap): discarded, chained to the operator at its parallelism.
                built.results.sinkTo(new DiscardingSink<>()).setParallelism(parallelism).name("results");
            } else {
                @SuppressWarnings("deprecation")
                var sink = built.results.addSink(new ResultSink(built.mode, prefix));
                sink.name(chain ? "results of op" + i : "results");
            }
            if (i + 1 < operators.size()) {
                input = built.results.process(new Operators.ToNext(built.emit, i))
                        .returns(TypeInformation.of(KEvent.class)).name("op" + i + " emits");
            }
        }

        Files.writeString(Path.of(out, "flink-trace.txt"), "events " + events.size() + "\nkeys "
                + events.stream().map(e -> e.key).distinct().count() + "\n", StandardCharsets.UTF_8);
        if (context) {
            if (chain) {
                throw new IllegalArgumentException("a chain runs only in the local environment");
            }
            // Submitted to a cluster: a detached submission returns here at once; each subtask
            // writes its own measurements. No System.exit: this main runs in the JobManager.
            env.executeAsync("statebench flink run: " + kind0);
            return;
        }
        long start = System.nanoTime();
        env.execute("statebench parity: " + kind0 + (chain ? " chain of " + operators.size() : ""));
        System.err.printf("parity: Flink %s job finished in %.1f s%n", chain ? "chain" : kind0,
                (System.nanoTime() - start) / 1e9);
        if (chain) {
            Chain.sum(out, operators.size());
        }
        if (!Files.exists(Path.of(out, "flink.json"))) {
            System.err.println("parity: the job ended without measuring (no final watermark reached the operator)");
            System.exit(1);
        }
        ResultSink.write(Path.of(out, "flink-results.csv"));
    }

    /** The share of the trace's records on the second input. */
    private static double share(List<KEvent> events) {
        return events.isEmpty() ? 0.5 : events.stream().filter(e -> e.input != 0).count() / (double) events.size();
    }

    /** The trace's partitions carrying each input's records (statebench: Log::input_partitions). */
    private static int[][] inputPartitions(List<KEvent> events) {
        java.util.TreeSet<Integer> left = new java.util.TreeSet<>();
        java.util.TreeSet<Integer> right = new java.util.TreeSet<>();
        for (KEvent e : events) {
            (e.input == 0 ? left : right).add(e.partition);
        }
        return new int[][] {left.stream().mapToInt(Integer::intValue).toArray(),
            right.stream().mapToInt(Integer::intValue).toArray()};
    }

    /** The job: section's operators: one mapping, or a list of them (a chain, DESIGN-CHAIN). */
    private static List<Spec> operators(String workloadPath, Spec workload) {
        Object job = workload.raw("job");
        if (job == null) {
            throw new IllegalArgumentException(workloadPath + " has no job: section");
        }
        List<Spec> out = new java.util.ArrayList<>();
        if (job instanceof List) {
            List<?> list = (List<?>) job;
            if (list.isEmpty() || list.size() > 4) {
                throw new IllegalArgumentException(workloadPath + ": job: must list 1 to 4 operators");
            }
            for (int i = 0; i < list.size(); i++) {
                out.add(new Spec(workloadPath + ": job[" + i + "]", list.get(i)));
            }
        } else {
            out.add(new Spec(workloadPath + ": job", job));
        }
        return out;
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
