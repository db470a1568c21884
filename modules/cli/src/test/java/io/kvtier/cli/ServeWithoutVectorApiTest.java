package io.kvtier.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A JVM started on the class path without {@code --add-modules jdk.incubator.vector} still serves
 * the tiny transformer, and {@code serve --model FILE.gguf} there is one line saying what to add
 * and exit status 2, not a {@code NoClassDefFoundError}.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ServeWithoutVectorApiTest {

  @Test
  void aGgufModelWithoutTheVectorApiSaysWhatToAdd() throws Exception {
    List<String> command = new ArrayList<>(SimulateRankProcessesTest.java());
    int at = command.indexOf("--add-modules");
    command.remove(at + 1);
    command.remove(at);
    command.addAll(List.of("serve", "--port", "0", "--model", "x.gguf"));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    assertThat(process.waitFor(90, TimeUnit.SECONDS)).isTrue();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);

    assertThat(process.exitValue()).as(output).isEqualTo(ServeCommand.EXIT_USAGE);
    assertThat(output)
        .contains(
            "kvtier serve: --model x.gguf: model gguf is installed but unavailable: it computes"
                + " with the Vector API (jdk.incubator.vector), which this JVM has not resolved:"
                + " start java with --add-modules jdk.incubator.vector")
        .doesNotContain("NoClassDefFoundError");
  }
}
