package statebench.parity;

/** Value of MapState<String, AdsFrequencyStats> in the parity job (same fields, same order). */
public class AdsFrequencyStats {
    public long count;
    public long firstEventTime;
    public long lastEventTime;

    public AdsFrequencyStats() {}
}
