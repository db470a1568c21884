package io.kvtier.spi;

/**
 * Provides rank groups: {@code local} (threads of one JVM), {@code hazelcast}, {@code mpi}.
 */
public interface CollectiveProvider extends KvTierProvider {

  /**
   * Joins (or creates) a group. For providers whose world size and rank come from a launcher,
   * the spec's empty fields are filled from it and a spec that contradicts the launcher is an
   * {@link IllegalArgumentException}.
   *
   * @param spec the group, world size, rank and watchdog timeout
   * @param context rank, properties of the provider's namespace, time source, metrics
   * @return this rank's handle on the group
   * @throws CollectiveTimeoutException if the group does not form within the watchdog timeout
   */
  Collective join(CollectiveSpec spec, BackendContext context);
}
