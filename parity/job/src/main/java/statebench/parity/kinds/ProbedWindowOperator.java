package statebench.parity.kinds;

import org.apache.flink.api.common.state.AppendingState;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.api.windowing.assigners.WindowAssigner;
import org.apache.flink.streaming.api.windowing.triggers.Trigger;
import org.apache.flink.streaming.api.windowing.windows.Window;
import org.apache.flink.streaming.runtime.operators.windowing.WindowOperator;
import org.apache.flink.streaming.runtime.operators.windowing.functions.InternalWindowFunction;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * Flink's {@link WindowOperator} exactly as {@code WindowOperatorBuilder} (what
 * {@code keyBy().window(a).reduce/aggregate/process(...)} uses) built it: this copies the built
 * operator's constructor arguments (assigner, window serializer, key selector and serializer,
 * window state descriptor, internal window function, trigger, allowed lateness, late tag) and
 * only adds a {@link Probe} around it, which also counts the timers it fires.
 */
public class ProbedWindowOperator<K, IN, ACC, OUT, W extends Window> extends WindowOperator<K, IN, ACC, OUT, W> {
    private static final long serialVersionUID = 1L;
    private final Probe probe;

    @SuppressWarnings({"unchecked", "rawtypes"})
    static <K, IN, OUT, W extends Window> ProbedWindowOperator<K, IN, ?, OUT, W> of(
            WindowOperator<K, IN, ?, OUT, W> built, Probe probe) throws Exception {
        Class<?> c = WindowOperator.class;
        return new ProbedWindowOperator(
                built.getWindowAssigner(),
                (TypeSerializer) Probe.field(c, "windowSerializer").get(built),
                built.getKeySelector(),
                (TypeSerializer) Probe.field(c, "keySerializer").get(built),
                (StateDescriptor) built.getStateDescriptor(),
                (InternalWindowFunction) built.getUserFunction(),
                built.getTrigger(),
                (long) Probe.field(c, "allowedLateness").get(built),
                (OutputTag) Probe.field(c, "lateDataOutputTag").get(built),
                probe);
    }

    public ProbedWindowOperator(WindowAssigner<? super IN, W> windowAssigner, TypeSerializer<W> windowSerializer,
            KeySelector<IN, K> keySelector, TypeSerializer<K> keySerializer,
            StateDescriptor<? extends AppendingState<IN, ACC>, ?> windowStateDescriptor,
            InternalWindowFunction<ACC, OUT, K, W> windowFunction, Trigger<? super IN, ? super W> trigger,
            long allowedLateness, OutputTag<IN> lateDataOutputTag, Probe probe) {
        super(windowAssigner, windowSerializer, keySelector, keySerializer, windowStateDescriptor, windowFunction,
                trigger, allowedLateness, lateDataOutputTag);
        this.probe = probe;
    }

    @Override
    public void open() throws Exception {
        probe.install(getKeyedStateBackend());
        super.open();
    }

    @Override
    public void close() throws Exception {
        probe.uninstall(getKeyedStateBackend());
        super.close();
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        probe.onElement(element.getTimestamp());
        super.processElement(element);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        probe.onWatermark(mark);
        super.processWatermark(mark);
        if (mark.getTimestamp() == Long.MAX_VALUE) {
            probe.measure(getKeyedStateBackend());
        }
    }

    @Override
    public void onEventTime(InternalTimer<K, W> timer) throws Exception {
        probe.eventTimers++;
        super.onEventTime(timer);
    }

    @Override
    public void onProcessingTime(InternalTimer<K, W> timer) throws Exception {
        probe.processingTimers++;
        super.onProcessingTime(timer);
    }
}
