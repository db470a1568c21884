package io.kvtier.cli;

import io.kvtier.cli.metrics.KvTierMeters;
import io.kvtier.cli.metrics.MicrometerBackendMetrics;
import io.kvtier.cli.model.ModelConfig;
import io.kvtier.cli.model.ModelEngine;
import io.kvtier.cli.model.TinyTransformer;
import io.kvtier.cli.serve.CompletionServer;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.discovery.ProviderKind;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvtier serve}: an HTTP server embedding kvtier with the tiny transformer, until the
 * process is stopped (Ctrl-C, SIGTERM), then a graceful shutdown.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serves the tiny transformer over HTTP with kvtier caching its KV:",
      "  POST /v1/completions {\"prompt_tokens\": [...], \"max_tokens\": n}"
          + " -> {\"tokens\": [...], \"cached_tokens\": k} (k: device, host and L3 hits)",
      "  GET /metrics (Prometheus text), GET /health",
      "The model fixes kvtier.layers, kvtier.kv-heads, kvtier.head-dim and kvtier.dtype-bytes"
          + " (2, 4, 16, 4) and kvtier.vocab-size (512); kvtier.ranks must be 1."
    })
final class ServeCommand implements Callable<Integer> {

  @Spec private CommandSpec spec;

  @Option(
      names = "--port",
      defaultValue = "8080",
      description = "TCP port; 0 picks a free one (default: ${DEFAULT-VALUE}).")
  private int port;

  @Option(
      names = "--bind",
      defaultValue = "127.0.0.1",
      description = "Address to listen on (default: ${DEFAULT-VALUE}, loopback only).")
  private String bind;

  @Option(
      names = "--config",
      paramLabel = "FILE",
      description = "A kvtier .properties file (pools, policies, sim.* settings).")
  private Path config;

  @Option(
      names = "--queue",
      defaultValue = "64",
      description =
          "Requests that may wait for the engine before a 429" + " (default: ${DEFAULT-VALUE}).")
  private int queue;

  @Option(
      names = "--model-seed",
      defaultValue = "42",
      description = "Seed of the tiny transformer's weights (default: ${DEFAULT-VALUE}).")
  private long modelSeed;

  @Option(
      names = "--l3",
      paramLabel = "STORE",
      description =
          "L3 store under the host tier:"
              + " none, memory, file or hazelcast (sets kvtier.store; default: kvtier.store of the"
              + " config, else none).")
  private String l3;

  @Option(
      names = "--l3-dir",
      paramLabel = "DIR",
      description =
          "Directory of the file store"
              + " (sets file.directory; default with --l3 file: a new temporary directory).")
  private Path l3Dir;

  @Option(
      names = "--l3-mib",
      description =
          "L3 store capacity in MiB (sets kvtier.l3-bytes;"
              + " default: kvtier.l3-bytes of the config, else 1024).")
  private Long l3Mib;

  @Option(
      names = "--l3-prefetch-policy",
      paramLabel = "POLICY",
      description =
          "best_effort,"
              + " wait_complete or timeout (sets kvtier.l3-prefetch-policy; default: timeout).")
  private String l3Policy;

  @Option(
      names = "--l3-prefetch-threshold",
      description =
          "Fewest tokens of an L3 hit worth"
              + " prefetching (sets kvtier.l3-prefetch-threshold; default: 256).")
  private Integer l3Threshold;

