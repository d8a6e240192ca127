package statebench.parity;

import java.util.TreeMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;

/**
 * The configuration Flink loads from a conf directory ({@link
 * GlobalConfiguration#loadConfiguration(String)}, as a cluster reads its conf/), one {@code key:
 * value} a line in key order: what ParityJob writes as flink-loaded-config.txt, for a file no job
 * runs with (parity/export-check: the user's config.yaml before an export is merged into it).
 *
 * <pre>ConfigDump CONF_DIR</pre>
 */
public final class ConfigDump {
    private ConfigDump() {}

    public static void main(String[] args) {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: ConfigDump CONF_DIR");
        }
        Configuration loaded = GlobalConfiguration.loadConfiguration(args[0]);
        new TreeMap<>(loaded.toMap()).forEach((k, v) -> System.out.println(k + ": " + v));
    }
}
