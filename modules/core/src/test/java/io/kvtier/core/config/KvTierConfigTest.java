package io.kvtier.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.kvtier.core.discovery.ProviderKind;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KvTierConfigTest {

  /** Bytes of one page of the default layout: 2 x 2 heads x 64 x 2 bytes x 16 tokens x 4. */
  private static final long DEFAULT_PAGE_BYTES = 32_768;

  @Test
  void theKeyListIsPinned() {
    assertThat(KvTierKeys.ALL)
        .containsExactly(
            "kvtier.device",
            "kvtier.host",
            "kvtier.collective",
            "kvtier.store",
            "kvtier.layers",
            "kvtier.kv-heads",
            "kvtier.head-dim",
            "kvtier.dtype-bytes",
            "kvtier.page-size",
            "kvtier.device-pages",
            "kvtier.device-bytes",
            "kvtier.host-pages",
            "kvtier.host-ratio",
            "kvtier.host-bytes",
            "kvtier.memory-layout",
            "kvtier.write-policy",
            "kvtier.write-through-threshold",
            "kvtier.eviction-policy",
            "kvtier.load-back-threshold",
            "kvtier.vocab-size",
            "kvtier.snapshot-slots",
            "kvtier.snapshot-interval-pages",
            "kvtier.ranks",
            "kvtier.parallel",
            "kvtier.cp-interleave",
            "kvtier.digest-interval",
            "kvtier.collective-timeout",
            "kvtier.l3-bytes",
            "kvtier.l3-backup-threshold",
            "kvtier.l3-prefetch-threshold",
            "kvtier.l3-prefetch-policy",
            "kvtier.l3-timeout-base",
            "kvtier.l3-timeout-per-ki-token",
            "kvtier.l3-timeout-cap",
            "kvtier.l3-model-id",
            "kvtier.l3-replicated-kv");
  }

  @Test
  void theDefaultsArePinned() {
    KvTierConfig config = KvTierConfig.defaults();

    assertThat(config.toProperties())
        .containsExactly(
            entry("kvtier.device", "auto"),
            entry("kvtier.host", "auto"),
            entry("kvtier.collective", "local"),
            entry("kvtier.store", "none"),
            entry("kvtier.layers", "4"),
            entry("kvtier.kv-heads", "2"),
            entry("kvtier.head-dim", "64"),
            entry("kvtier.dtype-bytes", "2"),
            entry("kvtier.page-size", "16"),
            entry("kvtier.device-pages", "1024"),
            entry("kvtier.host-pages", "2048"),
            entry("kvtier.memory-layout", "layer_first"),
            entry("kvtier.write-policy", "write_through"),
            entry("kvtier.write-through-threshold", "2"),
            entry("kvtier.eviction-policy", "lru"),
            entry("kvtier.load-back-threshold", "1"),
            entry("kvtier.vocab-size", Integer.toString(Integer.MAX_VALUE)),
            entry("kvtier.snapshot-slots", "0"),
            entry("kvtier.snapshot-interval-pages", "8"),
            entry("kvtier.ranks", "1"),
            entry("kvtier.parallel", "tp"),
            entry("kvtier.cp-interleave", "1"),
            entry("kvtier.digest-interval", "64"),
            entry("kvtier.collective-timeout", "30s"),
            entry("kvtier.l3-bytes", Long.toString(1L << 30)),
            entry("kvtier.l3-backup-threshold", "1"),
            entry("kvtier.l3-prefetch-threshold", "256"),
            entry("kvtier.l3-prefetch-policy", "timeout"),
            entry("kvtier.l3-timeout-base", "1s"),
            entry("kvtier.l3-timeout-per-ki-token", "250ms"),
            entry("kvtier.l3-timeout-cap", "10s"),
            entry("kvtier.l3-model-id", "default"),
            entry("kvtier.l3-replicated-kv", "false"));
    assertThat(config.l3()).isEqualTo(L3Config.DEFAULTS);
    assertThat(config.layout()).isEqualTo(new KvLayout(4, 2, 64, 2, 16));
    assertThat(config.layout().pageBytes()).isEqualTo(DEFAULT_PAGE_BYTES);
    assertThat(config.cache()).isEqualTo(CacheConfig.of(16, 1024, 2048));
    assertThat(config.collectiveTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.backendProperties()).isEmpty();
    assertThat(config.autoOrder(ProviderKind.DEVICE)).containsExactly("cuda", "sim");
    assertThat(config.autoOrder(ProviderKind.HOST)).containsExactly("cuda", "sim");
    assertThat(config.autoOrder(ProviderKind.COLLECTIVE))
        .containsExactly("mpi", "hazelcast", "local");
    assertThat(config.autoOrder(ProviderKind.STORE)).isEmpty();
    assertThat(KvTierConfig.DEFAULT_HOST_RATIO).isEqualTo(2.0);
    assertThat(KvTierConfig.DEFAULT_MEMORY_LAYOUT).isEqualTo(MemoryLayout.LAYER_FIRST);
  }

  @Test
  void derivesThePoolSpecsAndTheCacheConfig() {
    KvTierConfig config =
        KvTierConfig.builder()
            .layout(2, 8, 128, 2, 64)
            .devicePages(10)
            .hostPages(30)
            .memoryLayout(MemoryLayout.PAGE_FIRST)
            .writePolicy(WritePolicy.WRITE_BACK)
            .evictionPolicy(EvictionPolicy.SLRU)
            .writeThroughThreshold(3)
            .loadBackThreshold(4)
            .vocabSize(32_000)
            .build();

    KvLayout layout = new KvLayout(2, 8, 128, 2, 64);
    assertThat(config.devicePool()).isEqualTo(new PoolSpec(layout, 10, MemoryLayout.PAGE_FIRST));
    assertThat(config.hostPool()).isEqualTo(new PoolSpec(layout, 30, MemoryLayout.PAGE_FIRST));
    assertThat(config.cache())
        .isEqualTo(
            new CacheConfig(64, 10, 30, WritePolicy.WRITE_BACK, 3, EvictionPolicy.SLRU, 4, 32_000));
  }

  @Test
  void readsAPropertiesFileWithUnitsAndBackendProperties(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("kvtier.properties");
    Files.writeString(
        file,
        """
        # a comment
        kvtier.device = sim
        kvtier.device-bytes = 64MiB
        kvtier.host-bytes = 1GiB
        kvtier.write-policy = write-through-selective
        kvtier.eviction-policy = LFU
        kvtier.collective-timeout = 500ms
        kvtier.digest-interval = 8
        kvtier.ranks = 4
        sim.seed = 7
        sim.jitter = 0.5
        cuda.device-id = 1
        """);

    KvTierConfig config = KvTierConfig.builder().propertiesFile(file).build();

    assertThat(config.provider(ProviderKind.DEVICE)).isEqualTo("sim");
    assertThat(config.cache().devicePages()).isEqualTo((64 << 20) / DEFAULT_PAGE_BYTES);
    assertThat(config.cache().hostPages()).isEqualTo((1L << 30) / DEFAULT_PAGE_BYTES);
    assertThat(config.cache().writePolicy()).isEqualTo(WritePolicy.WRITE_THROUGH_SELECTIVE);
    assertThat(config.cache().evictionPolicy()).isEqualTo(EvictionPolicy.LFU);
    assertThat(config.collectiveTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(config.digestInterval()).isEqualTo(8);
    assertThat(config.ranks()).isEqualTo(4);
    assertThat(config.backendProperties())
        .containsExactly(
            entry("cuda.device-id", "1"), entry("sim.jitter", "0.5"), entry("sim.seed", "7"));
    assertThat(config.propertiesFor("sim"))
        .containsExactly(entry("sim.jitter", "0.5"), entry("sim.seed", "7"));
    assertThat(config.propertiesFor("si")).isEmpty();
  }

  @Test
  void aMissingFileIsNamed(@TempDir Path dir) {
    Path missing = dir.resolve("nope.properties");
    assertThatThrownBy(() -> KvTierConfig.builder().propertiesFile(missing))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(missing.toString())
        .hasMessageContaining("does not exist");
  }

  @Test
  void precedenceIsDefaultsThenFileThenSystemThenExplicitWhateverTheCallOrder() {
    Properties system = new Properties();
    system.setProperty("kvtier.page-size", "32");
    system.setProperty("kvtier.layers", "8");
    system.setProperty("java.home", "/not/config");
    system.setProperty("sim.seed", "3");

    KvTierConfig config =
        KvTierConfig.builder()
            .set("kvtier.layers", "2")
            .systemProperties(system)
            .properties(
                Map.of("kvtier.page-size", "64", "kvtier.head-dim", "32", "kvtier.layers", "16"))
            .build();

    assertThat(config.layout().layers()).as("explicit beats system and file").isEqualTo(2);
    assertThat(config.layout().pageSize()).as("system beats file").isEqualTo(32);
    assertThat(config.layout().headDim()).as("file beats default").isEqualTo(32);
    assertThat(config.layout().kvHeads()).as("default").isEqualTo(2);
    assertThat(config.backendProperties())
        .as("system properties carry kvtier.* keys only")
        .isEmpty();
  }

  @Test
  void anAlternativeKeyOfAHigherSourceReplacesTheLowerOnesGroup() {
    KvTierConfig config =
        KvTierConfig.builder()
            .properties(Map.of("kvtier.device-bytes", "64MiB", "kvtier.host-pages", "5000"))
            .devicePages(100)
            .hostRatio(1.5)
            .build();

    assertThat(config.cache().devicePages()).isEqualTo(100);
    assertThat(config.cache().hostPages()).isEqualTo(150);
  }

  @Test
  void theHostRatioRoundsDown() {
    KvTierConfig config = KvTierConfig.builder().devicePages(7).hostRatio(1.5).build();
    assertThat(config.cache().hostPages()).isEqualTo(10);
  }

  @Test
  void twoAlternativesInOneSourceConflict() {
    assertThatThrownBy(() -> KvTierConfig.builder().devicePages(10).deviceBytes(1 << 20).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.device-pages=10 and kvtier.device-bytes=1048576")
        .hasMessageContaining("set only one of kvtier.device-pages, kvtier.device-bytes");
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .properties(Map.of("kvtier.host-ratio", "3", "kvtier.host-bytes", "1GiB"))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.host-ratio=3")
        .hasMessageContaining("kvtier.host-bytes=1GiB")
        .hasMessageContaining("in properties");
  }

  @Test
  void anUnknownEngineKeyIsNamedWithTheClosestKnownKey() {
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.page-sise", "16"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'kvtier.page-sise'")
        .hasMessageContaining("did you mean kvtier.page-size?");
    Properties system = new Properties();
    system.setProperty("kvtier.colective", "local");
    assertThatThrownBy(() -> KvTierConfig.builder().systemProperties(system))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("in system properties")
        .hasMessageContaining("did you mean kvtier.collective?");
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.zzzzzzzzzzzzzzzz", "1"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("did you mean");
  }

  @Test
  void theTestHarnessKeysInSystemPropertiesAreNotEngineConfiguration() {
    Properties system = new Properties();
    system.setProperty("kvtier.tests.seed", "42");
    system.setProperty("kvtier.tests.multiplier", "3");
    system.setProperty("kvtier.page-size", "32");
    KvTierConfig config = KvTierConfig.builder().systemProperties(system).build();
    assertThat(config.cache().pageSize()).isEqualTo(32);
    // Only through system properties: set explicitly, the key is still unknown.
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.tests.seed", "42"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'kvtier.tests.seed'");
  }

  @Test
  void aKeyWithoutNamespaceIsRejected() {
    assertThatThrownBy(() -> KvTierConfig.builder().properties(Map.of("seed", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("key 'seed'")
        .hasMessageContaining("has no namespace");
  }

  @Test
  void aBytesSizeMustBeAWholeNumberOfPages() {
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.device-bytes", "100MB").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.device-bytes=100MB (100000000 bytes)")
        .hasMessageContaining("not a multiple of the page size of 32768 bytes")
        .hasMessageContaining("99975168 or 100007936");
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.host-bytes", "16KiB").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("less than one page of 32768 bytes: set at least 32KiB");
  }

  @Test
  void aLayoutOrPoolThatOverflowsALongIsRejected() {
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .layout(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, 8, 16)
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.layers=" + Integer.MAX_VALUE)
        .hasMessageContaining("more bytes than a long holds");
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .layout(1 << 16, 1 << 10, 1 << 10, 8, 1 << 8)
                    .devicePages(Integer.MAX_VALUE)
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.device-pages gives 2147483647 pages");
  }

  @Test
  void badValuesNameTheKeyAndTheValue() {
    Map<String, String> expectations =
        Map.ofEntries(
            Map.entry("kvtier.layers=0", "kvtier.layers=0 must be >= 1"),
            Map.entry("kvtier.kv-heads=-2", "kvtier.kv-heads=-2 must be >= 1"),
            Map.entry("kvtier.head-dim=x", "kvtier.head-dim='x' is not a whole number"),
            Map.entry("kvtier.dtype-bytes=9", "kvtier.dtype-bytes=9 must be between 1 and 8"),
            Map.entry("kvtier.page-size=", "kvtier.page-size='' is not a whole number"),
            Map.entry("kvtier.device-pages=0", "kvtier.device-pages=0 must be >= 1"),
            Map.entry("kvtier.device-bytes=-1", "kvtier.device-bytes='-1' is not a size"),
            Map.entry("kvtier.host-pages=0", "kvtier.host-pages=0 must be >= 1"),
            Map.entry("kvtier.host-ratio=1", "kvtier.host-ratio=1 must be a finite number above 1"),
            Map.entry("kvtier.host-ratio=0.5", "kvtier.host-ratio=0.5 must be a finite number"),
            Map.entry("kvtier.host-ratio=NaN", "kvtier.host-ratio=NaN must be a finite number"),
            Map.entry("kvtier.host-ratio=two", "kvtier.host-ratio='two' is not a number"),
            Map.entry("kvtier.host-bytes=12XB", "kvtier.host-bytes='12XB' is not a size"),
            Map.entry(
                "kvtier.memory-layout=diagonal",
                "kvtier.memory-layout: unknown memory layout 'diagonal': use one of layer_first,"
                    + " page_first"),
            Map.entry(
                "kvtier.write-policy=often", "kvtier.write-policy: unknown write policy 'often'"),
            Map.entry(
                "kvtier.eviction-policy=random",
                "kvtier.eviction-policy: unknown eviction policy 'random'"),
            Map.entry(
                "kvtier.write-through-threshold=0",
                "kvtier.write-through-threshold=0 must be >= 1"),
            Map.entry("kvtier.load-back-threshold=0", "kvtier.load-back-threshold=0 must be >= 1"),
            Map.entry("kvtier.vocab-size=0", "kvtier.vocab-size=0 must be >= 1"),
            Map.entry("kvtier.ranks=0", "kvtier.ranks=0 must be >= 1"),
            Map.entry("kvtier.snapshot-slots=-1", "kvtier.snapshot-slots=-1 must be >= 0"),
            Map.entry(
                "kvtier.snapshot-slots=1024", "snapshotSlots=1024 must be below devicePages=1024"),
            Map.entry(
                "kvtier.snapshot-interval-pages=0",
                "kvtier.snapshot-interval-pages=0 must be >= 1"),
            Map.entry("kvtier.digest-interval=-1", "kvtier.digest-interval=-1 must be >= 0"),
            Map.entry("kvtier.collective-timeout=30", "kvtier.collective-timeout='30' has no unit"),
            Map.entry(
                "kvtier.collective-timeout=0s",
                "kvtier.collective-timeout=0s must be" + " positive"),
            Map.entry(
                "kvtier.collective-timeout=5 fortnights",
                "kvtier.collective-timeout='5 fortnights' has an unknown unit"),
            Map.entry("kvtier.device=Sim!", "kvtier.device='Sim!' is not a provider name"),
            Map.entry("kvtier.host=none", "kvtier.host='none' is not a provider name"));

    expectations.forEach(
        (setting, message) -> {
          String key = setting.substring(0, setting.indexOf('='));
          String value = setting.substring(setting.indexOf('=') + 1);
          assertThatThrownBy(() -> KvTierConfig.builder().set(key, value).build())
              .as(setting)
              .isInstanceOf(IllegalArgumentException.class)
              .hasMessageContaining(message);
        });
  }

  @Test
  void theSnapshotKeysReachTheCacheConfigAndRoundTrip() {
    KvTierConfig config =
        KvTierConfig.builder().snapshotSlots(1).snapshotIntervalPages(4).devicePages(64).build();

    assertThat(config.cache().snapshotSlots()).isEqualTo(1);
    assertThat(config.cache().snapshotIntervalPages()).isEqualTo(4);
    assertThat(config.cache())
        .isEqualTo(CacheConfig.of(16, 64, 128).withSnapshots(1, 4))
        .isNotEqualTo(CacheConfig.of(16, 64, 128));
    assertThat(config.toProperties())
        .containsEntry("kvtier.snapshot-slots", "1")
        .containsEntry("kvtier.snapshot-interval-pages", "4");
    assertThat(KvTierConfig.builder().properties(config.toProperties()).build().cache())
        .isEqualTo(config.cache());
  }

  @Test
  void theStoreMayBeNoneOrAuto() {
    assertThat(KvTierConfig.builder().store("auto").build().provider(ProviderKind.STORE))
        .isEqualTo("auto");
    assertThat(KvTierConfig.builder().store("memory").build().provider(ProviderKind.STORE))
        .isEqualTo("memory");
  }

  @Test
  void aValueErrorSaysWhichSourceItCameFrom() {
    Properties system = new Properties();
    system.setProperty("kvtier.page-size", "many");
    assertThatThrownBy(() -> KvTierConfig.builder().systemProperties(system).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.page-size='many'")
        .hasMessageContaining("[from system properties]");
  }

  @Test
  void autoOrdersAreConfigurable() {
    KvTierConfig config =
        KvTierConfig.builder().autoOrder(ProviderKind.DEVICE, List.of("sim")).build();
    assertThat(config.autoOrder(ProviderKind.DEVICE)).containsExactly("sim");
    assertThat(config.autoOrder(ProviderKind.HOST)).containsExactly("cuda", "sim");
  }

  @Test
  void parsesTheL3KeysAndRoundTripsThem() {
    KvTierConfig config =
        KvTierConfig.builder()
            .set("kvtier.l3-bytes", "64MiB")
            .set("kvtier.l3-backup-threshold", "0")
            .set("kvtier.l3-prefetch-threshold", "64")
            .set("kvtier.l3-prefetch-policy", "wait-complete")
            .set("kvtier.l3-timeout-base", "200ms")
            .set("kvtier.l3-timeout-per-ki-token", "50ms")
            .set("kvtier.l3-timeout-cap", "2s")
            .set("kvtier.l3-model-id", "tiny-7b")
            .set("kvtier.l3-replicated-kv", "true")
            .build();

    assertThat(config.l3())
        .isEqualTo(
            new L3Config(
                64L << 20,
                0,
                64,
                L3PrefetchPolicy.WAIT_COMPLETE,
                Duration.ofMillis(200),
                Duration.ofMillis(50),
                Duration.ofSeconds(2),
                "tiny-7b",
                true));
    assertThat(KvTierConfig.builder().properties(config.toProperties()).build()).isEqualTo(config);
  }

  @Test
  void rejectsBadL3Values() {
    assertThatThrownBy(
            () -> KvTierConfig.builder().set("kvtier.l3-prefetch-policy", "eager").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown L3 prefetch policy 'eager'")
        .hasMessageContaining("best_effort, wait_complete, timeout");
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .set("kvtier.l3-timeout-base", "5s")
                    .set("kvtier.l3-timeout-cap", "1s")
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.l3-timeout-cap=1s is below kvtier.l3-timeout-base=5s");
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.l3-replicated-kv", "yes").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.l3-replicated-kv='yes' is not true or false");
    assertThatThrownBy(() -> KvTierConfig.builder().set("kvtier.l3-prefetch-treshold", "1").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("did you mean kvtier.l3-prefetch-threshold?");
  }

  @Test
  void theL3TimeoutGrowsPerKiTokenUpToTheCap() {
    L3Config l3 =
        L3Config.DEFAULTS.withTimeouts(
            Duration.ofMillis(100), Duration.ofMillis(40), Duration.ofMillis(300));
    assertThat(l3.timeoutNanos(0)).isEqualTo(100_000_000L);
    assertThat(l3.timeoutNanos(2048)).isEqualTo(180_000_000L);
    assertThat(l3.timeoutNanos(512)).isEqualTo(120_000_000L);
    assertThat(l3.timeoutNanos(1 << 20)).isEqualTo(300_000_000L);
  }

  @Test
  void eventPublisherKeysPassThroughWithTheProvidersKeys() {
    Properties system = new Properties();
    system.setProperty("kvtier.events.topic", "kv");
    KvTierConfig config =
        KvTierConfig.builder()
            .properties(Map.of("kvtier.events.publisher", "zmq", "sim.seed", "3"))
            .systemProperties(system)
            .build();
    assertThat(config.propertiesFor("kvtier"))
        .containsExactly(
            entry("kvtier.events.publisher", "zmq"), entry("kvtier.events.topic", "kv"));
    assertThat(KvTierKeys.isEngineKey("kvtier.events.publisher")).isFalse();
    assertThatThrownBy(() -> KvTierConfig.builder().properties(Map.of("kvtier.event.topic", "kv")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("unknown key 'kvtier.event.topic'");
  }

  @Test
  void backendPropertiesMustNotBeEngineKeys() {
    KvTierConfig defaults = KvTierConfig.defaults();
    assertThatThrownBy(
            () ->
                new KvTierConfig(
                    defaults.providers(),
                    defaults.autoOrders(),
                    defaults.layout(),
                    defaults.memoryLayout(),
                    defaults.cache(),
                    1,
                    Parallelism.TP,
                    0,
                    Duration.ofSeconds(1),
                    L3Config.DEFAULTS,
                    Map.of("kvtier.page-size", "1")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backend property 'kvtier.page-size'");
  }

  @Test
  void parallelismIsReadAndABadValueNamesItsKey() {
    KvTierConfig cp =
        KvTierConfig.builder()
            .properties(Map.of("kvtier.parallel", "cp", "kvtier.cp-interleave", "4"))
            .build();
    assertThat(cp.parallelism()).isEqualTo(Parallelism.cp(4));
    assertThat(KvTierConfig.builder().properties(cp.toProperties()).build().parallelism())
        .isEqualTo(Parallelism.cp(4));
    assertThat(KvTierConfig.defaults().parallelism()).isEqualTo(Parallelism.TP);
    assertThatThrownBy(
            () -> KvTierConfig.builder().properties(Map.of("kvtier.parallel", "dp")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.parallel=dp is neither tp");
    assertThatThrownBy(
            () -> KvTierConfig.builder().properties(Map.of("kvtier.cp-interleave", "2")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.cp-interleave=2 is for --parallel cp");
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .properties(Map.of("kvtier.parallel", "cp", "kvtier.cp-interleave", "0"))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("kvtier.cp-interleave");
    assertThatThrownBy(
            () ->
                KvTierConfig.builder()
                    .properties(Map.of("kvtier.parallel", "cp", "kvtier.l3-replicated-kv", "true"))
                    .build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "kvtier.parallel=cp gives each rank other positions' KV, but"
                + " kvtier.l3-replicated-kv=true says every rank holds the same KV: set one of"
                + " them otherwise");
  }
}
