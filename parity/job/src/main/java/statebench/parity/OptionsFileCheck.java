package statebench.parity;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.Env;
import org.rocksdb.IndexType;
import org.rocksdb.OptionsUtil;
import org.rocksdb.RocksDB;

/**
 * FRocksDB 6.20.3 (the RocksJava inside Flink 1.20.1's flink-dist) and an OPTIONS file.
 *
 * <pre>
 * OptionsFileCheck load FILE DIR   loads FILE with OptionsUtil.loadOptionsFromFile, unknown
 *                                  options refused (ignoreUnknownOptions=false), opens a database
 *                                  in DIR with what it loaded and lets RocksDB write its own
 *                                  OPTIONS file there (DIR/OPTIONS-*), for comparison
 * OptionsFileCheck template DIR    opens a database with every column-family and table section
 *                                  and writes the OPTIONS file FRocksDB 6.20.3 writes (its option
 *                                  names and syntax: src/config/frocksdb-6.20.3-OPTIONS)
 * </pre>
 */
public class OptionsFileCheck {
    public static void main(String[] args) throws Exception {
        RocksDB.loadLibrary();
        if (args.length == 3 && args[0].equals("load")) {
            load(args[1], args[2]);
        } else if (args.length == 2 && args[0].equals("template")) {
            template(args[1]);
        } else {
            System.err.println("usage: OptionsFileCheck load FILE DIR | template DIR");
            System.exit(2);
        }
    }

    private static void load(String file, String dir) throws Exception {
        DBOptions db = new DBOptions();
        List<ColumnFamilyDescriptor> cfs = new ArrayList<>();
        try {
            OptionsUtil.loadOptionsFromFile(file, Env.getDefault(), db, cfs, false);
        } catch (Exception e) {
            System.err.println("FRocksDB 6.20.3 cannot load " + file + ": " + e.getMessage());
            System.exit(1);
        }
        System.err.println("loaded " + file + ": " + cfs.size() + " column families");
        db.setCreateIfMissing(true);
        db.setCreateMissingColumnFamilies(true);
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        Files.createDirectories(Path.of(dir));
        try (RocksDB rocks = RocksDB.open(db, dir, cfs, handles)) {
            for (ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
        System.out.println(latestOptions(dir));
    }

    private static void template(String dir) throws Exception {
        Files.createDirectories(Path.of(dir));
        BlockBasedTableConfig table = new BlockBasedTableConfig();
        table.setFilterPolicy(new BloomFilter(10, false));
        table.setIndexType(IndexType.kTwoLevelIndexSearch);
        table.setPartitionFilters(true);
        // Options FRocksDB writes only when set (an empty compression list is left out).
        ColumnFamilyOptions cf = new ColumnFamilyOptions().setTableFormatConfig(table)
                .setCompressionPerLevel(List.of(org.rocksdb.CompressionType.NO_COMPRESSION,
                        org.rocksdb.CompressionType.SNAPPY_COMPRESSION));
        List<ColumnFamilyDescriptor> cfs = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, cf));
        DBOptions db = new DBOptions().setCreateIfMissing(true);
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (RocksDB rocks = RocksDB.open(db, dir, cfs, handles)) {
            for (ColumnFamilyHandle h : handles) {
                h.close();
            }
        }
        System.out.println(latestOptions(dir));
    }

    private static String latestOptions(String dir) throws Exception {
        try (Stream<Path> files = Files.list(Path.of(dir))) {
            Path latest = files.filter(p -> p.getFileName().toString().startsWith("OPTIONS-"))
                    .max(Comparator.comparing(p -> p.getFileName().toString()))
                    .orElseThrow(() -> new IllegalStateException("RocksDB wrote no OPTIONS file in " + dir));
            return latest.toString();
        }
    }
}