  private final CountDownLatch stop = new CountDownLatch(1);
  private final CountDownLatch stopped = new CountDownLatch(1);
  private volatile CompletionServer server;

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("--port=" + port + " must be between 0 and 65535");
    }
    if (queue < 1) {
      throw new IllegalArgumentException("--queue=" + queue + " must be >= 1");
    }
    TinyTransformer model = new TinyTransformer(ModelConfig.DEFAULTS.withSeed(modelSeed));
    KvTierConfig kvtier = configFor(model.config());
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    PrintWriter out = spec.commandLine().getOut();
    try (ModelEngine engine =
        ModelEngine.open(model, kvtier, new MicrometerBackendMetrics(registry))) {
      KvTierMeters.bind(registry, engine.stats());
      CompletionServer started;
      try {
        started =
            CompletionServer.start(
                engine,
                registry,
                new InetSocketAddress(bind, port),
                new CompletionServer.Options(queue, 1 << 20, Duration.ofMinutes(2)));
      } catch (BindException e) {
        throw new IllegalArgumentException(
            "cannot listen on "
                + bind
                + ":"
                + port
                + " ("
                + e.getMessage()
                + "): choose another --port, or 0 for a free one",
            e);
      }
      // The JVM halts once its hooks return: the hook waits for the graceful shutdown.
      Thread hook = new Thread(this::stopAndWait, "kvtier-serve-shutdown");
      Runtime.getRuntime().addShutdownHook(hook);
      try (started) {
        server = started;
        InetSocketAddress at = started.address();
        out.printf(
            "kvtier serve: listening on http://%s:%d (device %d pages, host %d pages of"
                + " %d tokens; write %s, eviction %s; L3 %s)%n",
            at.getHostString(),
            at.getPort(),
            kvtier.cache().devicePages(),
            kvtier.cache().hostPages(),
            kvtier.cache().pageSize(),
            kvtier.cache().writePolicy().configName(),
            kvtier.cache().evictionPolicy().configName(),
            l3Description(kvtier, engine));
        out.flush();
        stop.await();
      } finally {
        server = null;
        try {
          Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
          // The JVM is already shutting down and running the hook: nothing to remove.
        }
      }
      out.println("kvtier serve: stopped after " + engine.stats().requests() + " requests");
      out.flush();
    } finally {
      stopped.countDown();
    }
    return 0;
  }

  private void stopAndWait() {
    stop();
    try {
      stopped.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Ends {@link #call()} after a graceful shutdown; for the shutdown hook and for tests. */
  void stop() {
    stop.countDown();
  }

  /**
   * The running server, for tests.
   *
   * @return the server, or null before it started or after it stopped
   */
  CompletionServer server() {
    return server;
  }

  private KvTierConfig configFor(ModelConfig model) {
    KvTierConfigBuilder builder = KvTierConfig.builder();
    Map<String, String> fixed =
        Map.of(
            KvTierKeys.LAYERS, Integer.toString(model.layers()),
            KvTierKeys.KV_HEADS, Integer.toString(model.heads()),
            KvTierKeys.HEAD_DIM, Integer.toString(model.headDim()),
            KvTierKeys.DTYPE_BYTES, Integer.toString(Float.BYTES),
            KvTierKeys.VOCAB_SIZE, Integer.toString(model.vocabSize()));
    if (config != null) {
      builder.propertiesFile(config);
      checkFixed(fileProperties(config), fixed, "--config " + config);
    }
    Properties system = System.getProperties();
    builder.systemProperties(system);
    checkFixed(system, fixed, "the system properties");
    fixed.forEach(builder::set);
    l3Options(builder, model);
    return builder.build();
  }

  /**
   * The {@code --l3*} options, as explicit settings over the config file and the system
   * properties. The L3 keys carry the model's seed unless a model id is configured: pages of
   * differently seeded weights must never be shared through a store that outlives the process.
   */
  private void l3Options(KvTierConfigBuilder builder, ModelConfig model) {
    Properties configured = config == null ? new Properties() : fileProperties(config);
    configured.putAll(System.getProperties());
    if (configured.getProperty(KvTierKeys.L3_MODEL_ID) == null) {
      builder.set(KvTierKeys.L3_MODEL_ID, "tiny-transformer-seed-" + model.seed());
    }
    if (l3 != null) {
      builder.set(KvTierKeys.STORE, l3.strip());
    }
    String store =
        l3 != null ? l3.strip() : configured.getProperty(KvTierKeys.STORE, "none").strip();
    if (l3Dir != null && !store.equals("file")) {
      throw new IllegalArgumentException(
          "--l3-dir="
              + l3Dir
              + " is for the file store, but"
              + " the L3 store is "
              + store
              + ": add --l3 file or drop --l3-dir");
    }
    if (store.equals("file")) {
      Path dir = l3Dir;
      if (dir == null && configured.getProperty("file.directory") == null) {
        try {
          dir = Files.createTempDirectory("kvtier-serve-l3-");
        } catch (IOException e) {
          throw new UncheckedIOException(
              "cannot create a directory for the file store: "
                  + e.getMessage()
                  + "; give one with --l3-dir",
              e);
        }
      }
      if (dir != null) {
        builder.set("file.directory", dir.toString());
      }
    }
    if (l3Mib != null) {
      if (l3Mib < 1 || l3Mib > Long.MAX_VALUE >> 20) {
        throw new IllegalArgumentException("--l3-mib=" + l3Mib + " must be at least 1");
      }
      builder.set(KvTierKeys.L3_BYTES, Long.toString(l3Mib << 20));
    }
    if (l3Policy != null) {
      builder.set(KvTierKeys.L3_PREFETCH_POLICY, l3Policy);
    }
    if (l3Threshold != null) {
      builder.set(KvTierKeys.L3_PREFETCH_THRESHOLD, Integer.toString(l3Threshold));
    }
  }

  private static String l3Description(KvTierConfig kvtier, ModelEngine engine) {
    if (!engine.stats().hasL3()) {
      return "none";
    }
    return kvtier.providers().get(ProviderKind.STORE)
        + ", "
        + (kvtier.l3().capacityBytes() >> 20)
        + " MiB, "
        + kvtier.l3().prefetchPolicy().configName()
        + " prefetch of "
        + kvtier.l3().prefetchThreshold()
        + "+ tokens";
  }

  /** A source that sets a key the model fixes to another value is a mistake: say so. */
  private static void checkFixed(Properties source, Map<String, String> fixed, String origin) {
    fixed.forEach(
        (key, value) -> {
          String set = source.getProperty(key);
          if (set != null && !set.strip().equals(value)) {
            throw new IllegalArgumentException(
                key
                    + "="
                    + set.strip()
                    + " in "
                    + origin
                    + " does not fit the tiny transformer, which needs "
                    + key
                    + "="
                    + value
                    + ": remove the key");
          }
        });
  }

  private static Properties fileProperties(Path file) {
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      properties.load(reader);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
    }
    return properties;
  }
}
