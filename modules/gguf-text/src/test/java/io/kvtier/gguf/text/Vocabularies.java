package io.kvtier.gguf.text;

import io.kvtier.gguf.GgufFile;
import io.kvtier.gguf.GgufValue;
import io.kvtier.gguf.GgufWriter;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;

/**
 * The real vocabularies of {@code ../shared} (never copied into the project), through testkit's
 * {@link SharedFiles}: a test that needs one skips, saying which, where it is absent. {@link
 * #withTemplate} writes a copy of one with a chat template.
 */
final class Vocabularies {
  private Vocabularies() {}

  static Path require(String relative) {
    return SharedFiles.require(relative);
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
