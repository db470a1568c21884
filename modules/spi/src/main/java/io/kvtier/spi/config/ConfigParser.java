package io.kvtier.spi.config;

import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * How one typed config reads its namespace: the namespace, and the code that asks a {@link
 * ConfigReader} for every key and builds the config. The testkit's {@code ConfigAssertions}
 * take one to check a config's defaults and full key mapping.
 *
 * @param <T> the typed config
 */
public interface ConfigParser<T> {

  /**
   * The namespace read, without its dot.
   *
   * @return for example {@code sim}
   */
  String namespace();

  /**
   * Asks {@code reader} for every key of the config and builds it. It may call {@link
   * ConfigReader#checkUnknownKeys()} itself, before checks that need several keys; {@link
   * #parse} calls it afterwards in any case.
   *
   * @param reader a reader of {@link #namespace()}
   * @return the config
   * @throws IllegalArgumentException for a bad value or an unknown key, naming it
   */
  T read(ConfigReader reader);

  /**
   * Parses properties: reads them with a new reader, then fails for any key of the namespace
   * that {@link #read} did not ask for.
   *
   * @param properties full keys to raw values; keys of other namespaces are ignored
   * @return the config
   * @throws IllegalArgumentException for a bad value or an unknown key, naming it
   */
  default T parse(Map<String, String> properties) {
    ConfigReader reader = ConfigReader.of(namespace(), properties);
    T config = read(reader);
    reader.checkUnknownKeys();
    return config;
  }

  /**
   * A parser of a namespace by a reading function.
   *
   * @param <T> the typed config
   * @param namespace the namespace, without its dot
   * @param read asks the reader for every key and builds the config
   * @return the parser
   */
  static <T> ConfigParser<T> of(String namespace, Function<ConfigReader, T> read) {
    Objects.requireNonNull(namespace, "namespace");
    Objects.requireNonNull(read, "read");
    return new ConfigParser<>() {
      @Override
      public String namespace() {
        return namespace;
      }

      @Override
      public T read(ConfigReader reader) {
        return read.apply(reader);
      }

      @Override
      public String toString() {
        return "ConfigParser[" + namespace + "]";
      }
    };
  }
}
