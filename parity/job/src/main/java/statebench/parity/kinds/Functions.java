package statebench.parity.kinds;

import java.time.Duration;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.api.java.tuple.Tuple3;
import org.apache.flink.api.java.typeutils.TupleTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The user functions of the kinds' jobs, as the kinds' owners wrote them down for statebench
 * (/tmp/sb-coord/flink-jobs-{valstate,window,join}.md; docs/jobs.md): what a user would write,
 * run by Flink's own operators.
 */
public final class Functions {
    private Functions() {}

    /** A record's element for window process/aggregate and the join: (key, event time, payload). */
    static final TypeInformation<Tuple3<String, Long, byte[]>> RECORD =
            Types.TUPLE(Types.STRING, Types.LONG, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    /** (key, count, sum of value sizes): window reduce and keyBy().reduce(). */
    static final TypeInformation<Tuple3<String, Long, Long>> COUNTED = Types.TUPLE(Types.STRING, Types.LONG, Types.LONG);

    /** The window and join kinds' payload: byte i = (byte) splitmix64(eventTime * 31 + i). */
    static byte[] recordPayload(KEvent e) {
        byte[] p = new byte[e.valueSize];
        for (int i = 0; i < p.length; i++) {
            p[i] = (byte) Mix.splitmix64(e.time * 31 + i);
        }
        return p;
    }

    static Tuple3<String, Long, byte[]> record(KEvent e) {
        return Tuple3.of(e.key, e.time, recordPayload(e));
    }

    static Tuple3<String, Long, Long> counted(KEvent e) {
        return Tuple3.of(e.key, 1L, (long) e.valueSize);
    }

    /** The valstate kinds' payload: the big-endian bytes of splitmix64(seed + j), j = 0, 1, ..., cut to n. */
    static byte[] payload(long seed, int n) {
        byte[] p = new byte[n];
        for (int i = 0; i < n; i++) {
            p[i] = (byte) (Mix.splitmix64(seed + (i >>> 3)) >>> (56 - 8 * (i & 7)));
        }
        return p;
    }

    /** The first min(8, len) bytes big-endian, zero-padded on the right; empty: 0. */
    static long first8(byte[] b) {
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (i < b.length ? (b[i] & 0xFF) : 0);
        }
        return b.length == 0 ? 0 : v;
    }

    /** A state's TTL as the workload says (ttl, ttl-update, cleanup, query-time-after). */
    public static final class Ttl implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        /** 0: no TTL. */
        long ttlMs;
        boolean compactionFilter = true;
        long queryTimeAfter = 1000;
        boolean updateOnRead;

        static Ttl of(Spec s) {
            Ttl t = new Ttl();
            t.ttlMs = s.millis("ttl", 0);
            String update = s.string("ttl-update", "on-create-and-write");
            t.updateOnRead = update.equals("on-read-and-write");
            String cleanup = s.string("cleanup", "compaction");
            t.compactionFilter = cleanup.equals("compaction");
            t.queryTimeAfter = s.number("query-time-after", 1000);
            return t;
        }

