package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What bin/kvtier puts on its module path: the build copies the cli's run-time dependencies to
 * target/lib (after the tests, at package), and writes the same list before the tests to
 * target/runtime-dependencies.txt, which this test reads. A test library there would ship with
 * the command.
 */
class RuntimeModulePathTest {

  // One dependency of `mvn dependency:list`: group:artifact:type[:classifier]:version:scope.
  private static final Pattern DEPENDENCY =
      Pattern.compile(
          "^\\s*([\\w.-]+):([\\w.-]+):[\\w.-]+(?::[\\w.-]+)?:[\\w.-]+:(compile|runtime)\\b.*$");

  private static List<String> runtimeArtifacts() throws IOException {
    String file = System.getProperty("cli.runtime-dependencies");
    assertThat(file)
        .as("surefire sets cli.runtime-dependencies (modules/cli/pom.xml)")
        .isNotBlank();
    List<String> artifacts =
        Files.readAllLines(Path.of(file)).stream()
            .map(DEPENDENCY::matcher)
            .filter(Matcher::matches)
            .map(m -> m.group(1) + ":" + m.group(2))
            .toList();
    assertThat(artifacts).as("dependencies parsed from %s", file).isNotEmpty();
    return artifacts;
  }

  @Test
  void holdsNoTestLibrary() throws IOException {
    assertThat(runtimeArtifacts())
        .noneMatch(
            a ->
                a.startsWith("org.junit")
                    || a.startsWith("org.assertj:")
                    || a.startsWith("net.bytebuddy:")
                    || a.startsWith("org.opentest4j:")
                    || a.equals("io.kvtier:kvtier-testkit"));
  }

  @Test
  void holdsEveryProviderModuleTheSimulatorAndTheServingModules() throws IOException {
    assertThat(runtimeArtifacts())
        .contains(
            "io.kvtier:kvtier-simulator",
            "io.kvtier:kvtier-serving",
            "io.kvtier:kvtier-model-tiny",
            "io.kvtier:kvtier-server",
            "io.kvtier:kvtier-metrics",
            "io.kvtier:kvtier-asserting",
            "io.kvtier:kvtier-backend-sim",
            "io.kvtier:kvtier-backend-cpu",
            "io.kvtier:kvtier-backend-cuda",
            "io.kvtier:kvtier-stores",
            "io.kvtier:kvtier-collective-hazelcast",
            "io.kvtier:kvtier-collective-mpi");
  }
}
