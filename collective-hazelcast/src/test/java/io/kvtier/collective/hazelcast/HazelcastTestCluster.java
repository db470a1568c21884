package io.kvtier.collective.hazelcast;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A small Hazelcast cluster of embedded members on loopback for tests: its own cluster name and
 * a random port range, so that it never merges with another test's cluster; members stop when
 * it closes.
 */
final class HazelcastTestCluster implements AutoCloseable {

  // Held so that the level sticks: java.util.logging keeps loggers weakly.
  private static final Logger HAZELCAST_LOG = Logger.getLogger("com.hazelcast");

  private final HazelcastConfig config;
  private final List<HazelcastInstance> members = new ArrayList<>();

  private HazelcastTestCluster(HazelcastConfig config) {
    this.config = config;
  }

  /**
   * Starts members, in parallel, and waits for the CP subsystem when it has one.
   *
   * @param count members to start
   * @param overrides hazelcast.* keys on top of the test defaults
   * @return the cluster
   */
  static HazelcastTestCluster start(int count, Map<String, String> overrides) {
    quietLogs();
    HazelcastTestCluster cluster = new HazelcastTestCluster(testConfig(count, overrides));
    List<CompletableFuture<HazelcastInstance>> starting = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      String name = cluster.config.clusterName() + "-member-" + i;
      starting.add(
          inThread(
              () -> Hazelcast.newHazelcastInstance(HazelcastSetup.member(cluster.config, name))));
    }
    try {
      for (CompletableFuture<HazelcastInstance> f : starting) {
        cluster.members.add(f.join());
      }
      if (cluster.config.cpMemberCount() > 0) {
        for (HazelcastInstance member : cluster.members) {
          HazelcastInstances.awaitCp(member, cluster.config);
        }
      }
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    return cluster;
  }

  /**
   * Hazelcast logs at WARNING unless {@code -Dkvtier.hazelcast.log=INFO} (or another level) asks
   * for more.
   */
  static void quietLogs() {
    HAZELCAST_LOG.setLevel(Level.parse(System.getProperty("kvtier.hazelcast.log", "WARNING")));
  }

  /**
   * Runs a task on a thread of its own: members and ranks block for seconds, and the common
   * pool has a single thread on a 2-core machine.
   *
   * @param task the task
   * @param <T> its result
   * @return its future
   */
  static <T> CompletableFuture<T> inThread(java.util.function.Supplier<T> task) {
    CompletableFuture<T> future = new CompletableFuture<>();
    Thread.ofPlatform()
        .daemon()
        .start(
            () -> {
              try {
                future.complete(task.get());
              } catch (Throwable t) {
                future.completeExceptionally(t);
              }
            });
    return future;
  }

  /**
   * Test settings: a unique cluster name, a random port range, short timeouts.
   *
   * @param members the members the range must hold
   * @param overrides keys on top
   * @return the config
   */
  static HazelcastConfig testConfig(int members, Map<String, String> overrides) {
    int base = 20_000 + 10 * ThreadLocalRandom.current().nextInt(2_000);
    HazelcastConfig c =
        HazelcastConfig.DEFAULTS
            .with(
                HazelcastConfig.CLUSTER_NAME,
                "kvtier-test-" + Long.toHexString(ThreadLocalRandom.current().nextLong()))
            .with(HazelcastConfig.PORT, Integer.toString(base))
            .with(HazelcastConfig.PORT_COUNT, Integer.toString(Math.max(members, 1) + 3))
            .with(HazelcastConfig.JOIN_TIMEOUT, "60s")
            .with(HazelcastConfig.MEMBER_TIMEOUT, "5s")
            .with(HazelcastConfig.CP_MEMBER_REMOVAL, "5s")
            .with(HazelcastConfig.PARTITION_COUNT, "31");
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      c = c.with(e.getKey(), e.getValue());
    }
    return c;
  }

  /** The settings the members run with. */
  HazelcastConfig config() {
    return config;
  }

  /**
   * A context whose {@code hazelcast.*} keys make a client of this cluster.
   *
   * @return the context
   */
  BackendContext clientContext() {
    List<String> addresses = new ArrayList<>();
    for (HazelcastInstance member : members) {
      addresses.add("127.0.0.1:" + member.getCluster().getLocalMember().getAddress().getPort());
    }
    Map<String, String> properties = new LinkedHashMap<>(config.toProperties());
    properties.put(HazelcastConfig.MODE, "client");
    properties.put(HazelcastConfig.MEMBERS, String.join(",", addresses));
    return new BackendContext(0, properties, TimeSource.SYSTEM, BackendMetrics.NOOP);
  }

  /** Member {@code i}. */
  HazelcastInstance member(int i) {
    return members.get(i);
  }

  /** Stops every member at once, without graceful migration: the cluster is thrown away. */
  @Override
  public void close() {
    for (HazelcastInstance member : members) {
      member.getLifecycleService().terminate();
    }
    members.clear();
  }
}
