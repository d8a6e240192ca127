package statebench.parity.kinds;

import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A workload's {@code job:} section as read (snakeyaml-engine, Flink's own YAML parser); every key must be used. */
final class Spec {
    private final String where;
    private final Map<String, Object> map;
    private final Set<String> used = new HashSet<>();

    @SuppressWarnings("unchecked")
    Spec(String where, Object map) {
        if (!(map instanceof Map)) {
            throw new IllegalArgumentException(where + ": expected a mapping, got " + map);
        }
        this.where = where;
        this.map = (Map<String, Object>) map;
    }

    /** Where this section is ("file: job[1]"), for messages. */
    String where() {
        return where;
    }

    boolean has(String key) {
        return map.containsKey(key);
    }

    String string(String key, String fallback) {
        used.add(key);
        Object v = map.get(key);
        return v == null ? fallback : v.toString();
    }

    String string(String key) {
        String v = string(key, null);
        if (v == null) {
            throw new IllegalArgumentException(where + "." + key + " is missing");
        }
        return v;
    }

    long number(String key, long fallback) {
        String v = string(key, null);
        return v == null ? fallback : Long.parseLong(v.trim());
    }

    boolean bool(String key, boolean fallback) {
        String v = string(key, null);
        return v == null ? fallback : Boolean.parseBoolean(v.trim());
    }

    /** A statebench duration ("30m", "24h", "3s", "500ms", "2d", or ms) in ms; fallback when absent. */
    long millis(String key, long fallback) {
        String v = string(key, null);
        return v == null ? fallback : millis(where + "." + key, v);
    }

    long millis(String key) {
        return millis(where + "." + key, string(key));
    }

    private static final Pattern DURATION = Pattern.compile("\\s*(-?\\d+)\\s*(ms|s|m|min|h|d)?\\s*");

    static long millis(String what, String text) {
        Matcher m = DURATION.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException(what + ": cannot read duration '" + text + "'");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2) == null ? "ms" : m.group(2);
        switch (unit) {
            case "ms":
                return n;
            case "s":
                return n * 1000;
            case "m":
            case "min":
                return n * 60_000;
            case "h":
                return n * 3_600_000;
            default:
                return n * 86_400_000;
        }
    }

    /** The value as parsed (a scalar, list or mapping), or null; marks the key used. */
    Object raw(String key) {
        used.add(key);
        return map.get(key);
    }

    Spec child(String key) {
        used.add(key);
        Object v = map.get(key);
        return v == null ? null : new Spec(where + "." + key, v);
    }

    /** Fails on keys nobody read: the Java side must not silently ignore part of the contract. */
    void done() {
        Set<String> unused = new TreeSet<>(map.keySet());
        unused.removeAll(used);
        if (!unused.isEmpty()) {
            throw new IllegalArgumentException(where + ": the parity job does not know " + unused
                    + " (map them in statebench.parity.kinds.KindsJob)");
        }
    }
}
