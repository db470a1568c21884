/**
 * The {@code kvtier} command: {@code backends}, {@code simulate}, {@code serve} and {@code
 * cp-member}, with the HTTP server of the tiny transformer, its metrics and the simulation
 * report. Its run-time module path holds no test library.
 */
module io.kvtier.cli {
  requires io.kvtier.core;
  requires info.picocli;
  // kvtier simulate: the multi-rank simulator; it mutes the cache's logger for injected faults.
  requires io.kvtier.simulator;
  requires java.logging;
  // The tiny transformer's server (kvtier serve): Jetty's HTTP core, Jackson for the bodies.
  requires org.eclipse.jetty.server;
  requires org.eclipse.jetty.http;
  requires org.eclipse.jetty.io;
  requires org.eclipse.jetty.util;
  requires com.fasterxml.jackson.core;
  requires com.fasterxml.jackson.databind;
  // kvtier route: the cache-aware router over serve replicas.
  requires io.kvtier.route;
  requires micrometer.core;
  requires micrometer.registry.prometheus;

  exports io.kvtier.cli;

  opens io.kvtier.cli to
      info.picocli;
}
