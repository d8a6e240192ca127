package statebench.parity;

import java.util.HashMap;
import java.util.Map;

/** The value of {@code MapState<Long timer, TimerDecrement>}: window label -> how many to decrement. */
public class TimerDecrement {
    public Map<String, Integer> windows = new HashMap<>();

    public TimerDecrement() {}
}
