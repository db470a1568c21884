package io.kvtier.testkit.config;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.config.ConfigParser;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each assertion passes for a config that maps every key and fails, naming the key, for the
 * mistakes it exists to catch.
 *
 * <p>Public with public methods: the package is exported, so JUnit may call them without an
 * {@code --add-opens} of this package in the build.
 */
public class ConfigAssertionsTest {

  /** A small typed config with a default for each of its two keys. */
  public record Toy(int size, String name) {}

  private static final Toy DEFAULTS = new Toy(1, "a");

  private static final ConfigParser<Toy> GOOD =
      ConfigParser.of("toy", r -> new Toy(r.getInt("toy.size", 1), r.getString("toy.name", "a")));

  private static final Map<String, String> FULL = Map.of("toy.size", "2", "toy.name", "b");

  /** Creates the test. */
  public ConfigAssertionsTest() {}

  /** A correct config passes both. */
  @Test
  public void aConfigThatMapsEveryKeyPasses() {
    ConfigAssertions.assertDefaults(GOOD, DEFAULTS);
    ConfigAssertions.assertFullMapping(GOOD, FULL, new Toy(2, "b"));
  }

  /** A changed default fails the defaults assertion. */
  @Test
  public void aChangedDefaultFails() {
    assertThatThrownBy(() -> ConfigAssertions.assertDefaults(GOOD, new Toy(3, "a")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("toy: the defaults changed")
        .hasMessageContaining("Toy[size=1, name=a]")
        .hasMessageContaining("Toy[size=3, name=a]");
  }

  /** A config without defaults (a required key) fails the defaults assertion, saying why. */
  @Test
  public void aConfigWhoseDefaultsDoNotParseFails() {
    ConfigParser<Toy> required =
        ConfigParser.of(
            "toy",
            r -> {
              throw new IllegalArgumentException("toy.name is not set");
            });
    assertThatThrownBy(() -> ConfigAssertions.assertDefaults(required, DEFAULTS))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("parsing no properties failed")
        .hasMessageContaining("toy.name is not set");
  }

  /** A key the config reads but whose value it drops is caught. */
  @Test
  public void aConfigThatIgnoresAKeyFails() {
    ConfigParser<Toy> ignoresName =
        ConfigParser.of(
            "toy",
            r -> {
              r.getString("toy.name", "a");
              return new Toy(r.getInt("toy.size", 1), "b");
            });
    assertThatThrownBy(() -> ConfigAssertions.assertFullMapping(ignoresName, FULL, new Toy(2, "b")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("leaving out [toy.name=b] gives the same config");
  }

  /** A key the config never reads is an unknown key of the mapping. */
  @Test
  public void aConfigThatNeverReadsAKeyFails() {
    ConfigParser<Toy> noName = ConfigParser.of("toy", r -> new Toy(r.getInt("toy.size", 1), "b"));
    assertThatThrownBy(() -> ConfigAssertions.assertFullMapping(noName, FULL, new Toy(2, "b")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("sets keys the config never reads: [toy.name]");
  }

  /** A mapping that leaves out a key the config knows fails, naming it. */
  @Test
  public void aKeyMissingFromTheMappingFails() {
    Map<String, String> sizeOnly = Map.of("toy.size", "2");
    assertThatThrownBy(() -> ConfigAssertions.assertFullMapping(GOOD, sizeOnly, new Toy(2, "a")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("does not name every key the config knows; missing: [toy.name]");
  }

  /** A mapping value equal to the default proves nothing about that key and fails. */
  @Test
  public void aMappingValueEqualToTheDefaultFails() {
    assertThatThrownBy(
            () ->
                ConfigAssertions.assertFullMapping(
                    GOOD, Map.of("toy.size", "2", "toy.name", "a"), new Toy(2, "a")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("leaving out [toy.name=a] gives the same config");
  }

  /** A mapping that parses to something else than expected fails with both values. */
  @Test
  public void aDifferentResultFails() {
    assertThatThrownBy(() -> ConfigAssertions.assertFullMapping(GOOD, FULL, new Toy(2, "c")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("gave\n  Toy[size=2, name=b]\nbut expected\n  Toy[size=2, name=c]");
  }

  /** A mapping with a bad value or a key of another namespace fails. */
  @Test
  public void aBadValueOrAForeignKeyFails() {
    assertThatThrownBy(
            () ->
                ConfigAssertions.assertFullMapping(
                    GOOD, Map.of("toy.size", "x", "toy.name", "b"), new Toy(2, "b")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("parsing the full mapping failed: toy.size='x'");
    assertThatThrownBy(
            () ->
                ConfigAssertions.assertFullMapping(
                    GOOD,
                    Map.of("toy.size", "2", "toy.name", "b", "sim.seed", "1"),
                    new Toy(2, "b")))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("keys of other namespaces, which the config never sees: [sim.seed]");
  }

  /** A key whose absence makes the others fail to parse counts as used. */
  @Test
  public void aRequiredKeyCountsAsUsed() {
    ConfigParser<Toy> requiresName =
        ConfigParser.of(
            "toy",
            r -> {
              int size = r.getInt("toy.size", 1);
              String name = r.getString("toy.name", "");
              r.checkUnknownKeys();
              if (name.isEmpty()) {
                throw new IllegalArgumentException("toy.name is not set");
              }
              return new Toy(size, name);
            });
    ConfigAssertions.assertFullMapping(requiresName, FULL, new Toy(2, "b"));
  }
}
