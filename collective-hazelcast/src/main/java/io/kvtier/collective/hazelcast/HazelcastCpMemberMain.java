package io.kvtier.collective.hazelcast;

import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.core.LifecycleEvent;
import io.kvtier.spi.config.ConfigValues;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs a plain Hazelcast member, with kvtier's {@code hazelcast.*} settings, that serves as a CP
 * member (and a data member of the L3 store) without being a rank: what embedded mode needs
 * when a group has fewer ranks than {@code hazelcast.cp-member-count}, and the building block of
 * a standalone cluster for client mode. {@code kvtier cp-member} wraps it.
 *
 * <pre>
 * java -p ... -m io.kvtier.collective.hazelcast/io.kvtier.collective.hazelcast.HazelcastCpMemberMain \
 *     hazelcast.cluster-name=kvtier hazelcast.port=5703
 * </pre>
 *
 * <p>Arguments are {@code key=value} pairs of {@link HazelcastConfig} keys (a leading {@code
 * --} is allowed); {@code hazelcast.mode} must stay {@code embedded}. The member runs until the
 * process is stopped (Ctrl-C, SIGTERM).
 */
public final class HazelcastCpMemberMain {

  private static final AtomicInteger NAMES = new AtomicInteger();

  private HazelcastCpMemberMain() {}

  /**
   * Starts the member and blocks until it stops.
   *
   * @param args {@code hazelcast.*} settings as {@code key=value}
   */
  public static void main(String[] args) {
    int status = run(args);
    if (status != 0) {
      System.exit(status);
    }
  }

  /**
   * Starts the member and blocks until it stops, without exiting the JVM: the entry point of
   * {@code kvtier cp-member}, which finds it by reflection (the CLI does not compile against
   * Hazelcast).
   *
   * @param args {@code hazelcast.*} settings as {@code key=value}
   * @return 0 once the member stopped, 2 for a bad argument (printed on standard error with the
   *     known keys)
   */
  public static int run(String... args) {
    HazelcastConfig config;
    try {
      config = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("kvtier cp-member: " + e.getMessage());
      System.err.println(
          "usage: cp-member [hazelcast.KEY=VALUE ...]; keys: "
              + String.join(", ", HazelcastConfig.KEYS));
      return 2;
    }
    HazelcastInstance member = start(config);
    CountDownLatch stopped = new CountDownLatch(1);
    member
        .getLifecycleService()
        .addLifecycleListener(
            event -> {
              if (event.getState() == LifecycleEvent.LifecycleState.SHUTDOWN) {
                stopped.countDown();
              }
            });
    report(member, config, System.out);
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      member.shutdown();
    }
    return 0;
  }

  /**
   * Parses {@code key=value} arguments into a configuration.
   *
   * @param args the arguments
   * @return the configuration
   * @throws IllegalArgumentException for an argument without {@code =}, an unknown key, a bad
   *     value, or client mode
   */
  static HazelcastConfig parse(String[] args) {
    Map<String, String> properties = new LinkedHashMap<>();
    for (String arg : args) {
      String a = arg.startsWith("--") ? arg.substring(2) : arg;
      int eq = a.indexOf('=');
      if (eq < 1 || !a.startsWith(HazelcastConfig.NAMESPACE + ".")) {
        throw new IllegalArgumentException(
            "argument '" + arg + "' is not hazelcast.KEY=VALUE, for example hazelcast.port=5703");
      }
      properties.put(a.substring(0, eq), a.substring(eq + 1));
    }
    HazelcastConfig config = HazelcastConfig.fromProperties(properties);
    if (config.mode() != HazelcastConfig.Mode.EMBEDDED) {
      throw new IllegalArgumentException(
          HazelcastConfig.MODE + "=client makes no member: a cp-member is always embedded");
    }
    return config;
  }

  /**
   * Starts a plain member; does not wait for the CP subsystem.
   *
   * @param config the settings, the same as the ranks' ({@code cluster-name}, {@code members},
   *     {@code cp-member-count}, timeouts)
   * @return the running member; the caller shuts it down
   */
  public static HazelcastInstance start(HazelcastConfig config) {
    String name = "kvtier-cp-member-" + config.clusterName() + "-" + NAMES.incrementAndGet();
    return Hazelcast.newHazelcastInstance(HazelcastSetup.member(config, name));
  }

  private static void report(HazelcastInstance member, HazelcastConfig config, PrintStream out) {
    out.println(
        "kvtier cp-member: member "
            + member.getCluster().getLocalMember().getAddress()
            + " of cluster '"
            + config.clusterName()
            + "' is up ("
            + member.getCluster().getMembers().size()
            + " members); waiting for "
            + config.cpMemberCount()
            + " CP members; stop with Ctrl-C");
    try {
      boolean formed =
          member
              .getCPSubsystem()
              .getCPSubsystemManagementService()
              .awaitUntilDiscoveryCompleted(config.joinTimeout().toMillis(), TimeUnit.MILLISECONDS);
      out.println(
          formed
              ? "kvtier cp-member: the CP subsystem has formed"
              : "kvtier cp-member: the CP subsystem has not formed within "
                  + ConfigValues.formatDuration(config.joinTimeout())
                  + "; still waiting for "
                  + "members with the same "
                  + HazelcastConfig.CLUSTER_NAME
                  + " and "
                  + HazelcastConfig.MEMBERS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
