package io.kvtier.model.llama;

import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierConfigBuilder;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.Parallelism;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.spi.KvLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;

/**
 * The engine configurations the served-model tests run a model on, tier by tier, and their
 * random prompts: one place for {@link ServedExactnessTest} and {@link SpeculativeServedTest}.
 */
final class ServedTiers {
  private ServedTiers() {}

  /**
   * One rank's simulated device and host pools of {@code pages} pages each, laid out as {@code
   * layout} (a rank's share: {@link LlamaServingModel#rankLayout}), for a runner or store driven
   * directly rather than by an engine.
   */
  static KvTierConfig pools(KvLayout layout, int pages, int vocabulary) {
    return KvTierConfig.builder()
        .device("sim")
        .host("sim")
        .layout(
            layout.layers(),
            layout.kvHeads(),
            layout.headDim(),
            layout.dtypeBytes(),
            layout.pageSize())
        .devicePages(pages)
        .hostPages(pages)
        .vocabSize(vocabulary)
        .build();
  }

  /**
   * Simulated pools on the local collective, write-through and LRU, the model's KV blocks (its
   * layers, and a draft layer's block where it has one) in pages of {@code pageSize}.
   */
  static KvTierConfigBuilder builder(
      LlamaServingModel model,
      int ranks,
      Parallelism parallel,
      int pageSize,
      int devicePages,
      int host) {
    return KvTierConfig.builder()
        .parallelism(parallel)
        .device("sim")
        .host("sim")
        .collective("local")
        .ranks(ranks)
        .layout(
            model.kvBlocks(), model.kvHeads(), model.headSize(), model.kvType().bytes(), pageSize)
        .devicePages(devicePages)
        .hostPages(host)
        .writePolicy(WritePolicy.WRITE_THROUGH)
        .evictionPolicy(EvictionPolicy.LRU)
        .vocabSize(model.vocabularySize())
        .collectiveTimeout(Duration.ofSeconds(60));
  }

  /**
   * The {@code host} tier (about a fifth of the working set on the device, all of it in the
   * host), or an L3 store named {@code tier} ({@code memory}, or {@code file} in {@code store})
   * behind a host tier only a quarter larger than the device pool, so that chats fall out of it
   * and come back from the store under {@code l3ModelId}.
   */
  static KvTierConfig evicting(
      LlamaServingModel model,
      int ranks,
      Parallelism parallel,
      String tier,
      Path store,
      String l3ModelId) {
    if (tier.equals("host")) {
      return builder(model, ranks, parallel, 8, 24, 160).build();
    }
    KvTierConfigBuilder b = builder(model, ranks, parallel, 4, 40, 50);
    b.set(KvTierKeys.STORE, tier);
    b.set(KvTierKeys.L3_PREFETCH_POLICY, L3PrefetchPolicy.WAIT_COMPLETE.configName());
    b.set(KvTierKeys.L3_PREFETCH_THRESHOLD, "4");
    b.set(KvTierKeys.L3_MODEL_ID, l3ModelId);
    if (tier.equals("file")) {
      b.set("file.directory", store.toString());
    }
    return b.build();
  }

  /** {@code n} token ids drawn below {@code vocabulary}. */
  static int[] tokens(Random random, int n, int vocabulary) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = random.nextInt(vocabulary);
    }
    return t;
  }

  /** {@code a} then {@code b}. */
  static int[] concat(int[] a, int[] b) {
    int[] c = new int[a.length + b.length];
    System.arraycopy(a, 0, c, 0, a.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}
