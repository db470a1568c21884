package io.kvtier.testkit.config;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * The two checks every typed config gets, after airlift's {@code ConfigAssertions}:
 *
 * <pre>{@code
 * @Test
 * void defaults() {
 *   ConfigAssertions.assertDefaults(SimConfig.PARSER, SimConfig.DEFAULTS);
 * }
 *
 * @Test
 * void fullMapping() {
 *   ConfigAssertions.assertFullMapping(SimConfig.PARSER, Map.of("sim.seed", "7", ...),
 *       new SimConfig(..., 7, ...));
 * }
 * }</pre>
 *
 * <p>{@link #assertDefaults} pins what no properties give, so a changed default is a test
 * change. {@link #assertFullMapping} pins what every key maps to: the properties must name every
 * key the parser asks its {@link ConfigReader} for (and no other key of its namespace), they
 * must parse to the expected config, and each key must matter: leaving any one out must give a
 * different config (or fail). The last check is airlift's "every value differs from the
 * default", per key: a key whose value is its default, or that the parser reads but ignores,
 * fails it.
 *
 * <p>Failures are {@link AssertionError}s that name the key and the values.
 */
public final class ConfigAssertions {
  private ConfigAssertions() {}

  /**
   * Asserts that parsing no properties gives exactly {@code expectedDefaults}.
   *
   * @param <T> the typed config
   * @param parser the config's parser
   * @param expectedDefaults the defaults, built from the expected values (not from the parser)
   * @throws AssertionError if the parsed defaults differ or parsing fails
   */
  public static <T> void assertDefaults(ConfigParser<T> parser, T expectedDefaults) {
    Objects.requireNonNull(parser, "parser");
    Objects.requireNonNull(expectedDefaults, "expectedDefaults");
    T actual;
    try {
      actual = parser.parse(Map.of());
    } catch (IllegalArgumentException e) {
      throw new AssertionError(
          parser.namespace()
              + ": parsing no properties failed, so the config has no defaults: "
              + e.getMessage(),
          e);
    }
    if (!actual.equals(expectedDefaults)) {
      throw new AssertionError(
          parser.namespace()
              + ": the defaults changed: parsing no properties gave\n  "
              + actual
              + "\nbut the expected defaults are\n  "
              + expectedDefaults);
    }
  }

  /**
   * Asserts that {@code properties} name every key the config knows and parse to {@code
   * expected}, and that leaving out any one key changes the result.
   *
   * @param <T> the typed config
   * @param parser the config's parser
   * @param properties a value for every key of the config, each different from its default
   * @param expected the config those properties must give, built from the expected values
   * @throws AssertionError naming the key for a key missing from the properties, an unknown
   *     key, a key whose value does not matter, a parse failure or a different config
   */
  public static <T> void assertFullMapping(
      ConfigParser<T> parser, Map<String, String> properties, T expected) {
    Objects.requireNonNull(parser, "parser");
    Objects.requireNonNull(properties, "properties");
    Objects.requireNonNull(expected, "expected");
    String namespace = parser.namespace();
    String prefix = namespace + ".";
    List<String> foreign =
        properties.keySet().stream().filter(k -> !k.startsWith(prefix)).sorted().toList();
    if (!foreign.isEmpty()) {
      throw new AssertionError(
          namespace
              + ": the full mapping sets keys of other namespaces, which the config never"
              + " sees: "
              + foreign);
    }
    ConfigReader reader = ConfigReader.of(namespace, properties);
    T actual;
    try {
      actual = parser.read(reader);
    } catch (IllegalArgumentException e) {
      throw new AssertionError(
          namespace + ": parsing the full mapping failed: " + e.getMessage(), e);
    }
    if (!reader.unknownKeys().isEmpty()) {
      throw new AssertionError(
          namespace
              + ": the full mapping sets keys the config never reads: "
              + reader.unknownKeys()
              + "; it reads "
              + reader.knownKeys());
    }
    Set<String> missing = new TreeSet<>(reader.knownKeys());
    missing.removeAll(properties.keySet());
    if (!missing.isEmpty()) {
      throw new AssertionError(
          namespace
              + ": the full mapping does not name every key the config knows; missing: "
              + missing);
    }
    if (!actual.equals(expected)) {
      throw new AssertionError(
          namespace + ": the full mapping gave\n  " + actual + "\nbut expected\n  " + expected);
    }
    List<String> ignored = new ArrayList<>();
    for (String key : properties.keySet()) {
      Map<String, String> without = new LinkedHashMap<>(properties);
      without.remove(key);
      try {
        if (parser.parse(without).equals(actual)) {
          ignored.add(key + "=" + properties.get(key));
        }
      } catch (IllegalArgumentException e) {
        // Without this key the others do not parse: the key matters.
      }
    }
    if (!ignored.isEmpty()) {
      throw new AssertionError(
          namespace
              + ": leaving out "
              + ignored
              + " gives the same config, so the value is"
              + " the default or the config ignores the key: set a value other than the default"
              + " and check that the config uses it");
    }
  }
}
