/**
 * The OpenAI-compatible HTTP API ({@code /v1/completions}, {@code /v1/chat/completions}, {@code
 * /v1/models}, {@code /metrics}, {@code /health}) on a serving engine: Jetty's HTTP core, Jackson
 * for the bodies.
 */
module io.kvtier.server {
  requires transitive io.kvtier.serving;
  requires io.kvtier.metrics;
  requires transitive micrometer.registry.prometheus;
  requires micrometer.core;
  requires org.eclipse.jetty.server;
  requires org.eclipse.jetty.http;
  requires org.eclipse.jetty.io;
  requires org.eclipse.jetty.util;
  requires com.fasterxml.jackson.core;
  requires com.fasterxml.jackson.databind;
  requires java.logging;

  exports io.kvtier.server;
}
