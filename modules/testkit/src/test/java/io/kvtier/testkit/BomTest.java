package io.kvtier.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code kvtier-bom} lists every published module of the reactor and nothing else, so that a user
 * who imports it gets one version for each artifact the build publishes. A module is published
 * unless its pom sets {@code kvtier.unpublished} to true (examples, benchmarks, serving-tests).
 */
class BomTest {
  private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
  private static final Pattern ARTIFACT = Pattern.compile("<artifactId>([^<]+)</artifactId>");

  @Test
  void theBomListsEveryPublishedModule() throws IOException {
    Path root = root();
    Set<String> published = new TreeSet<>();
    for (String module : all(MODULE, read(root.resolve("pom.xml")))) {
      if (module.equals("bom")) {
        continue;
      }
      String pom = read(root.resolve(module).resolve("pom.xml"));
      if (pom.contains("<kvtier.unpublished>true</kvtier.unpublished>")) {
        continue;
      }
      // The module's own artifactId follows its parent's block.
      String own = pom.substring(pom.indexOf("</parent>"));
      published.add(first(ARTIFACT, own));
    }
    String bom = read(root.resolve("bom/pom.xml"));
    String managed =
        bom.substring(
            bom.indexOf("<dependencyManagement>"), bom.indexOf("</dependencyManagement>"));
    assertThat(new TreeSet<>(all(ARTIFACT, managed)))
        .as("bom/pom.xml's dependencyManagement: add or remove modules to match the reactor")
        .isEqualTo(published);
    assertThat(published).contains("kvtier-core", "kvtier-serving");
  }

  /** The repository root: the nearest directory upwards with a {@code bom/pom.xml}. */
  private static Path root() {
    for (Path dir = Path.of(System.getProperty("user.dir")).toAbsolutePath();
        dir != null;
        dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve("bom/pom.xml"))) {
        return dir;
      }
    }
    throw new AssertionError("no bom/pom.xml above " + System.getProperty("user.dir"));
  }

  private static String read(Path file) throws IOException {
    // Comments may name artifacts; they are not entries.
    return Files.readString(file).replaceAll("(?s)<!--.*?-->", "");
  }

  private static List<String> all(Pattern pattern, String text) {
    List<String> found = new ArrayList<>();
    Matcher m = pattern.matcher(text);
    while (m.find()) {
      found.add(m.group(1).strip());
    }
    return found;
  }

  private static String first(Pattern pattern, String text) {
    Matcher m = pattern.matcher(text);
    if (!m.find()) {
      throw new AssertionError("no " + pattern + " in " + text);
    }
    return m.group(1).strip();
  }
}
