package io.kvtier.serving;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.server.CompletionServer;
import io.kvtier.spi.BackendMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;

/**
 * The real rank group engine behind the real HTTP server on a loopback port, for tests that call
 * it as a client does.
 *
 * @param engine the engine, whose stats and drain a test reads
 * @param server the server
 * @param base {@code http://127.0.0.1:PORT}
 */
record HttpServed(RankGroupEngine engine, CompletionServer server, URI base)
    implements AutoCloseable {

  /**
   * Opens the engine and starts the server; closes the engine if the server cannot start.
   *
   * @param model the model
   * @param config the cache's configuration
   * @param settings the engine's settings, with a group name of the test's own
   * @param hooks what the test wraps around each rank's parts
   * @param options the server's
   * @return both, serving
   * @throws IOException if the server cannot bind
   */
  static HttpServed open(
      ServingModel model,
      KvTierConfig config,
      EngineSettings settings,
      RankSlot.Hooks hooks,
      CompletionServer.Options options)
      throws IOException {
    RankGroupEngine engine =
        GenerationEngines.open(model, config, settings, BackendMetrics.NOOP, hooks);
    try {
      CompletionServer server =
          CompletionServer.start(
              engine,
              new PrometheusMeterRegistry(PrometheusConfig.DEFAULT),
              new InetSocketAddress("127.0.0.1", 0),
              options);
      return new HttpServed(
          engine, server, URI.create("http://127.0.0.1:" + server.address().getPort()));
    } catch (IOException | RuntimeException e) {
      engine.close();
      throw e;
    }
  }

  @Override
  public void close() {
    server.close();
    engine.close();
  }
}
