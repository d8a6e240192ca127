import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.core.memory.DataOutputSerializer;

import statebench.parity.AdsFrequencyStats;
import statebench.parity.TimerDecrement;

/**
 * Prints the bytes Flink 1.20.1's serializers write for statebench's value types, as hex, one
 * vector per line: "<kind> <description>\t<hex>". Run by run.sh; its output is pasted into
 * src/backend/serializer.rs as golden vectors.
 */
public class KryoGolden {
    static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(String.format("%02x", x));
        return s.toString();
    }

    static <T> byte[] bytes(TypeSerializer<T> ser, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(64);
        ser.serialize(value, out);
        return out.getCopyOfBuffer();
    }

    static SerializerConfig config(boolean forceKryo) {
        Configuration conf = new Configuration();
        conf.set(PipelineOptions.FORCE_KRYO, forceKryo);
        ExecutionConfig ec = new ExecutionConfig();
        ec.configure(conf, KryoGolden.class.getClassLoader());
        return ec.getSerializerConfig();
    }

    static AdsFrequencyStats stats(long count, long first, long last) {
        AdsFrequencyStats s = new AdsFrequencyStats();
        s.count = count;
        s.firstEventTime = first;
        s.lastEventTime = last;
        return s;
    }

    static TimerDecrement decrement(Object... labelsAndCounts) {
        TimerDecrement d = new TimerDecrement();
        for (int i = 0; i < labelsAndCounts.length; i += 2) {
            d.windows.put((String) labelsAndCounts[i], (Integer) labelsAndCounts[i + 1]);
        }
        return d;
    }

    /** What the KryoSerializer's Kryo looks like: which Kryo class, which ids the classes get. */
    static <T> void describe(TypeSerializer<T> ser, Class<T> type) throws Exception {
        com.esotericsoftware.kryo.Kryo kryo =
                ((org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer<T>) ser).getKryo();
        if (kryo == null) {
            bytes(ser, type.getDeclaredConstructor().newInstance());
            kryo = ((org.apache.flink.api.java.typeutils.runtime.kryo.KryoSerializer<T>) ser).getKryo();
        }
        System.out.println("# " + type.getSimpleName() + ": kryo " + kryo.getClass().getName()
                + ", references " + kryo.getReferences()
                + ", next registration id " + kryo.getNextRegistrationId());
        for (Class<?> c : new Class<?>[] {type, java.util.HashMap.class, String.class, Integer.class, Long.class}) {
            com.esotericsoftware.kryo.Registration r = kryo.getClassResolver().getRegistration(c);
            System.out.println("#   " + c.getName() + " -> "
                    + (r == null ? "unregistered (written by name)"
                            : "id " + r.getId() + ", " + r.getSerializer().getClass().getName()));
        }
    }

    public static void main(String[] args) throws Exception {
        TypeSerializer<AdsFrequencyStats> kryoStats =
                TypeInformation.of(AdsFrequencyStats.class).createSerializer(config(true));
        TypeSerializer<AdsFrequencyStats> pojoStats =
                TypeInformation.of(AdsFrequencyStats.class).createSerializer(config(false));
        TypeSerializer<TimerDecrement> kryoDecrement =
                TypeInformation.of(TimerDecrement.class).createSerializer(config(true));
        System.out.println("# stats kryo serializer: " + kryoStats.getClass().getName());
        System.out.println("# stats pojo serializer: " + pojoStats.getClass().getName());
        System.out.println("# decrement serializer: " + kryoDecrement.getClass().getName());
        describe(kryoStats, AdsFrequencyStats.class);
        describe(kryoDecrement, TimerDecrement.class);

        Map<String, AdsFrequencyStats> statsCases = new LinkedHashMap<>();
        statsCases.put("zero", stats(0, 0, 0));
        statsCases.put("small", stats(1, 1, 2));
        statsCases.put("typical", stats(3, 1767225600000L, 1767225660000L));
        statsCases.put("event-time", stats(1, 1767225598850L, 1767225598850L));
        statsCases.put("negative", stats(-1, -2, -1767225598850L));
        statsCases.put("count-2^31", stats(1L << 31, 63, 64));
        statsCases.put("extremes", stats(Long.MAX_VALUE, Long.MIN_VALUE, -64));
        for (Map.Entry<String, AdsFrequencyStats> c : statsCases.entrySet()) {
            AdsFrequencyStats v = c.getValue();
            String desc = c.getKey() + " " + v.count + " " + v.firstEventTime + " " + v.lastEventTime;
            System.out.println("stats-kryo " + desc + "\t" + hex(bytes(kryoStats, v)));
            System.out.println("stats-pojo " + desc + "\t" + hex(bytes(pojoStats, v)));
        }

        List<Object[]> decrements = new ArrayList<>();
        decrements.add(new Object[] {});
        decrements.add(new Object[] {"1m", 1});
        decrements.add(new Object[] {"30m", 2});
        decrements.add(new Object[] {"7d", 300});
        decrements.add(new Object[] {"1m", -1});
        decrements.add(new Object[] {"1h", Integer.MAX_VALUE});
        decrements.add(new Object[] {"1h", Integer.MIN_VALUE});
        decrements.add(new Object[] {"1m", 1, "5m", 1});
        decrements.add(new Object[] {"5m", 1, "1m", 1});
        decrements.add(new Object[] {"1m", 1, "5m", 2, "10m", 3, "30m", 4});
        decrements.add(new Object[] {"30m", 4, "10m", 3, "5m", 2, "1m", 1});
        decrements.add(new Object[] {"1h", 1, "3h", 1, "6h", 1, "12h", 1});
        decrements.add(new Object[] {"1d", 1, "3d", 2, "7d", 3});
        // "Aa" and "BB" have the same String.hashCode (2112): one bucket, insertion order.
        decrements.add(new Object[] {"Aa", 1, "BB", 2});
        decrements.add(new Object[] {"BB", 2, "Aa", 1});
        // Same bucket in a 16-entry table, different hashes: 1m (0xcc2 ^ >>>16 -> 2), 1s (0xcc8 -> 8).
        decrements.add(new Object[] {"a", 1, "q", 2});
        decrements.add(new Object[] {"q", 2, "a", 1});
        // Enough entries to resize the table (threshold 12 at 16 buckets).
        decrements.add(new Object[] {
            "1s", 1, "2s", 2, "5s", 3, "10s", 4, "30s", 5, "1m", 6, "2m", 7, "5m", 8,
            "10m", 9, "15m", 10, "30m", 11, "1h", 12, "2h", 13, "6h", 14, "12h", 15, "1d", 16});
        decrements.add(new Object[] {"1500ms", 1, "2d12h", 2});
        decrements.add(new Object[] {"a-very-long-window-label-of-more-than-sixty-four-characters-xxxxxxxxx", 7});
        decrements.add(new Object[] {"x", 1});
        decrements.add(new Object[] {"", 1});
        decrements.add(new Object[] {"5µs", 1});
        for (Object[] d : decrements) {
            StringBuilder desc = new StringBuilder("decrement");
            for (int i = 0; i < d.length; i += 2) desc.append(' ').append(d[i]).append('=').append(d[i + 1]);
            if (d.length == 0) desc.append(" empty");
            System.out.println(desc + "\t" + hex(bytes(kryoDecrement, decrement(d))));
        }
    }
}
