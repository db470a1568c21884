package io.kvtier.collective.hazelcast;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.spi.BackendContext;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two kvtier processes share one {@code hazelcast} L3 store: the first computes a prompt and
 * writes it through to L3; the second, with an empty device and host tier, finds the prompt only
 * in L3, prefetches it, loads it to its device and finds every page's bytes as the first process
 * computed them.
 */
class HazelcastL3SharedStoreTest {

  private static HazelcastTestCluster cluster;

  @BeforeAll
  static void startCluster() {
    cluster = HazelcastTestCluster.start(1, Map.of(HazelcastConfig.CP_MEMBER_COUNT, "0"));
  }

  @AfterAll
  static void stopCluster() {
    cluster.close();
  }

  @Test
  @Timeout(240)
  void aSecondProcessHitsInL3OnAPromptOnlyTheFirstComputed() throws Exception {
    List<String> written = runProcess("write");
    assertThat(written).as("the writer's output").contains("WRITTEN 8");
    List<String> read = runProcess("read");
    assertThat(read)
        .as("the reader's output")
        .contains("L3HIT " + L3StoreProcessMain.PROMPT + " MISMATCHES 0");
  }

  private static List<String> runProcess(String mode) throws IOException, InterruptedException {
    BackendContext client = cluster.clientContext();
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                classPath(),
                L3StoreProcessMain.class.getName(),
                mode));
    client.properties().forEach((k, v) -> command.add(k + "=" + v));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    boolean ended = process.waitFor(180, TimeUnit.SECONDS);
    if (!ended) {
      process.destroyForcibly();
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(ended).as("the %s process ended; output: %s", mode, output).isTrue();
    List<String> lines =
        output
            .lines()
            .filter(
                l -> l.startsWith("WRITTEN ") || l.startsWith("L3HIT ") || l.startsWith("FAILED "))
            .toList();
    assertThat(process.exitValue()).as("%s exit status; output: %s", mode, output).isZero();
    return lines;
  }

  /** Everything the test runs with, on the class path: the children need no module setup. */
  private static String classPath() {
    List<String> entries = new ArrayList<>();
    entries.add(Path.of("target", "test-classes").toAbsolutePath().toString());
    for (String property : List.of("jdk.module.path", "java.class.path")) {
      String value = System.getProperty(property, "");
      for (String entry : value.split(File.pathSeparator)) {
        if (!entry.isBlank() && !entries.contains(entry)) {
          entries.add(entry);
        }
      }
    }
    return String.join(File.pathSeparator, entries);
  }
}
