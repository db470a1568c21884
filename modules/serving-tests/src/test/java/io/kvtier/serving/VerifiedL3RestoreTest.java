package io.kvtier.serving;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvtier.asserting.FaultyKvStore;
import io.kvtier.core.cache.L3Executor;
import io.kvtier.core.config.EvictionPolicy;
import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.config.KvTierKeys;
import io.kvtier.core.config.L3PrefetchPolicy;
import io.kvtier.core.config.WritePolicy;
import io.kvtier.model.tiny.ModelConfig;
import io.kvtier.model.tiny.NoCacheRunner;
import io.kvtier.model.tiny.TinyTransformer;
import io.kvtier.serving.TinyPrompts.Prompt;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DamageableKvStore;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.KvStore;
import io.kvtier.spi.KvStoreStats;
import io.kvtier.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Verified restores, the L3 half (docs/CACHE.md, issue 31 item 2): bits flipped in pages stored
 * in the {@code memory} and {@code file} stores ({@link FaultyKvStore}'s flips, through the
 * stores' {@link DamageableKvStore} hook) are each caught by the store's own CRC32C, counted as
 * corrupt and answered as a miss; the prefetch ends where the valid pages end and the request
 * computes the rest, so every greedy output equals the uncached model's. A broken variant, a
 * store that keeps the same pages without a checksum, takes flips in the same pages (in the lowest
 * mantissa bit of a float, so that the model runs on) and returns them: the engine's recompute
 * check finds the K/V wrong, which shows that the stores' check is what keeps the outputs right.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class VerifiedL3RestoreTest {
  private static final TinyTransformer MODEL = new TinyTransformer(ModelConfig.DEFAULTS);
  private static final int PAGE = 4;
  private static final double FLIPS = 0.25;
  private static final long SEED = 0x6B76_7469_6572_31L;

  private static List<Prompt> prompts;
  private static List<int[]> expected;

  @BeforeAll
  static void computeTheReference() {
    Random random = new Random(SEED);
    // More groups than the host tier holds, and cold prefixes revisited after more tokens than
    // device and host hold: pages come back from L3 only.
    prompts =
        TinyPrompts.withColdRevisits(
            random,
            TinyPrompts.sharedPrefixes(
                random, 40, 8, 512, new int[] {40, 120}, new int[] {1, 20}, new int[] {1, 6}),
            3,
            64,
            416 + 520 + 64,
            512);
    NoCacheRunner reference = new NoCacheRunner(MODEL);
    expected = new ArrayList<>();
    for (Prompt p : prompts) {
      expected.add(reference.generate(p.tokens(), p.maxTokens()));
    }
  }

  @ParameterizedTest(name = "{0} store")
  @ValueSource(strings = {"memory", "file"})
  void flippedStoredPagesAreCaughtCountedAndRecomputed(String store, @TempDir Path dir)
      throws InterruptedException {
    AtomicReference<FaultyKvStore> faults = new AtomicReference<>();
    Run run =
        run(
            store,
            dir,
            s -> {
              faults.set(new FaultyKvStore(s, SEED, 0, FLIPS));
              return faults.get();
            });

    assertThat(run.wrongOutputs).as("outputs that differ from the uncached model's").isEmpty();
    assertThat(faults.get().flipsInjected()).as("bits flipped in stored pages").isPositive();
    assertThat(run.store.corrupt())
        .as("every flipped page found damaged by the store")
        .isEqualTo(faults.get().flipsInjected());
    assertThat(run.kvMismatches).isZero();
    assertThat(run.pagesMissed).as("pages the damaged fetches did not bring").isPositive();
    assertThat(run.l3HitTokens).as("L3 still served the pages that were whole").isPositive();
  }

  @Test
  void aStoreWithoutTheCheckReturnsTheFlippedPagesAndTheirKvIsWrong(@TempDir Path dir)
      throws InterruptedException {
    KvLayout layout = config("memory", dir).layout();
    AtomicReference<FaultyKvStore> faults = new AtomicReference<>();
    Run run =
        run(
            "memory",
            dir,
            s -> {
              faults.set(new FaultyKvStore(new UncheckedStore(layout), SEED, 0, FLIPS));
              return faults.get();
            });

    assertThat(faults.get().flipsInjected()).isPositive();
    assertThat(run.store.corrupt()).isZero();
    assertThat(run.kvMismatches).as("pages the recompute check found wrong").isPositive();
  }

  private record Run(
      List<Integer> wrongOutputs,
      KvStoreStats store,
      long kvMismatches,
      long pagesMissed,
      long l3HitTokens) {}

  private static KvTierConfig config(String store, Path dir) {
    Map<String, String> keys =
        new HashMap<>(SimEngines.l3(store, dir, L3PrefetchPolicy.WAIT_COMPLETE, PAGE));
    keys.put(KvTierKeys.HOST_PAGES, Integer.toString(416 / PAGE * 5 / 4));
    return SimEngines.config(
        MODEL.config(), PAGE, 416, 1, WritePolicy.WRITE_THROUGH, EvictionPolicy.LRU, keys);
  }

  private static Run run(String store, Path dir, UnaryOperator<KvStore> wrap)
      throws InterruptedException {
    List<Integer> wrong = new ArrayList<>();
    try (ModelEngine engine =
        ModelEngine.open(
            MODEL, config(store, dir), BackendMetrics.NOOP, wrap, L3Executor::inline)) {
      for (int i = 0; i < prompts.size(); i++) {
        Prompt p = prompts.get(i);
        Completion c = engine.generate(p.tokens(), p.maxTokens());
        if (!java.util.Arrays.equals(c.tokens(), expected.get(i))) {
          wrong.add(i);
        }
      }
      engine.drain();
      EngineStats stats = engine.stats();
      KvStoreStats storeStats = stats.storeStats().orElseThrow();
      return new Run(
          wrong,
          storeStats,
          engine.engineStats().kvMismatches(),
          stats.l3Stats().pagesMissed(),
          stats.l3HitTokens());
    }
  }

  /**
   * The broken variant: the pages in a map, without a checksum; a flip changes the bytes a get
   * returns.
   */
  private static final class UncheckedStore implements DamageableKvStore {
    private final KvLayout layout;
    private final Map<PageKey, byte[]> pages = new ConcurrentHashMap<>();
    private long hits;
    private long misses;

    UncheckedStore(KvLayout layout) {
      this.layout = layout;
    }

    @Override
    public boolean flipStoredBit(PageKey key, long bit) {
      byte[] page = pages.get(key);
      if (page == null) {
        return false;
      }
      // The lowest mantissa bit of one float (little-endian): the K/V stays finite, so the model
      // runs on (a flipped exponent bit can make it NaN, which stops the rank group) and only
      // the recompute check can tell.
      page[Float.BYTES * Math.floorMod(bit, page.length / Float.BYTES)] ^= 1;
      return true;
    }

    @Override
    public int existsPrefix(List<PageKey> keys) {
      int n = 0;
      while (n < keys.size() && pages.containsKey(keys.get(n))) {
        n++;
      }
      return n;
    }

    @Override
    public synchronized int get(List<PageKey> keys, HostMemory host, int[] hostPages) {
      long block = layout.pageBytesPerLayer();
      int n = 0;
      while (n < keys.size()) {
        byte[] page = pages.get(keys.get(n));
        if (page == null) {
          break;
        }
        for (int layer = 0; layer < layout.layers(); layer++) {
          MemorySegment.copy(
              MemorySegment.ofArray(page),
              layer * block,
              host.block(hostPages[n], layer),
              0,
              block);
        }
        n++;
      }
      hits += n;
      misses += keys.size() - n;
      return n;
    }

    @Override
    public synchronized int put(List<PageKey> keys, HostMemory host, int[] hostPages) {
      long block = layout.pageBytesPerLayer();
      for (int i = 0; i < keys.size(); i++) {
        byte[] page = new byte[Math.toIntExact(layout.pageBytes())];
        for (int layer = 0; layer < layout.layers(); layer++) {
          MemorySegment.ofArray(page)
              .asSlice(layer * block, block)
              .copyFrom(host.block(hostPages[i], layer).asSlice(0, block));
        }
        pages.putIfAbsent(keys.get(i), page);
      }
      return existsPrefix(keys);
    }

    @Override
    public synchronized KvStoreStats stats() {
      return new KvStoreStats(hits, misses, 0, pages.size(), 0, pages.size() * layout.pageBytes());
    }

    @Override
    public void close() {}
  }
}
