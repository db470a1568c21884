package io.kvtier.cli;

import io.kvtier.core.config.Parallelism;
import io.kvtier.spi.KvLayout;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank's share of each token's KV bytes, for the commands that turn byte capacities into
 * tokens ({@code kvtier replay} and {@code kvtier simulate}, options {@code --kv-layout}, {@code
 * --ranks} and {@code --parallel}): R ranks split each token's KV by heads ({@code tp}: R divides
 * the KV heads) or by positions ({@code cp}: R divides the KV heads x head dimension and every
 * page size, docs/MODELS.md "Ranks (context parallelism)"); either way a rank holds {@code 1/R}
 * of the bytes. Every check throws {@link IllegalArgumentException} naming the option; the
 * command turns it into a usage error.
 *
 * @param layout the model's layout, with a page of one token
 * @param ranks the ranks of the group, at least 1
 * @param parallelism how they split the KV
 */
record RankKvShare(KvLayout layout, int ranks, Parallelism parallelism) {

  private static final List<String> KEYS = List.of("layers", "kv-heads", "head-dim", "dtype-bytes");

  /**
   * Checks that the ranks can split the layout.
   *
   * @throws IllegalArgumentException naming {@code --parallel} and {@code --ranks}
   */
  RankKvShare {
    if (ranks < 1) {
      throw new IllegalArgumentException("--ranks=" + ranks + " must be at least 1");
    }
    if (parallelism.cp()) {
      if ((long) layout.kvHeads() * layout.headDim() % ranks != 0) {
        throw new IllegalArgumentException(
            "--parallel cp over --ranks "
                + ranks
                + ": a rank holds 1/"
                + ranks
                + " of each position's kv-heads x head-dim = "
                + (long) layout.kvHeads() * layout.headDim()
                + " elements, which do not divide");
      }
    } else if (layout.kvHeads() % ranks != 0) {
      throw new IllegalArgumentException(
          "--parallel tp over --ranks "
              + ranks
              + ": the ranks must divide kv-heads="
              + layout.kvHeads()
              + "; --parallel cp splits positions instead");
    }
  }

  /**
   * Checks a page size against the split: under cp each rank takes the same share of every page.
   *
   * @param pageSize tokens per page
   * @throws IllegalArgumentException naming {@code --page-size}
   */
  void checkPageSize(int pageSize) {
    if (parallelism.cp() && pageSize % ranks != 0) {
      throw new IllegalArgumentException(
          "--parallel cp over --ranks "
              + ranks
              + " needs every --page-size to be a multiple of "
              + ranks
              + " (each rank the same share of every page), but "
              + pageSize
              + " is not");
    }
  }

  /** The KV bytes of one token on one rank: the layout's over the ranks, tp or cp. */
  long bytesPerToken() {
    return layout.pageBytes() / ranks;
  }

  /** The KV bytes of one token on one rank of the group, all of it. */
  long modelBytesPerToken() {
    return layout.pageBytes();
  }

  /**
   * Parses {@code --kv-layout layers=N,kv-heads=N,head-dim=N,dtype-bytes=N}.
   *
   * @param value the option's value
   * @return the layout, with a page of one token
   * @throws IllegalArgumentException naming {@code --kv-layout}
   */
  static KvLayout parseLayout(String value) {
    Map<String, Integer> fields = new LinkedHashMap<>();
    for (String part : value.split(",", -1)) {
      String[] kv = part.split("=", 2);
      String key = kv[0].strip();
      if (kv.length != 2 || !KEYS.contains(key)) {
        throw new IllegalArgumentException(
            "--kv-layout: '"
                + part
                + "' is not one of layers=N, kv-heads=N, head-dim=N, dtype-bytes=N");
      }
      fields.put(key, positiveInt("--kv-layout " + key, kv[1].strip()));
    }
    for (String key : KEYS) {
      if (!fields.containsKey(key)) {
        throw new IllegalArgumentException(
            "--kv-layout '" + value + "' lacks " + key + "=N: give all of " + KEYS);
      }
    }
    try {
      return new KvLayout(
          fields.get("layers"),
          fields.get("kv-heads"),
          fields.get("head-dim"),
          fields.get("dtype-bytes"),
          1);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--kv-layout: " + e.getMessage(), e);
    }
  }

  private static int positiveInt(String option, String value) {
    try {
      int n = Integer.parseInt(value);
      if (n >= 1) {
        return n;
      }
    } catch (NumberFormatException e) {
      // the message below says what is accepted
    }
    throw new IllegalArgumentException(
        option + ": '" + value + "' is not a whole number of at least 1");
  }
}
