package statebench.parity;

/** The value of {@code MapState<String window, AdsFrequencyStats>}: a POJO, as in the field report. */
public class AdsFrequencyStats {
    public long count;
    public long firstEventTime;
    public long lastEventTime;

    public AdsFrequencyStats() {}
}
