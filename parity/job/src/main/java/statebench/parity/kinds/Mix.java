package statebench.parity.kinds;

/** DESIGN-19's result digest, the same as statebench's {@code pipeline::operators::mix}. */
public final class Mix {
    private Mix() {}

    /** h = a; h = h*1000003 ^ b; h = h*1000003 ^ c; h = h*1000003 ^ d; splitmix64(h), all wrapping. */
    public static long mix(long a, long b, long c, long d) {
        long h = a;
        h = h * 1000003L ^ b;
        h = h * 1000003L ^ c;
        h = h * 1000003L ^ d;
        return splitmix64(h);
    }

    static long splitmix64(long x) {
        long z = x + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
