package io.kvtier.backend.sim;

import io.kvtier.spi.Availability;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.Collective;
import io.kvtier.spi.CollectiveProvider;
import io.kvtier.spi.CollectiveSpec;
import io.kvtier.spi.ProviderName;
import java.util.Objects;

/**
 * The {@code local} collective: the ranks of a group are threads of one JVM that meet through an
 * in-process registry keyed by group name. Each rank joins with an explicit world size and rank;
 * the group disappears from the registry when every rank that joined has closed its handle.
 */
@ProviderName("local")
public final class LocalCollectiveProvider implements CollectiveProvider {

  /** Creates the provider; does no work. */
  public LocalCollectiveProvider() {}

  @Override
  public String name() {
    return "local";
  }

  /**
   * Always available: threads need nothing but the JVM.
   *
   * @return available
   */
  @Override
  public Availability availability() {
    return Availability.available("ranks as threads of this JVM");
  }

  /**
   * Shares the {@code sim.} namespace with the simulated pools (the collective has no keys of
   * its own but rejects unknown {@code sim.*} keys like them).
   *
   * @return {@code "sim"}
   */
  @Override
  public String configNamespace() {
    return SimConfig.NAMESPACE;
  }

  /**
   * Joins a group; does not wait for the other ranks (the first collective call does).
   *
   * @throws IllegalArgumentException if the spec lacks the world size or the rank, if the group
   *     exists with another world size, or if the rank has already joined it
   */
  @Override
  public Collective join(CollectiveSpec spec, BackendContext context) {
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(context, "context");
    SimConfig.fromProperties(context.properties());
    if (spec.worldSize().isEmpty() || spec.rank().isEmpty()) {
      throw new IllegalArgumentException(
          "the local collective needs both worldSize and rank in the spec (got worldSize="
              + spec.worldSize()
              + ", rank="
              + spec.rank()
              + " for group '"
              + spec.group()
              + "'): use CollectiveSpec.of(group, worldSize, rank, watchdogTimeout)");
    }
    return LocalGroup.join(
        spec.group(), spec.worldSize().getAsInt(), spec.rank().getAsInt(), spec.watchdogTimeout());
  }
}
