package statebench.parity;

import java.util.HashMap;
import java.util.Map;

/** Value of MapState<Long, TimerDecrement> in the parity job: window label -> count to decrement. */
public class TimerDecrement {
    public Map<String, Integer> windows = new HashMap<>();

    public TimerDecrement() {}
}
