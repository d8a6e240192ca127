package statebench.parity.kinds;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The backend's RocksDB instance seen through a counter: the same native handle (every call
 * goes to the same database, unchanged), counting per column family the calls Flink 1.20.1's
 * state classes make on {@code RocksDBKeyedStateBackend.db} (the overloads its bytecode calls:
 * get, put, delete, merge, newIterator, write of a batch). RocksDB has no ticker for merges;
 * this is where they are counted. It never owns the handle: closing it frees nothing; iterators
 * come from the owning object, so that closing one frees it (and bumps RocksDB's iterator
 * tickers) as in Flink.
 */
public class CountingRocksDB extends RocksDB {
    /** Per column family: gets, puts, deletes, merges, iterators. */
    static final int GETS = 0, PUTS = 1, DELETES = 2, MERGES = 3, ITERATORS = 4;
    static final String[] NAMES = {"gets", "puts", "deletes", "merges", "iterators"};

    private final Map<Long, String> names = new ConcurrentHashMap<>();
    private final Map<String, long[]> counts = new ConcurrentHashMap<>();
    long batches;
    long batchEntries;

    /** The owning object: iterators must be made by it (an iterator frees itself only while its parent owns the handle). */
    private final RocksDB original;

    public CountingRocksDB(RocksDB db) {
        super(db.getNativeHandle());
        this.original = db;
        // The original object owns (and at dispose closes) the database.
        disOwnNativeHandle();
    }

    private long[] of(ColumnFamilyHandle cf) {
        String name = names.computeIfAbsent(cf.getNativeHandle(), h -> {
            try {
                return new String(cf.getName(), StandardCharsets.UTF_8);
            } catch (RocksDBException e) {
                return "cf@" + h;
            }
        });
        return counts.computeIfAbsent(name, n -> new long[NAMES.length]);
    }

    Map<String, Map<String, Long>> snapshot() {
        Map<String, Map<String, Long>> out = new TreeMap<>();
        counts.forEach((cf, c) -> {
            Map<String, Long> m = new TreeMap<>();
            for (int i = 0; i < NAMES.length; i++) {
                m.put(NAMES[i], c[i]);
            }
            out.put(cf, m);
        });
        return out;
    }

    long total(int what) {
        long t = 0;
        for (long[] c : counts.values()) {
            t += c[what];
        }
        return t;
    }

    @Override
    public byte[] get(ColumnFamilyHandle cf, byte[] key) throws RocksDBException {
        of(cf)[GETS]++;
        return super.get(cf, key);
    }

    @Override
    public byte[] get(ColumnFamilyHandle cf, ReadOptions opts, byte[] key) throws RocksDBException {
        of(cf)[GETS]++;
        return super.get(cf, opts, key);
    }

    @Override
    public void put(ColumnFamilyHandle cf, WriteOptions opts, byte[] key, byte[] value) throws RocksDBException {
        of(cf)[PUTS]++;
        super.put(cf, opts, key, value);
    }

    @Override
    public void delete(ColumnFamilyHandle cf, WriteOptions opts, byte[] key) throws RocksDBException {
        of(cf)[DELETES]++;
        super.delete(cf, opts, key);
    }

    @Override
    public void merge(ColumnFamilyHandle cf, WriteOptions opts, byte[] key, byte[] value) throws RocksDBException {
        of(cf)[MERGES]++;
        super.merge(cf, opts, key, value);
    }

    @Override
    public RocksIterator newIterator(ColumnFamilyHandle cf, ReadOptions opts) {
        of(cf)[ITERATORS]++;
        return original.newIterator(cf, opts);
    }

    @Override
    public RocksIterator newIterator(ColumnFamilyHandle cf) {
        of(cf)[ITERATORS]++;
        return original.newIterator(cf);
    }

    @Override
    public void write(WriteOptions opts, WriteBatch batch) throws RocksDBException {
        batches++;
        batchEntries += batch.count();
        super.write(opts, batch);
    }
}
