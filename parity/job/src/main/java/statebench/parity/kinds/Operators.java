package statebench.parity.kinds;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.flink.api.common.functions.ReduceFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.windowing.assigners.EventTimeSessionWindows;
import org.apache.flink.streaming.api.windowing.assigners.SlidingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperator;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperatorBuilder;
import org.apache.flink.util.Collector;

/**
 * One statebench operator (a {@code job:} section, or one entry of a chain's list) as Flink's own
 * operator on a stream of trace records: {@code keyBy(key)} then the kind's operator, measured
 * by a {@link Probe}.
 */
final class Operators {
    private Operators() {}

    /** What a chained operator emits for the next one, and so the value size the next one reads (DESIGN-CHAIN). */
    enum Emit {
        /** dedup: the record it keeps, its own value size (Out.c). */
        RECORD,
        /** keyBy().reduce(): the new (key, count, sum): its Tuple3 serialized size. */
        REDUCED_TUPLE,
        /** aggregate function: the accumulator (count, sum): a Tuple2 of longs, 16 bytes. */
        ACCUMULATOR,
        /** window reduce: the window's reduced (key, count, sum): its Tuple3 serialized size. */
        WINDOW_REDUCED,
        /** window aggregate: the result (count, sum), 16 bytes. */
        WINDOW_AGGREGATED,
        /** window process: one record per fire, (count, sum), 16 bytes. */
        WINDOW_PROCESSED,
        /** process: the input record (its value size, Out.c) per element, a Long (8 bytes) per timer fired. */
        PROCESS,
        /** interval-join: every pair, the two payloads' sizes together (Out.c + Out.d), at max(left, right). */
        PAIR
    }

    static final class Built {
        final DataStream<Out> results;
        final String mode;
        final Emit emit;

        Built(DataStream<Out> results, String mode, Emit emit) {
            this.results = results;
            this.mode = mode;
            this.emit = emit;
        }
    }

    /** Flink's StringSerializer length of an ASCII string: the length + 1 as a 7-bit varint, then a byte per char. */
    static int stringSize(String s) {
        int n = s.getBytes(StandardCharsets.UTF_8).length;
        int len = n + 1;
        int varint = 1;
        while (len >= 0x80) {
            len >>>= 7;
            varint++;
        }
        return varint + n;
    }

    /**
     * The record a chained operator's output becomes for the next operator: the same key, the
     * StreamRecord's timestamp (the input's, or a window's maxTimestamp: TimestampedCollector),
     * the value size DESIGN-CHAIN's table gives. Stateless, chained to the operator (forward).
     */
    static final class ToNext extends ProcessFunction<Out, KEvent> {
        private static final long serialVersionUID = 1L;
        private final Emit emit;
        /** The emitting operator's index: its replay clock stamps the record (KEvent.now). */
        private final int index;

        ToNext(Emit emit, int index) {
            this.emit = emit;
            this.index = index;
        }

        @Override
        public void processElement(Out o, Context ctx, Collector<KEvent> out) {
            int size;
            switch (emit) {
                case RECORD:
                    size = (int) o.c;
                    break;
                case REDUCED_TUPLE:
                case WINDOW_REDUCED:
                    size = stringSize(o.key) + 16;
                    break;
                case PROCESS:
                    size = o.a == 1 ? (int) o.c : 8;
                    break;
                case PAIR:
                    size = (int) (o.c + o.d);
                    break;
                case ACCUMULATOR:
                case WINDOW_AGGREGATED:
                case WINDOW_PROCESSED:
                    size = 16;
                    break;
                default:
                    throw new IllegalStateException("this kind's emissions feed no chained operator here: " + emit);
            }
            KEvent next = new KEvent(o.key, ctx.timestamp(), 0, size, 0);
            Probe.ReplayClock clock = Probe.CLOCKS.get(index);
            next.now = clock == null ? Long.MIN_VALUE : clock.now;
            out.collect(next);
        }
    }

