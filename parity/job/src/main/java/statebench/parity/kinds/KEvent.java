package statebench.parity.kinds;

/**
 * One trace v2 record ({@code key,event_time,partition,value_size,input}); the key as the job
 * keys it (the trace's own key string, as statebench's trace replay keys it). A POJO: Flink's
 * PojoSerializer writes it.
 */
public class KEvent {
    public String key;
    public long time;
    public int partition;
    public int valueSize;
    /** 0: the first (left) input, 1: the second (right). */
    public int input;
    /**
     * In a chain: the processing time (statebench's replay clock) of the operator that emitted
     * this record, when it emitted it; Long.MIN_VALUE for a record of the source.
     */
    public long now = Long.MIN_VALUE;

    public KEvent() {}

    public KEvent(String key, long time, int partition, int valueSize, int input) {
        this.key = key;
        this.time = time;
        this.partition = partition;
        this.valueSize = valueSize;
        this.input = input;
    }

    @Override
    public String toString() {
        return key + "@" + time + "/" + input + "(" + valueSize + "b)";
    }
}
