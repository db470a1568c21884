package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.CollectiveTimeoutException;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code hazelcast} collective: ranks agree through the CP subsystem (Raft) of a Hazelcast
 * 5.4.0 cluster, each rank in its own process. In {@code embedded} mode each rank starts a
 * member (3 ranks form the 3 CP members; with fewer ranks, start plain CP members with {@link
 * HazelcastCpMemberMain}); in {@code client} mode ranks connect to a running cluster of at least
 * 3 CP members. Configuration: {@link HazelcastConfig}, namespace {@code hazelcast.}.
 */
@ProviderName("hazelcast")
public final class HazelcastCollectiveProvider implements CollectiveProvider {

  /** Creates the provider; does no work. */
  public HazelcastCollectiveProvider() {}

  @Override
  public String name() {
    return "hazelcast";
  }

  /**
   * Available when Hazelcast is on the module path; a cluster is looked for only by {@link
   * #join}.
   *
   * @return the availability, naming the Hazelcast version
   */
  @Override
  public Availability availability() {
    return HazelcastAvailability.probe("rank agreement on the CP subsystem");
  }

  /**
   * Shares {@code hazelcast.} with the L3 store.
   *
   * @return {@code "hazelcast"}
   */
  @Override
  public String configNamespace() {
    return HazelcastConfig.NAMESPACE;
  }

  /**
   * Starts (or reuses) this process's member or client, waits until the CP subsystem has formed
   * (within {@code hazelcast.join-timeout}), and joins the group. Does not wait for the other
   * ranks: the first collective call does, within the watchdog.
   *
   * @throws IllegalArgumentException for an unknown or bad {@code hazelcast.*} key, a spec
   *     without world size or rank, {@code hazelcast.cp-member-count=0}, or a rank joined twice
   * @throws CollectiveTimeoutException if the cluster or its CP subsystem does not form (or a
   *     client does not connect) within the join timeout
   */
  @Override
  public Collective join(CollectiveSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    HazelcastConfig config = HazelcastConfig.fromProperties(context.properties());
    HazelcastCollectives.checkSpec(spec);
    if (config.cpMemberCount() == 0) {
      throw new IllegalArgumentException(
          HazelcastConfig.CP_MEMBER_COUNT
              + "=0 turns the CP subsystem off, and the hazelcast"
              + " collective agrees through it: set it to 3 or more");
    }
    HazelcastInstances.Lease lease;
    try {
      lease = HazelcastInstances.acquire(config);
    } catch (HazelcastInstances.Unreachable e) {
      throw new CollectiveTimeoutException(e.getMessage());
    }
    try {
      HazelcastInstances.awaitCp(lease.instance(), config);
    } catch (RuntimeException e) {
      lease.close();
      throw e;
    }
    return HazelcastCollectives.open(lease.instance(), spec, config.joinTimeout(), lease::close);
  }
}
