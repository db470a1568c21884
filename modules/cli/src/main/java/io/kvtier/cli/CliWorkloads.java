package io.kvtier.cli;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The generator workloads of {@code kvtier simulate}, sized for its default pools (192 device
 * pages of 16 tokens per rank, a host tier twice as large) and its default {@code --ticks 600}.
 * The generators' own defaults (docs/WORKLOADS.md) are sized for real servers: a 20,000-token
 * document never fits 192 pages, and 1,024 shared-prefix requests do not arrive in 600 ticks.
 * The parameters a spec gives replace these one by one, so that {@code
 * multiturn:conversations=400} keeps the other sizes below.
 */
final class CliWorkloads {
  /** The default of {@code --workload}. */
  static final String DEFAULT = "multiturn";

  /** A workload where the host tier matters: documents that do not all fit the device pool. */
  static final String TIERED = "doc-qa";

  /** Each generator's parameters in the CLI, in the order they are spelled out. */
  static final Map<String, String> SIZES =
      Map.of(
          "multiturn", "conversations=48,turns=4,first=96,answer=16,question=32",
          "shared-prefix", "groups=16,system=512,question=64,requests=192,output=16",
          "doc-qa", "documents=6,length=1024,asks=4,question=16,output=16");

  private CliWorkloads() {}

  /**
   * The spec with the CLI's sizes for the parameters it does not give; other specs (traces,
   * {@code fixed:}) unchanged, as is a generator spec the generator will refuse anyway (a
   * parameter without {@code =}), so that its own message names the mistake.
   *
   * @param spec the {@code --workload} value
   * @return the spec to run
   */
  static String withDefaults(String spec) {
    String trimmed = spec.strip();
    int colon = trimmed.indexOf(':');
    String name = colon < 0 ? trimmed : trimmed.substring(0, colon);
    String sizes = SIZES.get(name);
    if (sizes == null) {
      return spec;
    }
    Map<String, String> merged = parameters(sizes);
    String given = colon < 0 ? "" : trimmed.substring(colon + 1).strip();
    if (!given.isEmpty()) {
      for (String pair : List.of(given.split(",", -1))) {
        int eq = pair.indexOf('=');
        if (eq <= 0) {
          return spec;
        }
        merged.put(pair.substring(0, eq).strip(), pair.substring(eq + 1).strip());
      }
    }
    StringBuilder s = new StringBuilder(name).append(':');
    merged.forEach((k, v) -> s.append(k).append('=').append(v).append(','));
    s.setLength(s.length() - 1);
    return s.toString();
  }

  private static Map<String, String> parameters(String list) {
    Map<String, String> m = new LinkedHashMap<>();
    for (String pair : list.split(",")) {
      int eq = pair.indexOf('=');
      m.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    return m;
  }
}
