package statebench.parity.kinds;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * {@code kind: process}: a KeyedProcessFunction described as data (statebench's docs/jobs.md
 * "process"; /tmp/sb-coord/flink-jobs-valstate.md), interpreted. Every draw is a function of the
 * element's own fields ({@code mix(h, t, v, id)}), so both sides take the same actions.
 * Emits per element (key, 1, term) and per timer (key, 0, term): {@link ResultSink} sums them.
 */
public class ProcessInterpreter extends KeyedProcessFunction<String, KEvent, Out> {
    private static final long serialVersionUID = 1L;

    /** One declared state. */
    static final class StateDecl implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        String name;
        String type;
        long minSize;
        long maxSize;
        long keySpace = 1;
        Functions.Ttl ttl;
    }

    /** One action. */
    static final class Action implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        String action;
        int state = -1;
        double p = 1.0;
        long entries;
        long after;
    }

    private final List<StateDecl> decls;
    private final List<Action> onEvent;
    private final List<Action> onTimer;
    private transient List<State> states;

    ProcessInterpreter(List<StateDecl> decls, List<Action> onEvent, List<Action> onTimer) {
        this.decls = decls;
        this.onEvent = onEvent;
        this.onTimer = onTimer;
    }

    /** The job: section's states, on-event and on-timer lists. */
    @SuppressWarnings("unchecked")
    static ProcessInterpreter of(Spec job, Object statesYaml, Object onEventYaml, Object onTimerYaml) {
        List<StateDecl> decls = new ArrayList<>();
        List<String> names = new ArrayList<>();
        for (Object o : (List<Object>) statesYaml) {
            Spec s = new Spec("job.states", o);
            StateDecl d = new StateDecl();
            d.name = s.string("name");
            d.type = s.string("type");
            Object size = s.raw("value-size");
            if (size instanceof Map) {
                Spec r = new Spec("job.states." + d.name + ".value-size", size);
                d.minSize = r.number("min", 0);
                d.maxSize = r.number("max", 0);
                r.done();
            } else {
                d.minSize = d.maxSize = Long.parseLong(String.valueOf(size));
            }
            d.keySpace = s.number("key-space", 1);
            d.ttl = Functions.Ttl.of(s);
            s.done();
            decls.add(d);
            names.add(d.name);
        }
        return new ProcessInterpreter(decls, actions(onEventYaml, names, "job.on-event"),
                actions(onTimerYaml, names, "job.on-timer"));
    }

    @SuppressWarnings("unchecked")
    private static List<Action> actions(Object yaml, List<String> names, String where) {
        List<Action> out = new ArrayList<>();
        if (yaml == null) {
            return out;
        }
        for (Object o : (List<Object>) yaml) {
            Spec s = new Spec(where, o);
            Action a = new Action();
            a.action = s.string("action");
            String state = s.string("state", null);
            if (state != null) {
                a.state = names.indexOf(state);
                if (a.state < 0) {
                    throw new IllegalArgumentException(where + ": no state named " + state);
                }
            }
            a.p = Double.parseDouble(s.string("p", "1.0"));
            a.entries = s.number("entries", 0);
            a.after = s.millis("after", 0);
            s.done();
            out.add(a);
        }
        return out;
    }

    @Override
    public void open(Configuration parameters) {
        states = new ArrayList<>();
        for (StateDecl d : decls) {
            switch (d.type) {
                case "value": {
                    ValueStateDescriptor<byte[]> v =
                            new ValueStateDescriptor<>(d.name, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
                    d.ttl.apply(v);
                    states.add(getRuntimeContext().getState(v));
                    break;
                }
                case "list": {
                    ListStateDescriptor<byte[]> l =
                            new ListStateDescriptor<>(d.name, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
                    d.ttl.apply(l);
                    states.add(getRuntimeContext().getListState(l));
                    break;
                }
                case "map": {
                    MapStateDescriptor<Long, byte[]> m = new MapStateDescriptor<>(d.name, Types.LONG,
                            PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
                    d.ttl.apply(m);
                    states.add(getRuntimeContext().getMapState(m));
                    break;
                }
                default:
                    throw new IllegalArgumentException("job.states." + d.name + ".type: value, list or map, not " + d.type);
            }
        }
    }

    @Override
    public void processElement(KEvent e, Context ctx, Collector<Out> out) throws Exception {
        long term = run(onEvent, 0, e.key.hashCode(), e.time, e.valueSize, ctx);
        // c: the record's value size, what a chain's next operator reads (DESIGN-CHAIN).
        out.collect(new Out(e.key, 1, term, e.valueSize, 0));
    }

    @Override
    public void onTimer(long ts, OnTimerContext ctx, Collector<Out> out) throws Exception {
        String key = ctx.getCurrentKey();
        long term = run(onTimer, 10_000, key.hashCode(), ts, -1, ctx);
        out.collect(new Out(key, 0, term, 0, 0));
    }

    @SuppressWarnings("unchecked")
    private long run(List<Action> actions, int idBase, long h, long t, long v, Context ctx) throws Exception {
        long term = 0;
        for (int index = 0; index < actions.size(); index++) {
            Action a = actions.get(index);
            long id = idBase + index;
            long r = Mix.mix(h, t, v, id);
            if ((r >>> 11) >= (long) (a.p * 9007199254740992.0)) {
                continue;
            }
            StateDecl d = a.state >= 0 ? decls.get(a.state) : null;
            State s = a.state >= 0 ? states.get(a.state) : null;
            long uk = d == null ? 0 : Math.floorMod(Mix.mix(h, t, v, id + 1_000_000), d.keySpace);
            switch (a.action) {
                case "get":
                    if (d.type.equals("value")) {
                        byte[] b = ((ValueState<byte[]>) s).value();
                        term += b == null ? Mix.mix(id, -1, 0, 1) : Mix.mix(id, b.length, Functions.first8(b), 1);
                    } else {
                        Iterable<byte[]> list = ((ListState<byte[]>) s).get();
                        long j = 0;
                        if (list != null) {
                            for (byte[] b : list) {
                                term += Mix.mix(id, j, b.length, Functions.first8(b));
                                j++;
                            }
                        }
                        if (j == 0) {
                            term += Mix.mix(id, -1, 0, 2);
                        }
                    }
                    break;
                case "update":
                    if (d.type.equals("value")) {
                        ((ValueState<byte[]>) s).update(bytes(d, h, t, v, id));
                    } else {
                        ((ListState<byte[]>) s).update(List.of(bytes(d, h, t, v, id)));
                    }
                    break;
                case "append":
                    ((ListState<byte[]>) s).add(bytes(d, h, t, v, id));
                    break;
                case "map-get": {
                    byte[] b = ((MapState<Long, byte[]>) s).get(uk);
                    term += b == null ? Mix.mix(id, uk, -1, 0) : Mix.mix(id, uk, b.length, Functions.first8(b));
                    break;
                }
                case "map-put":
                    ((MapState<Long, byte[]>) s).put(uk, bytes(d, h, t, v, id));
                    break;
                case "map-remove":
                    ((MapState<Long, byte[]>) s).remove(uk);
                    break;
                case "iterate": {
                    Iterator<Map.Entry<Long, byte[]>> it = ((MapState<Long, byte[]>) s).entries().iterator();
                    long read = 0;
                    for (long i = 0; i < a.entries && it.hasNext(); i++) {
                        Map.Entry<Long, byte[]> en = it.next();
                        term += Mix.mix(id, en.getKey(), en.getValue().length, Functions.first8(en.getValue()));
                        read++;
                    }
                    term += Mix.mix(id, -2, read, 0);
                    break;
                }
                case "clear":
                    s.clear();
                    break;
                case "timer":
                    ctx.timerService().registerEventTimeTimer(t + a.after);
                    break;
                default:
                    throw new IllegalArgumentException("job: unknown action " + a.action);
            }
        }
        return term;
    }

    private static byte[] bytes(StateDecl d, long h, long t, long v, long id) {
        long size = d.minSize == d.maxSize ? d.minSize
                : d.minSize + Math.floorMod(Mix.mix(h, t, v, id + 2_000_000), d.maxSize - d.minSize + 1);
        return Functions.payload(Mix.mix(h, t, v, id + 3_000_000), (int) size);
    }
}
