package io.kvtier.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds the project's shared test material ({@code ../shared} beside the repository root), which
 * is never copied into the project. {@code -Dkvtier.shared=DIR} names it directly; otherwise the
 * directories from {@code user.dir} upwards are tried for a {@code shared} sibling. Tests that
 * need a file skip, with the reason, where it is absent.
 */
public final class SharedFiles {
  private SharedFiles() {}

  /** The shared directory, if found. */
  public static Optional<Path> root() {
    String property = System.getProperty("kvtier.shared");
    if (property != null && !property.isBlank()) {
      Path p = Path.of(property);
      return Files.isDirectory(p) ? Optional.of(p) : Optional.empty();
    }
    for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        dir != null;
        dir = dir.getParent()) {
      Path candidate = dir.resolveSibling("shared");
      if (dir.getParent() != null && Files.isDirectory(candidate.resolve("models"))
          || dir.getParent() != null && Files.isDirectory(candidate.resolve("tokenizers"))) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** The shared file at {@code relative}, or the test is skipped saying what is missing. */
  public static Path require(String relative) {
    String property = System.getProperty("kvtier.shared");
    Optional<Path> root = root();
    assumeTrue(
        root.isPresent(),
        () ->
            property != null && !property.isBlank()
                ? "skipped: -Dkvtier.shared="
                    + property
                    + " is not a directory; needed: "
                    + relative
                : "skipped: no ../shared directory beside the repository (searched upwards from "
                    + System.getProperty("user.dir")
                    + "; or set -Dkvtier.shared=DIR); needed: "
                    + relative);
    Path file = root.get().resolve(relative);
    assumeTrue(Files.isRegularFile(file), () -> "skipped: " + file + " is absent");
    return file;
  }
}
