package io.kvtier.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.core.cache.CacheStats;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Acceptance with a subscriber from outside the JVM: {@code src/test/python/
 * kv_events_subscriber.py}, on Debian's python3-zmq and python3-msgpack, joins late, has the gap
 * replayed and checks the hash chains; its counts must equal the engine's. Skipped, with the
 * reason, where python3 or those packages are not installed.
 */
class PythonSubscriberTest {
  private static final Path SCRIPT = Path.of("src/test/python/kv_events_subscriber.py");

  @Test
  void vllmsSchemaInPythonDecodesTheStreamAndAgreesWithTheEngine() throws Exception {
    String missing = missingPython();
    if (missing != null) {
      System.out.println("[kvtier events] skipped the Python subscriber: " + missing);
      Assumptions.abort(missing);
    }
    Map<String, String> props =
        Map.of(
            "kvtier.events.publisher", "zmq",
            "kvtier.events.endpoint", "tcp://127.0.0.1:*",
            "kvtier.events.replay-endpoint", "tcp://127.0.0.1:*",
            "kvtier.events.topic", "kv",
            "kvtier.events.data-parallel-rank", "3",
            "kvtier.events.max-batch-events", "8");
    try (KvEvents events = KvEvents.open(props, 0, "file");
        ScriptedEngine run = new ScriptedEngine(events.listener())) {
      for (int i = 0; i < 20; i++) {
        run.turn();
      }
      events.flush();
      Process python =
          new ProcessBuilder(
                  interpreter,
                  SCRIPT.toString(),
                  events.endpoint().orElseThrow(),
                  events.replayEndpoint().orElseThrow(),
                  "kv")
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      try {
        BufferedReader out =
            new BufferedReader(
                new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8));
        // Serve on until the subscriber has a batch (its subscription reached the publisher).
        String[] first = new String[1];
        Thread reader =
            Thread.ofPlatform()
                .start(
                    () -> {
                      try {
                        first[0] = out.readLine();
                      } catch (java.io.IOException e) {
                        first[0] = "error " + e;
                      }
                    });
        for (int i = 0; reader.isAlive(); i++) {
          assertThat(i).as("turns before the subscriber got a batch").isLessThan(2_000);
          run.turn();
          events.flush();
          reader.join(20);
        }
        assertThat(first[0]).startsWith("subscribed ");
        for (int i = 0; i < 60; i++) {
          run.turn();
        }
        events.flush();
        long last = events.stats().sealed() - 1;
        Writer in = new OutputStreamWriter(python.getOutputStream(), StandardCharsets.UTF_8);
        in.write(last + "\n");
        in.flush();
        Map<String, Long> learned = new HashMap<>();
        for (String line; (line = out.readLine()) != null; ) {
          String[] kv = line.split("=", 2);
          learned.put(kv[0], Long.parseLong(kv[1]));
        }
        assertThat(python.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(python.exitValue()).as("the subscriber's exit status").isZero();

        CacheStats stats = run.cache.stats();
        assertThat(learned.get("first")).as("a gap before the first batch").isPositive();
        assertThat(learned.get("replayed")).isEqualTo(learned.get("first"));
        assertThat(learned.get("cleared")).isEqualTo(1);
        assertThat(learned.get("links")).isPositive();
        assertThat(learned.get("removed.GPU")).isEqualTo(stats.deviceEvictions()).isPositive();
        assertThat(learned.get("removed.CPU")).isEqualTo(stats.hostEvictions()).isPositive();
        assertThat(learned.get("held.GPU"))
            .isEqualTo(run.cache.deviceUsage().capacity() - run.cache.deviceUsage().free());
        assertThat(learned.get("held.CPU"))
            .isEqualTo(run.cache.hostUsage().capacity() - run.cache.hostUsage().free());
      } finally {
        python.destroyForcibly();
      }
    }
  }

  /**
   * The first interpreter that has both packages: {@code python3} on the PATH, else Debian's
   * {@code /usr/bin/python3} (a pyenv or venv python3 on the PATH does not see Debian's
   * packages).
   */
  private static String interpreter;

  /** Why the subscriber cannot run here, or null if it can (and {@link #interpreter} is set). */
  private static String missingPython() throws InterruptedException {
    if (!Files.isRegularFile(SCRIPT)) {
      return SCRIPT.toAbsolutePath() + " not found (run from the module directory)";
    }
    StringBuilder why = new StringBuilder();
    for (String candidate : new String[] {"python3", "/usr/bin/python3"}) {
      try {
        Process p =
            new ProcessBuilder(candidate, "-c", "import zmq, msgpack")
                .redirectErrorStream(true)
                .start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0) {
          interpreter = candidate;
          return null;
        }
        String[] lines = output.strip().split("\n");
        why.append(candidate).append(": ").append(lines[lines.length - 1]).append("; ");
      } catch (java.io.IOException e) {
        why.append(candidate).append(": not found; ");
      }
    }
    return why
        + "install Debian's python3-zmq and python3-msgpack (apt-get install python3-zmq"
        + " python3-msgpack)";
  }
}
