package io.kvtier.bench;

import java.io.IOException;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the HTTP load benchmarks share ({@link ServeLoadBenchmark}, {@link RouteLoadBenchmark},
 * {@link PdLoadBenchmark}): their {@code --name value} options, the target options of those that
 * append one result line a run to {@code --results} and compare the lines later, and their HTTP
 * client.
 */
final class LoadOptions {
  private LoadOptions() {}

  /**
   * Reads {@code --name value} pairs over the defaults.
   *
   * @param args the command line
   * @param defaults the options' defaults, in the order to keep
   * @return the options by name (without the dashes)
   * @throws IllegalArgumentException if an argument is not {@code --name} followed by a value
   */
  static Map<String, String> parse(String[] args, Map<String, String> defaults) {
    Map<String, String> o = new LinkedHashMap<>(defaults);
    for (int i = 0; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException(args[i] + " is not an option: use --name value");
      }
      o.put(args[i].substring(2), args[i + 1]);
    }
    return o;
  }

  /**
   * Checks that a run names its target: {@code --url}, {@code --label} and {@code --results}.
   *
   * @throws IllegalArgumentException if one is missing
   */
  static void requireTarget(Map<String, String> o) {
    for (String key : List.of("url", "label", "results")) {
      if (!o.containsKey(key)) {
        throw new IllegalArgumentException(
            "give --url URL --label NAME --results FILE (or --compare FILE)");
      }
    }
  }

  /** Appends one result line to the {@code --results} file. */
  static void append(Map<String, String> o, String line) throws IOException {
    Files.writeString(
        Path.of(o.get("results")),
        line + "\n",
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  /** The benchmarks' HTTP/1.1 client: one connection a stream, 10 s to connect. */
  static HttpClient client() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10))
        .build();
  }
}
