package io.kvtier.cli;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The public Mooncake synthetic trace, which is not in this repository: tests that need a real
 * trace read it from {@code ../shared/traces/mooncake-synthetic.jsonl} beside the repository root
 * and skip, saying why, where it is absent.
 */
public final class SharedTraces {
  private SharedTraces() {}

  /** Where the trace is expected: {@code ../shared/traces/} from the repository root. */
  public static Path mooncakeSynthetic() {
    return root().resolve("../shared/traces/mooncake-synthetic.jsonl").normalize();
  }

  /** The trace's path; skips the calling test (a JUnit assumption) where it is absent. */
  public static Path assumeMooncakeSynthetic() {
    Path trace = mooncakeSynthetic();
    assumeTrue(
        Files.isRegularFile(trace),
        () ->
            "skipped: no "
                + trace
                + ": this test replays the Mooncake synthetic trace (FAST'25), which is not in"
                + " the repository; download FAST25-release/traces/synthetic_trace.jsonl from"
                + " https://github.com/kvcache-ai/Mooncake and save it there");
    return trace;
  }

  /**
   * The repository root: the first directory up from the working directory with mvnw and
   * modules/ in it, or the working directory itself if there is none (the trace is then absent
   * and the tests skip).
   */
  static Path root() {
    Path start = Path.of(System.getProperty("user.dir")).toAbsolutePath();
    for (Path dir = start; dir != null; dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("mvnw")) && Files.isDirectory(dir.resolve("modules"))) {
        return dir;
      }
    }
    return start;
  }
}
