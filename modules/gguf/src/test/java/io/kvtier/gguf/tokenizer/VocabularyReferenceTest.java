package io.kvtier.gguf.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.gguf.GgufFile;
import io.kvtier.testkit.SharedFiles;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * llama.cpp's reference tokenizations of four real vocabularies ({@code ../shared/tokenizers}):
 * every case of {@code X.gguf.inp} (cases separated by a line {@code __ggml_vocab_test__}) must
 * give the ids of the same line of {@code X.gguf.out}, produced without BOS and without parsing
 * control tokens, and must decode back to its text.
 */
class VocabularyReferenceTest {
  static final String SEPARATOR = "\n__ggml_vocab_test__\n";

  record Case(String text, int[] ids) {}

  static List<Case> cases(Path gguf) throws IOException {
    String inp = Files.readString(Path.of(gguf + ".inp"), StandardCharsets.UTF_8);
    List<String> outLines = Files.readAllLines(Path.of(gguf + ".out"), StandardCharsets.UTF_8);
    List<String> texts = new ArrayList<>(Arrays.asList(inp.split(SEPARATOR, -1)));
    if (texts.getLast().isEmpty()) {
      texts.removeLast(); // the file ends with a separator
    }
    assertThat(outLines).as("cases in %s", gguf).hasSameSizeAs(texts);
    List<Case> cases = new ArrayList<>();
    for (int i = 0; i < texts.size(); i++) {
      String line = outLines.get(i).strip();
      int[] ids =
          line.isEmpty()
              ? new int[0]
              : Arrays.stream(line.split("\\s+")).mapToInt(Integer::parseInt).toArray();
      cases.add(new Case(texts.get(i), ids));
    }
    return cases;
  }

  @ParameterizedTest
  @ValueSource(strings = {"llama-spm", "llama-bpe", "qwen2", "gpt-2"})
  void everyReferenceCaseMatchesLlamaCpp(String name) throws IOException {
    Path gguf = SharedFiles.require("tokenizers/ggml-vocab-" + name + ".gguf");
    List<Case> cases = cases(gguf);
    try (GgufFile file = GgufFile.open(gguf)) {
      Tokenizer tokenizer = Tokenizer.of(file);
      List<String> failures = new ArrayList<>();
      int passed = 0;
      for (Case c : cases) {
        int[] ids = tokenizer.encode(c.text(), false);
        String decoded = tokenizer.decode(ids);
        if (!Arrays.equals(ids, c.ids())) {
          failures.add(
              "encode "
                  + quote(c.text())
                  + "\n   want "
                  + Arrays.toString(c.ids())
                  + "\n   got  "
                  + Arrays.toString(ids));
        } else if (!decoded.equals(c.text())) {
          failures.add("decode " + quote(c.text()) + " gave " + quote(decoded));
        } else {
          passed++;
        }
      }
      System.out.printf("%s: %d of %d reference cases equal%n", name, passed, cases.size());
      assertThat(failures).as("%s: %d of %d cases equal", name, passed, cases.size()).isEmpty();
    }
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    s.codePoints()
        .forEach(
            cp -> {
              if (cp < 0x20) {
                b.append(String.format("\\x%02x", cp));
              } else {
                b.appendCodePoint(cp);
              }
            });
    return b.append('"').toString();
  }
}
