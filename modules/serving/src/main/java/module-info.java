/**
 * The serving engine: continuous batching of generation requests on core's rank loop ({@code
 * RankEngine}), over a rank group of threads or processes, typed on a model interface ({@link
 * io.kvtier.serving.ServingModel}). Models are found through {@link java.util.ServiceLoader} as
 * {@link io.kvtier.serving.ModelProvider}s; backends through core's providers. It needs no HTTP
 * server, command line or metrics library.
 */
module io.kvtier.serving {
  requires transitive io.kvtier.core;

  exports io.kvtier.serving;

  uses io.kvtier.serving.ModelProvider;
  // Rank 0 publishes the cache's KV events (kvtier.events.*, docs/EVENTS.md) where kvtier-events
  // is on the module path.
  uses io.kvtier.core.cache.CacheEventPublisherProvider;
}
