package io.kvtier.collective.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.CollectiveTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Joins rank groups on a Hazelcast instance that the caller already runs, for servers that embed
 * Hazelcast themselves (and for tests that run several ranks on a few members of one JVM). The
 * {@code hazelcast} {@link HazelcastCollectiveProvider} does the same on an instance it starts
 * from the {@code hazelcast.*} configuration.
 *
 * <p>The instance must belong to a cluster with a working CP subsystem (at least 3 CP members).
 * Closing a collective joined here leaves the instance running.
 */
public final class HazelcastCollectives {

  private static final AtomicInteger THREADS = new AtomicInteger();

  private HazelcastCollectives() {}

  /**
   * Joins a group as one rank, on an instance the caller owns, allowing the cluster {@link
   * HazelcastConfig#DEFAULT_JOIN_TIMEOUT} to answer. Does not wait for the other ranks: the
   * first collective call does, within the spec's watchdog.
   *
   * @param hazelcast a running member or client of a cluster with a CP subsystem
   * @param spec the group, world size, rank and watchdog; world size and rank are required
   * @return this rank's handle
   * @throws IllegalArgumentException if the spec lacks world size or rank, the group name holds
   *     {@code '@'}, or the rank already joined the group
   * @throws CollectiveTimeoutException if the CP subsystem does not answer in time
   */
  public static Collective join(HazelcastInstance hazelcast, CollectiveSpec spec) {
    return join(hazelcast, spec, HazelcastConfig.DEFAULT_JOIN_TIMEOUT);
  }

  /**
   * Joins a group as one rank, on an instance the caller owns.
   *
   * @param hazelcast a running member or client of a cluster with a CP subsystem
   * @param spec the group, world size, rank and watchdog; world size and rank are required
   * @param joinTimeout how long the cluster may take to answer the join (a fresh CP subsystem
   *     elects its leaders first, which may take longer than a collective's watchdog)
   * @return this rank's handle
   * @throws IllegalArgumentException if the spec lacks world size or rank, the group name holds
   *     {@code '@'}, or the rank already joined the group
   * @throws CollectiveTimeoutException if the CP subsystem does not answer within {@code
   *     joinTimeout}
   */
  public static Collective join(
      HazelcastInstance hazelcast, CollectiveSpec spec, Duration joinTimeout) {
    Objects.requireNonNull(hazelcast, "hazelcast");
    Objects.requireNonNull(joinTimeout, "joinTimeout");
    checkSpec(spec);
    return open(hazelcast, spec, joinTimeout, broken -> {});
  }

  /**
   * Checks what the Hazelcast collective needs of a spec.
   *
   * @param spec the spec
   * @throws IllegalArgumentException naming the problem and the fix
   */
  static void checkSpec(CollectiveSpec spec) {
    Objects.requireNonNull(spec, "spec");
    if (spec.worldSize().isEmpty() || spec.rank().isEmpty()) {
      throw new IllegalArgumentException(
          "the hazelcast collective needs both worldSize and rank in the spec (got worldSize="
              + spec.worldSize()
              + ", rank="
              + spec.rank()
              + " for group '"
              + spec.group()
              + "'): use CollectiveSpec.of(group, worldSize, rank, watchdogTimeout)");
    }
    if (spec.group().contains("@")) {
      throw new IllegalArgumentException(
          "group name '"
              + spec.group()
              + "' contains '@', which Hazelcast's CP subsystem reads"
              + " as the name of a separate CP group (a new Raft group per name): choose a name"
              + " without '@'");
    }
  }

  /**
   * Joins a group; {@code release} runs when the handle closes (or when joining fails), told
   * whether the group broke.
   *
   * @param hazelcast the instance
   * @param spec a checked spec
   * @param joinTimeout bound on the cluster calls of joining
   * @param release what to do when the handle closes
   * @return the handle
   */
  static Collective open(
      HazelcastInstance hazelcast,
      CollectiveSpec spec,
      Duration joinTimeout,
      HazelcastCollective.Release release) {
    int size = spec.worldSize().getAsInt();
    int rank = spec.rank().getAsInt();
    String prefix = "kvtier-hazelcast-" + spec.group() + "-rank-" + rank + "-";
    ExecutorService helpers =
        Executors.newCachedThreadPool(
            task ->
                Thread.ofPlatform()
                    .name(prefix + THREADS.incrementAndGet())
                    .daemon()
                    .unstarted(task));
    String who =
        HazelcastGroupWatch.registration(
            hazelcast.getLocalEndpoint().getUuid(),
            String.valueOf(hazelcast.getLocalEndpoint().getSocketAddress()));
    try {
      HazelcastGroup group =
          helpers
              .submit(() -> HazelcastGroup.join(hazelcast, spec.group(), size, rank, who, helpers))
              .get(joinTimeout.toMillis(), TimeUnit.MILLISECONDS);
      return new HazelcastCollective(group, rank, size, spec.watchdogTimeout(), helpers, release);
    } catch (TimeoutException e) {
      helpers.shutdownNow();
      release.close(false);
      throw new CollectiveTimeoutException(
          "rank "
              + rank
              + " could not join group '"
              + spec.group()
              + "' within "
              + joinTimeout
              + ": the CP subsystem did not answer. It needs at least 3 CP members and a"
              + " majority of them alive; the cluster has "
              + hazelcast.getCluster().getMembers().size()
              + " members");
    } catch (ExecutionException e) {
      helpers.shutdownNow();
      release.close(false);
      if (e.getCause() instanceof IllegalArgumentException iae) {
        throw new IllegalArgumentException(iae.getMessage(), iae);
      }
      throw new IllegalStateException(
          "rank " + rank + " could not join group '" + spec.group() + "': " + e.getCause(),
          e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      helpers.shutdownNow();
      release.close(false);
      throw new IllegalStateException("interrupted while joining group '" + spec.group() + "'");
    } catch (RuntimeException e) {
      helpers.shutdownNow();
      release.close(false);
      throw e;
    }
  }
}
