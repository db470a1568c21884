package io.kvtier.core.cache;

import java.util.Map;

/**
 * Opens KV event publishers from the {@code kvtier.events.*} keys (docs/EVENTS.md), found through
 * {@link java.util.ServiceLoader}: the engine that opens a rank's cache takes the one provider on
 * the module path, so that an application that publishes no events need not carry a publisher's
 * libraries (ZeroMQ, msgpack, a Hazelcast client).
 */
public interface CacheEventPublisherProvider {

  /**
   * Opens the publisher the keys ask for: one that publishes nothing where they ask for none or
   * {@code rank} is not 0 (every rank takes the same decisions, so rank 0's stream is the group's).
   *
   * @param properties full keys ({@code kvtier.events.publisher}, ...) to raw values; other keys
   *     are ignored
   * @param rank this process's rank in its group
   * @param l3Medium the medium name of L3 blocks, the L3 store's name ({@code none} without L3)
   * @return the publisher
   * @throws IllegalArgumentException for a bad key or value, naming it
   */
  CacheEventPublisher open(Map<String, String> properties, int rank, String l3Medium);
}
