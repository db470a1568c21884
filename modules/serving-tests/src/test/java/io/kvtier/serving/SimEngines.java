package io.kvtier.serving;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.spi.BackendMetrics;
import java.util.Map;

/** Configurations of the simulated backend for the model's tests: small pools, named policies. */
final class SimEngines {
  private SimEngines() {}

  /**
   * A config of sim pools for a model.
   *
   * @param model the model, whose layout the pools get
   * @param pageSize tokens per page
   * @param deviceTokens device pool size in tokens (rounded down to pages)
   * @param hostRatio host pages per device page
   * @param write the write policy
   * @param eviction the eviction policy
   * @param sim extra {@code sim.*} properties
   * @return the config
   */
  static KvTierConfig config(
      ModelConfig model,
      int pageSize,
      int deviceTokens,
      int hostRatio,
      WritePolicy write,
      EvictionPolicy eviction,
      Map<String, String> sim) {
    int devicePages = deviceTokens / pageSize;
    KvTierConfigBuilder builder =
        KvTierConfig.builder()
            .device("sim")
            .host("sim")
            .layout(model.layers(), model.heads(), model.headDim(), Float.BYTES, pageSize)
            .devicePages(devicePages)
            .hostPages(devicePages * hostRatio)
            .writePolicy(write)
            .evictionPolicy(eviction)
            .vocabSize(model.vocabSize());
    sim.forEach(builder::set);
    return builder.build();
  }

  static ModelEngine open(TinyTransformer model, KvTierConfig config) {
    return ModelEngine.open(model, config, BackendMetrics.NOOP);
  }

  /**
   * The {@code kvtier.*} and provider keys of an L3 tier for the tests: a store, a prefetch
   * policy, and a prefetch threshold of one page, so that every L3 hit the tests' short prefixes
   * have is worth fetching.
   *
   * @param store {@code memory} or {@code file}
   * @param directory the file store's directory (ignored for {@code memory})
   * @param policy the prefetch policy
   * @param pageSize tokens per page
   * @return the keys to set
   */
  static Map<String, String> l3(
      String store, java.nio.file.Path directory, L3PrefetchPolicy policy, int pageSize) {
    Map<String, String> keys = new java.util.LinkedHashMap<>();
    keys.put(KvTierKeys.STORE, store);
    keys.put(KvTierKeys.L3_PREFETCH_POLICY, policy.configName());
    keys.put(KvTierKeys.L3_PREFETCH_THRESHOLD, Integer.toString(pageSize));
    keys.put(KvTierKeys.L3_MODEL_ID, "tiny-transformer");
    if (store.equals("file")) {
      keys.put("file.directory", directory.toString());
    }
    return keys;
  }
}
