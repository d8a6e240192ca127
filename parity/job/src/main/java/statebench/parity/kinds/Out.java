package statebench.parity.kinds;

/**
 * What a kind's job emits, as the result sink reads it: the key and up to four numbers whose
 * meaning depends on the kind ({@link ResultSink}). A POJO.
 */
public class Out {
    public String key;
    public long a;
    public long b;
    public long c;
    public long d;

    public Out() {}

    public Out(String key, long a, long b, long c, long d) {
        this.key = key;
        this.a = a;
        this.b = b;
        this.c = c;
        this.d = d;
    }
}
