package io.kvtier.events;

import io.kvtier.core.cache.CacheEventPublisher;
import io.kvtier.core.cache.CacheEventPublisherProvider;
import java.util.Map;

/**
 * The KV event publishers of this module ({@code zmq}, {@code hazelcast}) for the engine that
 * opens a rank's cache, found through {@link java.util.ServiceLoader}: {@link KvEvents#open}.
 */
public final class KvEventsProvider implements CacheEventPublisherProvider {

  /** A provider, for {@link java.util.ServiceLoader}. */
  public KvEventsProvider() {}

  @Override
  public CacheEventPublisher open(Map<String, String> properties, int rank, String l3Medium) {
    return KvEvents.open(properties, rank, l3Medium);
  }
}