    static Built build(StreamExecutionEnvironment env, String workloadPath, Spec job, String kind,
            DataStream<KEvent> input, Probe probe) throws Exception {
        KeyedStream<KEvent, String> keyed = input.keyBy((KeySelector<KEvent, String>) e -> e.key, Types.STRING);
        TypeInformation<Out> outType = TypeInformation.of(Out.class);
        switch (kind) {
            case "dedup": {
                String keep = job.string("keep", "first");
                Functions.Ttl ttl = Functions.Ttl.of(job);
                if (keep.equals("first")) {
                    return new Built(keyed(keyed.transform("dedup", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.DedupFirst(ttl), probe)), probe),
                            "dedup-first", Emit.RECORD);
                } else if (keep.equals("last")) {
                    return new Built(keyed(keyed.transform("dedup", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.DedupLast(ttl), probe)), probe),
                            "dedup-last", Emit.RECORD);
                }
                throw new IllegalArgumentException(job.where() + ".keep must be first or last, not " + keep);
            }
            case "aggregate": {
                String function = job.string("function", "reduce");
                Functions.Ttl ttl = Functions.Ttl.of(job);
                if (function.equals("aggregate")) {
                    return new Built(keyed(keyed.transform("aggregate", outType,
                            new ProbedKeyedProcessOperator<>(new Functions.Aggregate(ttl), probe)), probe), "aggregate",
                            Emit.ACCUMULATOR);
                } else if (function.equals("reduce") && ttl.ttlMs == 0) {
                    // keyBy().reduce(f): what KeyedStream.reduce builds (StreamGroupedReduceOperator,
                    // the type's serializer), with the Probe around it.
                    KeyedStream<Tuple3<String, Long, Long>, String> counted = input.map(Functions::counted)
                            .returns(Functions.COUNTED)
                            .keyBy((KeySelector<Tuple3<String, Long, Long>, String>) t -> t.f0, Types.STRING);
                    ReduceFunction<Tuple3<String, Long, Long>> reduce = (a, b) -> Tuple3.of(a.f0, a.f1 + b.f1, a.f2 + b.f2);
                    DataStream<Out> results = keyed(keyed(counted.transform("Keyed Reduce", Functions.COUNTED,
                            new ProbedReduceOperator<>(reduce,
                                    Functions.COUNTED.createSerializer(env.getConfig().getSerializerConfig()), probe)),
                            probe).map(t -> new Out(t.f0, t.f1, t.f2, 0, 0)).returns(outType), probe);
                    return new Built(results, "aggregate", Emit.REDUCED_TUPLE);
                }
                throw new IllegalArgumentException(job.where() + ".function must be reduce (no ttl) or aggregate");
            }
            case "process": {
                ProcessInterpreter fn = ProcessInterpreter.of(job, job.raw("states"), job.raw("on-event"),
                        job.raw("on-timer"));
                return new Built(keyed(keyed.transform("process", outType, new ProbedKeyedProcessOperator<>(fn, probe)), probe),
                        "process", Emit.PROCESS);
            }
            case "window":
                return window(env, job, input, probe, outType);
            case "interval-join": {
                // left.intervalJoin(right).between(lower, upper)[.lowerBoundExclusive()]...
                // .process(f): KeyedStream.IntervalJoined.process's operator and serializers.
                TypeSerializer<Tuple3<String, Long, byte[]>> serializer =
                        Functions.RECORD.createSerializer(env.getConfig().getSerializerConfig());
                // The generator's share of right-input records: the trace already holds it.
                job.string("right-share", "");
                // One stream in the trace's order: statebench's read: arrival (see twoInputJoin).
                if (!job.string("read", "alternate").equals("arrival")) {
                    throw new IllegalArgumentException(job.where() + ": read: alternate runs as a two-input job (Operators.twoInputJoin)");
                }
                job.string("sources", "");
                return new Built(keyed(keyed.transform("Interval Join", outType, new ProbedIntervalJoinOperator<String>(
                        job.millis("lower"), job.millis("upper"), job.bool("lower-inclusive", true),
                        job.bool("upper-inclusive", true), serializer, new Functions.EmitPair(), probe)), probe), "join",
                        Emit.PAIR);
            }
            default:
                throw new IllegalArgumentException(workloadPath + ": job.kind '" + kind
                        + "' has no Flink job here (dedup, aggregate, process, window, interval-join)");
        }
    }

    /**
     * keyBy().window(assigner).allowedLateness(L).reduce/aggregate/process(...), the operator
     * built as WindowedStream builds it (WindowOperatorBuilder), with the Probe around it.
     */
    private static Built window(StreamExecutionEnvironment env, Spec job, DataStream<KEvent> source,
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
                throw new IllegalArgumentException(job.where() + ".assigner must be tumbling, sliding or session, not "
                        + assignerName);
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
                return new Built(keyed(counted.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe)),
                        probe),
                        "window", Emit.WINDOW_REDUCED);
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
                return new Built(keyed(records.transform(b.generateOperatorName(), outType, ProbedWindowOperator.of(op, probe)),
                        probe),
                        "window", function.equals("process") ? Emit.WINDOW_PROCESSED : Emit.WINDOW_AGGREGATED);
            }
            default:
                throw new IllegalArgumentException(job.where() + ".function must be reduce, aggregate or process, not "
                        + function);
        }
    }

    /**
     * The keyed operator (and what is chained after it) at the probe's parallelism; everything
     * before keyBy stays at the environment's 1, so the trace's order and watermarks reach each
     * subtask as they leave the one source (ParityJob does the same).
     */
    /**
     * An interval join with two real inputs, as users write it: {@code sources: one}, one source
     * whose records two filters split ({@code source.filter(left)}, {@code source.filter(right)};
     * its watermarks reach both inputs), or {@code sources: two}, a source per input (its own
     * watermarks over its own partitions). Then {@code left.keyBy(k).intervalJoin(right.keyBy(k))
     * .between(lower, upper).process(f)}: KeyedStream.IntervalJoined.process's graph (connect,
     * keyBy both, the operator), the operator probed. The join starts reading after
     * {@code startDelayMs}, both inputs backed up (statebench's {@code read: alternate}).
     */
    static Built twoInputJoin(StreamExecutionEnvironment env, Spec job, String trace, long outOfOrderness,
            long every, boolean twoSources, int[][] partitions, long eventsPerSecond, double rightShare, Probe probe,
            long startDelayMs) throws Exception {
        TypeSerializer<Tuple3<String, Long, byte[]>> serializer =
                Functions.RECORD.createSerializer(env.getConfig().getSerializerConfig());
        job.string("right-share", "");
        job.string("read", "");
        job.string("sources", "");
        TypeInformation<KEvent> eventType = TypeInformation.of(KEvent.class);
        DataStream<KEvent> left;
        DataStream<KEvent> right;
        if (twoSources) {
            // Paced together at the workload's rate: each source at its input's share of it.
            long rightRate = Math.round(eventsPerSecond * rightShare);
            left = source(env, trace, 0, outOfOrderness, every, partitions[0], eventsPerSecond - rightRate, eventType);
            right = source(env, trace, 1, outOfOrderness, every, partitions[1], rightRate, eventType);
        } else {
            DataStream<KEvent> source = source(env, trace, -1, outOfOrderness, every, union(partitions),
                    eventsPerSecond, eventType);
            left = source.filter(e -> e.input == 0).name("left");
            right = source.filter(e -> e.input != 0).name("right");
        }
        KeySelector<Tuple3<String, Long, byte[]>, String> key = t -> t.f0;
        KeyedStream<Tuple3<String, Long, byte[]>, String> l = left.map(Functions::record).returns(Functions.RECORD)
                .keyBy(key, Types.STRING);
        KeyedStream<Tuple3<String, Long, byte[]>, String> r = right.map(Functions::record).returns(Functions.RECORD)
                .keyBy(key, Types.STRING);
        DataStream<Out> results = keyed(l.connect(r).keyBy(key, key).transform("Interval Join",
                TypeInformation.of(Out.class), new ProbedTwoInputIntervalJoin<String>(job.millis("lower"),
                        job.millis("upper"), job.bool("lower-inclusive", true), job.bool("upper-inclusive", true),
                        serializer, new Functions.EmitPair(), probe, startDelayMs, twoSources ? 2 : 1)), probe);
        return new Built(results, "join", Emit.PAIR);
    }

    /** Every partition of either input, in order. */
    static int[] union(int[][] byInput) {
        return java.util.stream.IntStream.concat(java.util.Arrays.stream(byInput[0]),
                java.util.Arrays.stream(byInput[1])).distinct().sorted().toArray();
    }

    @SuppressWarnings("deprecation")
    private static DataStream<KEvent> source(StreamExecutionEnvironment env, String trace, int input,
            long outOfOrderness, long every, int[] partitions, long eventsPerSecond, TypeInformation<KEvent> type) {
        String name = input < 0 ? "trace" : "trace input " + input;
        // A paced source at a rate of 0 would run unpaced: at least one record a second.
        long rate = eventsPerSecond > 0 ? Math.max(1, eventsPerSecond) : 0;
        return env.addSource(new KindsSource(trace, input, rate), name, type)
                .assignTimestampsAndWatermarks(org.apache.flink.api.common.eventtime.WatermarkStrategy
                        .<KEvent>forGenerator(ctx -> new PartitionWatermarks(outOfOrderness, every, partitions))
                        .withTimestampAssigner((e, ts) -> e.time));
    }

    private static <T> SingleOutputStreamOperator<T> keyed(SingleOutputStreamOperator<T> op, Probe probe) {
        return op.setParallelism(probe.parallelism);
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
}
