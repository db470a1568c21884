package io.kvtier.route;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.BooleanSupplier;

/**
 * What the router's tests share: the router's options over {@link FakeReplica}s, prompts of
 * distinct token ids, and a bounded wait.
 */
final class RouteTesting {
  /** The replicas' page size in tokens (the block size of their events). */
  static final int PAGE = 4;

  private RouteTesting() {}

  /**
   * Options of a router on a free port of 127.0.0.1 that routes by prefix, with no API keys, a
   * 2 s connect and health-check timeout, and {@code readTimeout}.
   */
  static KvRouter.Options options(Duration readTimeout) {
    return new KvRouter.Options(
        "127.0.0.1",
        0,
        PAGE,
        RouteScore.DEFAULT,
        RoutePolicy.PREFIX,
        Optional.empty(),
        Optional.empty(),
        Duration.ofSeconds(2),
        readTimeout);
  }

  /** {@link #options(Duration)} with a 60 s read timeout. */
  static KvRouter.Options options() {
    return options(Duration.ofSeconds(60));
  }

  /** A prompt of {@code length} token ids, distinct per salt. */
  static int[] prompt(int length, int salt) {
    int[] t = new int[length];
    for (int i = 0; i < length; i++) {
      t[i] = 1 + (i * 31 + salt * 7919) % 50_000;
    }
    return t;
  }

  /** The non-empty lines of a streamed answer, to its end. */
  static List<String> lines(InputStream stream) throws IOException {
    List<String> lines = new ArrayList<>();
    try (BufferedReader in = new BufferedReader(new InputStreamReader(stream))) {
      for (String line; (line = in.readLine()) != null; ) {
        if (!line.isEmpty()) {
          lines.add(line);
        }
      }
    }
    return lines;
  }

  /** Waits up to 10 s for {@code condition}, then fails naming {@code what}. */
  static void await(BooleanSupplier condition, String what) throws InterruptedException {
    for (int i = 0; i < 400 && !condition.getAsBoolean(); i++) {
      Thread.sleep(25);
    }
    assertThat(condition.getAsBoolean()).as(what).isTrue();
  }
}
