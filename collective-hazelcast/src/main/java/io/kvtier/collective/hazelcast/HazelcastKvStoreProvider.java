package io.kvtier.collective.hazelcast;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreProvider;
import io.kvtier.spi.KvStoreSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code hazelcast} L3 store: pages in a Hazelcast {@code IMap} shared by every kvtier
 * instance of the cluster, bounded by the spec's capacity per member. It uses the same member
 * or client as the {@code hazelcast} collective of the process when their {@code hazelcast.*}
 * settings are equal; it does not need the CP subsystem.
 */
@ProviderName("hazelcast")
public final class HazelcastKvStoreProvider implements KvStoreProvider {

  /** Creates the provider; does no work. */
  public HazelcastKvStoreProvider() {}

  @Override
  public String name() {
    return "hazelcast";
  }

  /**
   * Available when Hazelcast is on the module path; a cluster is looked for only by {@link
   * #open}.
   *
   * @return the availability, naming the Hazelcast version
   */
  @Override
  public Availability availability() {
    return HazelcastAvailability.probe("L3 page store in a cluster-wide IMap");
  }

  /**
   * Shares {@code hazelcast.} with the collective.
   *
   * @return {@code "hazelcast"}
   */
  @Override
  public String configNamespace() {
    return HazelcastConfig.NAMESPACE;
  }

  /**
   * Starts (or reuses) this process's member or client and opens the namespace's map.
   *
   * @throws IllegalArgumentException for an unknown or bad {@code hazelcast.*} key, or a map
   *     that exists with another backup count
   * @throws IllegalStateException if the member cannot start or the client finds no cluster
   */
  @Override
  public KvStore open(KvStoreSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    HazelcastConfig config = HazelcastConfig.fromProperties(context.properties());
    HazelcastInstances.Lease lease = HazelcastInstances.acquire(config);
    try {
      return HazelcastKvStore.open(lease.instance(), spec, config.storeBackupCount(), lease::close);
    } catch (RuntimeException e) {
      lease.close();
      throw e;
    }
  }
}
