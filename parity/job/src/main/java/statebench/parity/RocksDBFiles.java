package statebench.parity;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;

/** What the parity jobs share: RocksDB's LOG copied out, and an exported configuration loaded. */
public final class RocksDBFiles {
    private RocksDBFiles() {}

    /** Letters and digits kept, everything else '_' (how RocksDB flattens a path into a name). */
    private static String flat(String path) {
        StringBuilder sb = new StringBuilder();
        for (char c : path.toCharArray()) {
            sb.append(Character.isLetterOrDigit(c) ? c : '_');
        }
        return sb.toString();
    }

    /**
     * Copies the instance's LOG and LOG.old.* (from {@code dbDir}) into {@code outDir} as
     * flink-LOG*, noting each in {@code copied}. A TaskManager started with -Dlog.file (a cluster,
     * not a MiniCluster) has Flink relocate RocksDB's LOG into its log directory
     * (RocksDBResourceContainer.relocateDefaultDbLogDir), named after the database's path:
     * {@code <path>_LOG[.old.N]}; those are found by the instance directory's name.
     */
    public static void copyLogs(File dbDir, String outDir, List<String> copied) throws IOException {
        File[] files = dbDir.listFiles();
        boolean found = false;
        if (files != null) {
            Arrays.sort(files);
            for (File f : files) {
                String name = f.getName();
                if (name.equals("LOG") || name.startsWith("LOG.old")) {
                    Files.copy(f.toPath(), Path.of(outDir, "flink-" + name), StandardCopyOption.REPLACE_EXISTING);
                    copied.add(name);
                    found = true;
                }
            }
        }
        String logFile = System.getProperty("log.file");
        if (found || logFile == null || new File(logFile).getParentFile() == null) {
            return;
        }
        String instance = flat(dbDir.getParentFile().getName());
        File[] logs = new File(logFile).getParentFile().listFiles();
        if (logs == null) {
            return;
        }
        Arrays.sort(logs);
        for (File f : logs) {
            String name = f.getName();
            int at = name.lastIndexOf("_LOG");
            if (at > 0 && flat(name.substring(0, at)).contains(instance)) {
                Files.copy(f.toPath(), Path.of(outDir, "flink-" + name.substring(at + 1)), StandardCopyOption.REPLACE_EXISTING);
                copied.add(name);
            }
        }
    }

    /**
     * The exported config.yaml in {@code confDir}, as Flink loads a cluster's conf/, into
     * {@code conf}; and the knobs the export names an options-factory call for
     * ({@code factoryKnobs}: {@code knob: value} lines, may be null), to ObservingOptionsFactory.
     */
    public static Configuration loadExported(String confDir, String factoryKnobs, Configuration conf)
            throws IOException {
        Configuration loaded = GlobalConfiguration.loadConfiguration(confDir);
        conf.addAll(loaded);
        if (factoryKnobs != null) {
            for (Map.Entry<String, String> e : ParityJob.readKeyValues(factoryKnobs).entrySet()) {
                conf.setString(ObservingOptionsFactory.PREFIX + e.getKey(), e.getValue());
            }
        }
        return loaded;
    }
}
