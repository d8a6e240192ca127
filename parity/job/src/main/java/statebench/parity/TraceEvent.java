package statebench.parity;

/** One trace record: the key the job keys by (the trace's own key string) and its event time. */
public class TraceEvent {
    public String user;
    public long eventTime;

    public TraceEvent() {}

    public TraceEvent(String user, long eventTime) {
        this.user = user;
        this.eventTime = eventTime;
    }
}
