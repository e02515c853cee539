// One OpenSearch 2.19 node in this JVM, for ragline's local stack (Python side:
// ragline/platform/stack/opensearch.py). The jars come from pom.xml beside this file.
//
//   java [jvm options] -cp "<jars>/*:<dir of this class>" Launcher key=value ...
//
// Each argument is a node setting (path.home, path.data, http.port, ...). With the
// system property ragline.parent.pid the node stops when that process is gone (a test
// session that was killed does not leave a JVM behind). SIGTERM closes the node cleanly;
// after a SIGKILL the translog is replayed on the next start.
//
// What an embedded node skips (they live in OpenSearch's Bootstrap): bootstrap checks,
// the root check, the SecurityManager and JarHell. No security plugin: plain HTTP on
// loopback, for local use only.

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

public final class Launcher {

    /** The modules ragline's mapping and queries use (docs/stack.md). */
    static final List<Class<? extends Plugin>> PLUGINS =
            List.of(Netty4Plugin.class, CommonAnalysisPlugin.class, ReindexPlugin.class);

    static final class EmbeddedNode extends Node {
        EmbeddedNode(Environment env) {
            super(env, PLUGINS, true);
        }
    }

    public static void main(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                System.err.println("ragline launcher: expected key=value, got " + arg);
                System.exit(2);
            }
            builder.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Settings settings = builder.build();
        String home = settings.get("path.home");
        if (home == null) {
            System.err.println("ragline launcher: path.home is required");
            System.exit(2);
        }
        Path homePath = Path.of(home);
        for (String dir : new String[] {"config", "modules", "plugins"}) {
            Files.createDirectories(homePath.resolve(dir));
        }
        String nodeName = settings.get("node.name", "node-1");
        Environment env = InternalSettingsPreparer.prepareEnvironment(
                settings, Map.of(), homePath.resolve("config"), () -> nodeName);
        Node node = new EmbeddedNode(env);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("ragline launcher: close failed: " + e);
            }
        }, "ragline-shutdown"));
        node.start();
        System.out.println("ragline launcher: node " + nodeName + " started");
        keepAlive();
    }

    /**
     * The node's own threads are all daemons: this (non-daemon) main thread keeps the JVM
     * up until SIGTERM, or until the process named by ragline.parent.pid is gone.
     */
    static void keepAlive() throws InterruptedException {
        String parent = System.getProperty("ragline.parent.pid", "");
        if (parent.isEmpty()) {
            Thread.currentThread().join();  // never returns: the JVM ends by a signal
        }
        long pid = Long.parseLong(parent);
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            Thread.sleep(1000);
        }
        System.out.println("ragline launcher: parent " + pid + " is gone, stopping");
        System.exit(0);
    }
}
