package statebench.parity.kinds;

/** A running aggregate (count of elements, sum of their value sizes) for reduce and aggregate. A POJO. */
public class Acc {
    public String key;
    public long count;
    public long sum;

    public Acc() {}

    public Acc(String key, long count, long sum) {
        this.key = key;
        this.count = count;
        this.sum = sum;
    }

    static Acc of(KEvent e) {
        return new Acc(e.key, 1, e.valueSize);
    }

    static Acc merge(Acc x, Acc y) {
        return new Acc(x.key, x.count + y.count, x.sum + y.sum);
    }
}
