package io.kvtier.store.file;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The typed configuration of the {@code file} store, namespace {@code file.}.
 *
 * @param directory where the store keeps its pages, one subdirectory per store namespace ({@value
 *     #DIRECTORY}, required); made absolute
 * @param fsync whether each page file is forced to the disk before it is renamed into place
 *     ({@value #FSYNC}, default {@value #DEFAULT_FSYNC}). Without it a crash can leave a page
 *     file short or empty; the checksum then turns it into a counted miss, so only durability is
 *     at stake, not correctness
 */
public record FileConfig(Path directory, boolean fsync) {

  /** The namespace of every key, without the dot. */
  public static final String NAMESPACE = "file";

  /** Key of {@link #directory()}. */
  public static final String DIRECTORY = "file.directory";
  /** Key of {@link #fsync()}. */
  public static final String FSYNC = "file.fsync";

  /** Every key this config knows, in documentation order. */
  public static final List<String> KEYS = List.of(DIRECTORY, FSYNC);

  /** Default of {@link #fsync()}: an L3 cache trades durability for write speed. */
  public static final boolean DEFAULT_FSYNC = false;

  /** Validates the fields and makes the directory absolute. */
  public FileConfig {
    Objects.requireNonNull(directory, DIRECTORY);
    directory = directory.toAbsolutePath().normalize();
  }

  /**
   * Parses the {@code file.*} keys of a property map; keys of other namespaces are ignored.
   *
   * @param properties full keys (for example {@code file.directory}) to raw values
   * @return the config
   * @throws IllegalArgumentException for an unknown {@code file.*} key (listing the known keys),
   *     a missing directory, or a bad value (naming the key and the value)
   */
  public static FileConfig fromProperties(Map<String, String> properties) {
    Objects.requireNonNull(properties, "properties");
    Map<String, String> values = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : properties.entrySet()) {
      String key = Objects.requireNonNull(e.getKey(), "property key");
      if (!key.startsWith(NAMESPACE + ".")) {
        continue;
      }
      if (!KEYS.contains(key)) {
        throw new IllegalArgumentException(
            "unknown key " + key + ": the file store knows " + String.join(", ", KEYS));
      }
      values.put(key, Objects.requireNonNull(e.getValue(), () -> "value of " + key).strip());
    }
    String directory = values.getOrDefault(DIRECTORY, "");
    if (directory.isEmpty()) {
      throw new IllegalArgumentException(
          DIRECTORY + " is not set: the file store needs a directory it may create and write,"
              + " for example " + DIRECTORY + "=/var/cache/kvtier");
    }
    return new FileConfig(
        parsePath(directory), parseBoolean(FSYNC, values.getOrDefault(FSYNC, "false")));
  }

  /**
   * Every key with its value, in a form that {@link #fromProperties} reads back to an equal
   * config.
   *
   * @return key to raw value, in {@link #KEYS} order
   */
  public Map<String, String> toProperties() {
    Map<String, String> out = new LinkedHashMap<>();
    out.put(DIRECTORY, directory.toString());
    out.put(FSYNC, Boolean.toString(fsync));
    return out;
  }

  private static Path parsePath(String value) {
    try {
      return Path.of(value);
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException(
          DIRECTORY + "=" + value + " is not a path here: " + e.getReason(), e);
    }
  }

  private static boolean parseBoolean(String key, String value) {
    return switch (value.toLowerCase(Locale.ROOT)) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException(
          key + "=" + value + " is not a boolean: write true or false");
    };
  }
}
