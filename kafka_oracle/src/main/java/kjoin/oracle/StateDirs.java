package kjoin.oracle;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A harness JVM's state directory (Kafka Streams' {@code state.dir} root of every TopologyTestDriver or KafkaStreams
 * it runs), removed with everything under it when the JVM exits: at the end of its input, after an error, and on
 * SIGINT (a Ctrl-C reaches the caller's whole process group) or SIGTERM, through a shutdown hook. Only a SIGKILL
 * leaves it behind. It lives on the RAM disk {@code /dev/shm} where there is one (RocksDB opens its stores much faster
 * there), else in the system's temporary directory; {@code -Dkjoin.oracle.stateRoot=DIR} puts it under {@code DIR}.
 */
final class StateDirs {
    private StateDirs() {
    }

    /** A new directory {@code <prefix><random>}, removed when the JVM exits. */
    static Path create(String prefix) throws IOException {
        String root = System.getProperty("kjoin.oracle.stateRoot");
        Path shm = Path.of("/dev/shm");
        Path dir;
        if (root != null) {
            dir = Files.createTempDirectory(Path.of(root), prefix);
        } else if (Files.isDirectory(shm) && Files.isWritable(shm)) {
            dir = Files.createTempDirectory(shm, prefix);
        } else {
            dir = Files.createTempDirectory(prefix);
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(dir), "remove " + dir.getFileName()));
        return dir;
    }

    /** Remove {@code dir} and everything under it, deepest first; what cannot be removed stays (best effort: a
     *  store's thread may still be writing while the JVM stops). */
    static void delete(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException ignored) {
                    // left behind: the JVM is stopping, there is no one to tell
                }
            });
        } catch (IOException | UncheckedIOException ignored) {
            // the directory is gone already, or changed while it was walked
        }
    }
}
