package io.kvtier.store.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.testkit.config.ConfigAssertions;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FileConfigTest {

  @Test
  void fullMapping() {
    // No defaults to assert: file.directory has none (requiresTheDirectory).
    FileConfig expected = new FileConfig(Path.of("/tmp/b"), true);
    ConfigAssertions.assertFullMapping(
        FileConfig.PARSER,
        Map.of("file.directory", " /tmp/a/../b ", "file.fsync", "TRUE"),
        expected);
    assertThat(FileConfig.DEFAULT_FSYNC).isFalse();
    assertThat(FileConfig.fromProperties(expected.toProperties())).isEqualTo(expected);
    assertThat(
            FileConfig.fromProperties(Map.of("file.directory", "/tmp/b", "kvtier.store", "file")))
        .isEqualTo(new FileConfig(Path.of("/tmp/b"), false));
  }

  @Test
  void makesARelativeDirectoryAbsolute() {
    FileConfig c = FileConfig.fromProperties(Map.of("file.directory", "l3"));
    assertThat(c.directory()).isAbsolute();
    assertThat(c.directory().getFileName()).isEqualTo(Path.of("l3"));
  }

  @Test
  void requiresTheDirectory() {
    assertThatThrownBy(() -> FileConfig.fromProperties(Map.of("file.fsync", "true")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("file.directory is not set")
        .hasMessageContaining("file.directory=/var/cache/kvtier");
  }

  @Test
  void rejectsAnUnknownKeyListingTheKnownOnes() {
    assertThatThrownBy(() -> FileConfig.fromProperties(Map.of("file.dir", "/x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'file.dir'")
        .hasMessageContaining("file.directory, file.fsync");
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {"file.fsync|yes", "file.fsync|1", "file.directory|a\0b"})
  void rejectsABadValueNamingKeyAndValue(String key, String value) {
    Map<String, String> properties =
        key.equals(FileConfig.DIRECTORY)
            ? Map.of(key, value)
            : Map.of(FileConfig.DIRECTORY, "/x", key, value);
    assertThatThrownBy(() -> FileConfig.fromProperties(properties))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key + "='" + value + "'");
  }
}
