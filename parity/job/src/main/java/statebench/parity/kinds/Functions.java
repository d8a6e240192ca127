package statebench.parity.kinds;

import java.time.Duration;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.ProcessJoinFunction;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/** The user functions of the kinds' jobs (what a user would write; the operators are Flink's own). */
public final class Functions {
    private Functions() {}

    /** How a kind's ValueState lives: Flink's StateTtlConfig, processing time, as the workload says. */
    public static final class Ttl implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        /** 0: no TTL. */
        public long ttlMs;
        public boolean compactionFilter = true;
        public long queryTimeAfter = 1000;
        public boolean updateOnRead;

        void apply(ValueStateDescriptor<?> d) {
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

    /**
     * Deduplication in a ValueState: keep-first emits a key's first record (and again once its
     * entry expired); keep-last stores and emits every record.
     */
    public static final class Dedup extends KeyedProcessFunction<String, KEvent, Out> {
        private static final long serialVersionUID = 1L;
        private final String stateName;
        private final boolean keepLast;
        private final Ttl ttl;
        private transient ValueState<Boolean> seen;
        private transient ValueState<Long> last;

        public Dedup(String stateName, boolean keepLast, Ttl ttl) {
            this.stateName = stateName;
            this.keepLast = keepLast;
            this.ttl = ttl;
        }

        @Override
        public void open(Configuration parameters) {
            if (keepLast) {
                ValueStateDescriptor<Long> d = new ValueStateDescriptor<>(stateName, Types.LONG);
                ttl.apply(d);
                last = getRuntimeContext().getState(d);
            } else {
                ValueStateDescriptor<Boolean> d = new ValueStateDescriptor<>(stateName, Types.BOOLEAN);
                ttl.apply(d);
                seen = getRuntimeContext().getState(d);
            }
        }

        @Override
        public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
            if (keepLast) {
                last.update(e.time);
                out.collect(new Out(e.key, e.time, 0, 0, 0));
            } else if (seen.value() == null) {
                seen.update(true);
                out.collect(new Out(e.key, e.time, 0, 0, 0));
            }
        }
    }

    /** A running aggregate in a ValueState with TTL (keyBy().reduce() has no TTL). */
    public static final class TtlAggregate extends KeyedProcessFunction<String, KEvent, Out> {
        private static final long serialVersionUID = 1L;
        private final String stateName;
        private final Ttl ttl;
        private transient ValueState<Acc> acc;

        public TtlAggregate(String stateName, Ttl ttl) {
            this.stateName = stateName;
            this.ttl = ttl;
        }

        @Override
        public void open(Configuration parameters) {
            ValueStateDescriptor<Acc> d = new ValueStateDescriptor<>(stateName, TypeInformation.of(Acc.class));
            ttl.apply(d);
            acc = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
            Acc a = acc.value();
            a = a == null ? Acc.of(e) : Acc.merge(a, Acc.of(e));
            acc.update(a);
            out.collect(new Out(e.key, a.count, a.sum, 0, 0));
        }
    }

    /** Count and sum of value sizes of a window's elements (the window's AggregatingState). */
    public static final class CountSum implements AggregateFunction<KEvent, Acc, Acc> {
        private static final long serialVersionUID = 1L;

        @Override
        public Acc createAccumulator() {
            return new Acc(null, 0, 0);
        }

        @Override
        public Acc add(KEvent e, Acc a) {
            return new Acc(e.key, a.count + 1, a.sum + e.valueSize);
        }

        @Override
        public Acc getResult(Acc a) {
            return a;
        }

        @Override
        public Acc merge(Acc x, Acc y) {
            return new Acc(x.key != null ? x.key : y.key, x.count + y.count, x.sum + y.sum);
        }
    }

    /** Emits a window's (start, end, count, sum) from its one pre-aggregated value. */
    public static final class EmitAcc extends ProcessWindowFunction<Acc, Out, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<Acc> values, Collector<Out> out) {
            for (Acc a : values) {
                out.collect(new Out(key, ctx.window().getStart(), ctx.window().getEnd(), a.count, a.sum));
            }
        }
    }

    /** Emits a window's (start, end, count, sum) from all its elements (the window's ListState). */
    public static final class EmitElements extends ProcessWindowFunction<KEvent, Out, String, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(String key, Context ctx, Iterable<KEvent> elements, Collector<Out> out) {
            long count = 0;
            long sum = 0;
            for (KEvent e : elements) {
                count++;
                sum += e.valueSize;
            }
            out.collect(new Out(key, ctx.window().getStart(), ctx.window().getEnd(), count, sum));
        }
    }

    /** Emits a pair's (left time, right time, left value size, right value size). */
    public static final class EmitPair extends ProcessJoinFunction<KEvent, KEvent, Out> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(KEvent left, KEvent right, Context ctx, Collector<Out> out) {
            out.collect(new Out(left.key, left.time, right.time, left.valueSize, right.valueSize));
        }
    }
}
