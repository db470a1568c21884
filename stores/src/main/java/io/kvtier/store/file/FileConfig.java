package io.kvtier.store.file;

import io.kvtier.spi.config.ConfigParser;
import io.kvtier.spi.config.ConfigReader;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
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

  /** Reads the {@code file.*} keys; {@link #fromProperties} and the config test use it. */
  public static final ConfigParser<FileConfig> PARSER =
      ConfigParser.of(NAMESPACE, FileConfig::read);

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
   * @throws IllegalArgumentException for an unknown {@code file.*} key (naming the closest and
   *     listing the known keys), a missing directory, or a bad value (naming the key and the
   *     value)
   */
  public static FileConfig fromProperties(Map<String, String> properties) {
    return PARSER.parse(properties);
  }

  private static FileConfig read(ConfigReader r) {
    String directory = r.getString(DIRECTORY, "");
    boolean fsync = r.getBoolean(FSYNC, DEFAULT_FSYNC);
    // A misspelt key explains a missing directory better than "not set" does.
    r.checkUnknownKeys();
    if (directory.isEmpty()) {
      throw new IllegalArgumentException(
          DIRECTORY
              + " is not set: the file store needs a directory it may create and write,"
              + " for example "
              + DIRECTORY
              + "=/var/cache/kvtier");
    }
    return new FileConfig(parsePath(directory), fsync);
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
          DIRECTORY + "='" + value + "' is not a path here: " + e.getReason(), e);
    }
  }
}
