/**
 * Micrometer meters of the serving engine, its collective, its backends and its HTTP requests
 * ({@code kvtier_*} in Prometheus).
 */
module io.kvtier.metrics {
  requires transitive io.kvtier.serving;
  requires transitive micrometer.core;

  exports io.kvtier.metrics;
}
