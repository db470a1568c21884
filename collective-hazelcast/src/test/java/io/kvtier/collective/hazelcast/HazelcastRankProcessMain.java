package io.kvtier.collective.hazelcast;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.TimeSource;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One rank of {@link HazelcastMultiProcessTest}, in a JVM of its own: joins the group through the
 * {@code hazelcast} provider (an embedded member per process), plays the {@link
 * CollectiveWorkload} and prints {@code DIGEST hex}; then, asked to go on, plays it again
 * without end, printing {@code MORE n} every 10 rounds, until a collective fails. A failure
 * prints {@code FAILED class: message} and exits with status 3.
 *
 * <p>Arguments: rank, size, seed, rounds, watchdog in ms, {@code stop} or {@code go-on}, then
 * {@code hazelcast.KEY=VALUE} settings.
 */
final class HazelcastRankProcessMain {

  private HazelcastRankProcessMain() {}

  public static void main(String[] args) {
    int rank = Integer.parseInt(args[0]);
    int size = Integer.parseInt(args[1]);
    long seed = Long.parseLong(args[2]);
    int rounds = Integer.parseInt(args[3]);
    Duration watchdog = Duration.ofMillis(Long.parseLong(args[4]));
    boolean goOn = args[5].equals("go-on");
    Map<String, String> properties = new LinkedHashMap<>();
    for (int i = 6; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      properties.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    HazelcastTestCluster.quietLogs();
    BackendContext context =
        new BackendContext(rank, properties, TimeSource.SYSTEM, BackendMetrics.NOOP);
    long start = System.nanoTime();
    Collective c =
        new HazelcastCollectiveProvider()
            .join(CollectiveSpec.of("multi-process", size, rank, watchdog), context);
    System.out.println("JOINED after " + (System.nanoTime() - start) / 1_000_000 + " ms");
    int status = 0;
    try {
      long digest = CollectiveWorkload.run(c, seed, rounds, round -> {});
      System.out.println("DIGEST " + Long.toHexString(digest));
      if (goOn) {
        CollectiveWorkload.run(
            c,
            seed + 1,
            Integer.MAX_VALUE,
            round -> {
              if (round % 10 == 0) {
                System.out.println("MORE " + round);
              }
            });
      }
    } catch (RuntimeException e) {
      // printed before closing: closing stops the member, which may take seconds
      System.out.println(
          "FAILED "
              + e.getClass().getName()
              + ": "
              + String.valueOf(e.getMessage()).replace('\n', '|'));
      status = 3;
    } finally {
      System.out.flush();
      c.close();
    }
    // The member's threads would keep the JVM alive after a failure.
    Runtime.getRuntime().halt(status);
  }
}
