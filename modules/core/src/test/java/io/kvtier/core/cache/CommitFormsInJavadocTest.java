package io.kvtier.core.cache;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The Javadoc of the cache and the rank engine names the single-rank commit forms ({@code
 * commitWrites(int)}, {@code commitLoads(int)}, {@code RankCache.sync()}) only where it says they
 * are for a single rank: a reader who follows a link from {@code readyWritePrefix} or {@code
 * LoadBack} to a form that applies this rank's own failures would make one rank's rollback
 * another's commit. The agreed forms ({@code (int, BitSet)}) may be named anywhere.
 */
class CommitFormsInJavadocTest {
  private static final Path SOURCES = Path.of("src/main/java/io/kvtier/core");

  /** A link to a commit form without the agreed failures, or to RankCache's sync. */
  private static final Pattern UNSAFE =
      Pattern.compile(
          "\\{@link\\s+(?:CommitPort)?#(?:commitWrites|commitLoads)(?:\\(int\\))?\\s*\\}"
              + "|\\{@link\\s+RankCache#sync(?:\\(\\))?\\s*\\}");

  private static final Pattern JAVADOC = Pattern.compile("/\\*\\*.*?\\*/", Pattern.DOTALL);

  @Test
  void theSingleRankCommitFormsAreNamedOnlyAsSuch() throws IOException {
    assertThat(SOURCES).as("run from the core module's directory").isDirectory();
    List<String> unsafe = new ArrayList<>();
    try (Stream<Path> files = Files.walk(SOURCES)) {
      for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
        String source = Files.readString(file);
        boolean port = file.getFileName().toString().equals("CommitPort.java");
        Matcher doc = JAVADOC.matcher(source);
        while (doc.find()) {
          String text = doc.group();
          Matcher link = UNSAFE.matcher(text);
          while (link.find()) {
            boolean qualified =
                link.group().contains("CommitPort#") || link.group().contains("RankCache#");
            if ((port || qualified) && !text.toLowerCase(Locale.ROOT).contains("single")) {
              unsafe.add(file.getFileName() + ": " + link.group());
            }
          }
        }
      }
    }
    assertThat(unsafe).as("links to a single-rank form in text that does not say so").isEmpty();
  }
}
