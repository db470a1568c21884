package io.kvtier.serving;

import io.kvtier.core.cache.CacheEventPublisher;
import io.kvtier.core.cache.CacheEventPublisherProvider;
import io.kvtier.core.config.KvTierKeys;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * Opens a rank's KV event publisher (the {@code kvtier.events.*} keys, docs/EVENTS.md) through
 * the one {@link CacheEventPublisherProvider} on the module path ({@code kvtier-events}), so that
 * the serving engine itself carries no publisher's libraries. Without a provider, only "publish
 * nothing" can be asked for.
 */
final class EventPublishers {
  private static final String PUBLISHER = KvTierKeys.EVENTS_PREFIX + "publisher";

  private EventPublishers() {}

  static CacheEventPublisher open(Map<String, String> properties, int rank, String l3Medium) {
    return open(
        ServiceLoader.load(CacheEventPublisherProvider.class).stream()
            .map(ServiceLoader.Provider::get)
            .toList(),
        properties,
        rank,
        l3Medium);
  }

  static CacheEventPublisher open(
      List<CacheEventPublisherProvider> providers,
      Map<String, String> properties,
      int rank,
      String l3Medium) {
    if (providers.size() > 1) {
      throw new IllegalStateException(
          "more than one KV event publisher provider on the module path: "
              + providers.stream()
                  .map(p -> p.getClass().getName())
                  .collect(Collectors.joining(", "))
              + "; keep one kvtier-events jar");
    }
    if (providers.size() == 1) {
      return providers.get(0).open(properties, rank, l3Medium);
    }
    List<String> asked =
        properties.entrySet().stream()
            .filter(e -> e.getKey().startsWith(KvTierKeys.EVENTS_PREFIX))
            .filter(e -> !(e.getKey().equals(PUBLISHER) && e.getValue().strip().equals("none")))
            .map(e -> e.getKey() + "=" + e.getValue())
            .sorted()
            .toList();
    if (!asked.isEmpty()) {
      throw new IllegalArgumentException(
          String.join(", ", asked)
              + ": KV events need the publishers of io.kvtier.events (artifact kvtier-events)"
              + " on the module path; add it, or remove the kvtier.events.* keys");
    }
    return CacheEventPublisher.NONE;
  }
}
