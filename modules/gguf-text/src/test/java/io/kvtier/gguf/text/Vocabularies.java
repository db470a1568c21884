package io.kvtier.gguf.text;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The real vocabularies of {@code ../shared} (never copied into the project): found from the
 * working directory upwards, or {@code -Dkvtier.shared=DIR}; a test that needs one skips, saying
 * which, where it is absent. {@link #withTemplate} writes a copy of one with a chat template.
 */
final class Vocabularies {
  private Vocabularies() {}

  static Path require(String relative) {
    Optional<Path> root = root();
    assumeTrue(
        root.isPresent(),
        () ->
            "skipped: no ../shared directory beside the repository (searched upwards from "
                + System.getProperty("user.dir")
                + "; or set -Dkvtier.shared=DIR); needed: "
                + relative);
    Path file = root.get().resolve(relative);
    assumeTrue(Files.isRegularFile(file), () -> "skipped: " + file + " is absent");
    return file;
  }

  private static Optional<Path> root() {
    String property = System.getProperty("kvtier.shared");
    if (property != null && !property.isBlank()) {
      return Optional.of(Path.of(property)).filter(Files::isDirectory);
    }
    for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        dir.getParent() != null;
        dir = dir.getParent()) {
      Path candidate = dir.resolveSibling("shared");
      if (Files.isDirectory(candidate.resolve("tokenizers"))) {
        return Optional.of(candidate);
      }
    }
    return Optional.empty();
  }

  /** A copy of a vocabulary file with {@code tokenizer.chat_template} set, in {@code dir}. */
  static Path withTemplate(Path vocabulary, String template, Path dir) {
    Path copy = dir.resolve(vocabulary.getFileName());
    try (GgufFile file = GgufFile.open(vocabulary)) {
      GgufWriter writer = new GgufWriter(3);
      file.metadata().forEach(writer::put);
      writer.put("tokenizer.chat_template", GgufValue.ofString(template));
      writer.write(copy);
      return copy;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
