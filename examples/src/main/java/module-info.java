/** The {@code kvtier} command line and examples of embedding kvtier. */
module io.kvtier.examples {
  requires io.kvtier.core;
  requires info.picocli;
  // kvtier simulate: the multi-rank simulator; it mutes the cache's logger for injected faults.
  requires io.kvtier.testkit;
  requires java.logging;
  // The tiny transformer's server (kvtier serve) and its metrics.
  requires jdk.httpserver;
  requires micrometer.core;
  requires micrometer.registry.prometheus;

  exports io.kvtier.examples;

  opens io.kvtier.examples to
      info.picocli;
}