        /** StateTtlConfig: processing time, never return expired, cleanup in compaction or none. */
        void apply(StateDescriptor<?, ?> d) {
            if (ttlMs <= 0) {
                return;
            }
            StateTtlConfig.Builder b = StateTtlConfig.newBuilder(Duration.ofMillis(ttlMs))
                    .setUpdateType(updateOnRead ? StateTtlConfig.UpdateType.OnReadAndWrite
                            : StateTtlConfig.UpdateType.OnCreateAndWrite)
                    .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired);
            if (compactionFilter) {
                b.cleanupInRocksdbCompactFilter(queryTimeAfter);
            } else {
                b.disableCleanupInBackground();
            }
            d.enableTimeToLive(b.build());
        }
    }

    /** dedup keep-first: ValueState<Boolean> "seen"; emit when absent (or expired). */
    public static final class DedupFirst extends KeyedProcessFunction<String, KEvent, Out> {
        private static final long serialVersionUID = 1L;
        private final Ttl ttl;
        private transient ValueState<Boolean> seen;

        public DedupFirst(Ttl ttl) {
            this.ttl = ttl;
        }

        @Override
        public void open(Configuration parameters) {
            ValueStateDescriptor<Boolean> d = new ValueStateDescriptor<>("seen", Types.BOOLEAN);
            ttl.apply(d);
            seen = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
            if (seen.value() == null) {
                seen.update(true);
                // c: the record's value size, what a chain's next operator reads (DESIGN-CHAIN).
                out.collect(new Out(e.key, e.time, 0, e.valueSize, 0));
            }
        }
    }

    /** dedup keep-last: ValueState<Tuple2<Long, byte[]>> "last", one put per record, every record emitted. */
    public static final class DedupLast extends KeyedProcessFunction<String, KEvent, Out> {
        private static final long serialVersionUID = 1L;
        private final Ttl ttl;
        private transient ValueState<Tuple2<Long, byte[]>> last;

        public DedupLast(Ttl ttl) {
            this.ttl = ttl;
        }

        @Override
        public void open(Configuration parameters) {
            ValueStateDescriptor<Tuple2<Long, byte[]>> d = new ValueStateDescriptor<>("last",
                    new TupleTypeInfo<>(Types.LONG, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            ttl.apply(d);
            last = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
            long h = e.key.hashCode();
            last.update(Tuple2.of(e.time, payload(Mix.mix(h, e.time, e.valueSize, -1), e.valueSize)));
            out.collect(new Out(e.key, e.time, 0, e.valueSize, 0));
        }
    }

    /** aggregate, function aggregate: ValueState<Tuple2<Long, Long>> "acc" (count, sum), get + put per record. */
    public static final class Aggregate extends KeyedProcessFunction<String, KEvent, Out> {
        private static final long serialVersionUID = 1L;
        private final Ttl ttl;
        private transient ValueState<Tuple2<Long, Long>> acc;

        public Aggregate(Ttl ttl) {
            this.ttl = ttl;
        }

        @Override
        public void open(Configuration parameters) {
            ValueStateDescriptor<Tuple2<Long, Long>> d =
                    new ValueStateDescriptor<>("acc", Types.TUPLE(Types.LONG, Types.LONG));
            ttl.apply(d);
            acc = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
            Tuple2<Long, Long> a = acc.value();
            if (a == null) {
                a = Tuple2.of(0L, 0L);
            }
            a = Tuple2.of(a.f0 + 1, a.f1 + e.valueSize);
            acc.update(a);
            out.collect(new Out(e.key, a.f0, a.f1, 0, 0));
        }
    }

    /** A window's count and sum of payload lengths (its AggregatingState's accumulator). */
    public static final class CountSum
            implements AggregateFunction<Tuple3<String, Long, byte[]>, Tuple2<Long, Long>, Tuple2<Long, Long>> {
        private static final long serialVersionUID = 1L;

        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Tuple3<String, Long, byte[]> e, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + 1, acc.f1 + e.f2.length);
        }

        @Override
        public Tuple2<Long, Long> getResult(Tuple2<Long, Long> acc) {
            return acc;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }

    /** reduce: the window's one reduced (key, count, sum) -> (start, end, count, sum). */
    public static final class EmitReduced
            extends ProcessWindowFunction<Tuple3<String, Long, Long>, Out, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<Tuple3<String, Long, Long>> in, Collector<Out> out) {
            Tuple3<String, Long, Long> r = in.iterator().next();
            out.collect(new Out(key, ctx.window().getStart(), ctx.window().getEnd(), r.f1, r.f2));
        }
    }

    /** aggregate: the window's accumulator (count, sum) -> (start, end, count, sum). */
    public static final class EmitAggregated extends ProcessWindowFunction<Tuple2<Long, Long>, Out, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<Tuple2<Long, Long>> in, Collector<Out> out) {
            Tuple2<Long, Long> acc = in.iterator().next();
            out.collect(new Out(key, ctx.window().getStart(), ctx.window().getEnd(), acc.f0, acc.f1));
        }
    }

    /** process: every element of the window (its ListState, read whole) -> (start, end, count, sum). */
    public static final class EmitElements
            extends ProcessWindowFunction<Tuple3<String, Long, byte[]>, Out, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<Tuple3<String, Long, byte[]>> in, Collector<Out> out) {
            long count = 0;
            long sum = 0;
            for (Tuple3<String, Long, byte[]> e : in) {
                count++;
                sum += e.f2.length;
            }
            out.collect(new Out(key, ctx.window().getStart(), ctx.window().getEnd(), count, sum));
        }
    }

    /** A pair's (left time, right time, left payload length, right payload length). */
    public static final class EmitPair
            extends ProcessJoinFunction<Tuple3<String, Long, byte[]>, Tuple3<String, Long, byte[]>, Out> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Tuple3<String, Long, byte[]> left, Tuple3<String, Long, byte[]> right, Context ctx,
                Collector<Out> out) {
            out.collect(new Out(left.f0, ctx.getLeftTimestamp(), ctx.getRightTimestamp(), left.f2.length,
                    right.f2.length));
        }
    }
}
