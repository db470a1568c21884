package io.kvtier.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.kvtier.core.config.KvTierConfig;
import io.kvtier.core.discovery.ProviderNotFoundException;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class KvTierBackendsTest {

  private static KvTierConfig recording() {
    return KvTierConfig.builder()
        .device("rec")
        .host("rec")
        .collective("rec")
        .ranks(3)
        .devicePages(4)
        .hostPages(8)
        .set("rec.speed", "fast")
        .set("recfamily.pinned", "no")
        .build();
  }

  @Test
  void opensThePoolsWithTheirNamespacesPropertiesAndClosesInReverse() {
    RecordingBackends fake = new RecordingBackends();
    TimeSource time = () -> 42;

    KvTierBackends backends =
        KvTierBackends.open(recording(), fake.registries(), 2, time, BackendMetrics.NOOP);

    assertThat(backends.rank()).isEqualTo(2);
    assertThat(backends.device().spec()).isEqualTo(recording().devicePool());
    assertThat(backends.host().spec()).isEqualTo(recording().hostPool());
    assertThat(backends.providers().store()).isEmpty();
    BackendContext device = fake.contexts.get(0);
    BackendContext host = fake.contexts.get(1);
    assertThat(device.rank()).isEqualTo(2);
    assertThat(device.time()).isSameAs(time);
    assertThat(device.properties()).containsExactly(entry("rec.speed", "fast"));
    assertThat(host.properties()).containsExactly(entry("recfamily.pinned", "no"));

    backends.close();
    backends.close();

    assertThat(fake.events)
        .containsExactly(
            "open device",
            "open host",
            "open transfers",
            "close transfers",
            "close host",
            "close device");
  }

  @Test
  void opensTheConfiguredL3StoreAndClosesItFirst() {
    RecordingBackends fake = new RecordingBackends();
    KvTierConfig config =
        KvTierConfig.builder()
            .device("rec")
            .host("rec")
            .collective("rec")
            .store("rec")
            .ranks(2)
            .devicePages(4)
            .hostPages(8)
            .set("kvtier.l3-model-id", "llama 3/8b")
            .set("kvtier.l3-bytes", "1MiB")
            .build();

    KvTierBackends backends =
        KvTierBackends.open(config, fake.registries(), 1, () -> 7, BackendMetrics.NOOP);

    assertThat(backends.store()).isPresent();
    assertThat(fake.storeSpec.namespace()).isEqualTo("llama_3_8b");
    assertThat(fake.storeSpec.capacityBytes()).isEqualTo(1L << 20);
    assertThat(fake.storeSpec.layout()).isEqualTo(config.layout());
    io.kvtier.core.cache.L3Executor executor = io.kvtier.core.cache.L3Executor.inline();
    io.kvtier.core.cache.L3Setup setup = backends.l3Setup(executor).orElseThrow();
    assertThat(setup.rank()).isEqualTo(1);
    assertThat(setup.worldSize()).isEqualTo(2);
    assertThat(setup.time().nanoTime()).isEqualTo(7);
    assertThat(setup.config()).isEqualTo(config.l3());
    backends.close();
    assertThat(fake.events)
        .containsExactly(
            "open device",
            "open host",
            "open transfers",
            "open store",
            "close store",
            "close transfers",
            "close host",
            "close device");
    assertThat(
            KvTierBackends.open(recording(), fake.registries(), 0, () -> 7, BackendMetrics.NOOP)
                .l3Setup(executor))
        .isEmpty();
  }

  @Test
  void aFailedOpenClosesWhatItOpened() {
    RecordingBackends fake = new RecordingBackends();
    fake.failHostOpen = true;

    assertThatThrownBy(
            () ->
                KvTierBackends.open(
                    recording(), fake.registries(), 0, TimeSource.SYSTEM, BackendMetrics.NOOP))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("host open failed (fake)");
    assertThat(fake.events).containsExactly("open device", "close device");
  }

  @Test
  void aBackendPropertyThatNoProviderReadsIsAnError() {
    KvTierConfig config =
        KvTierConfig.builder()
            .device("rec")
            .host("rec")
            .collective("rec")
            .set("cuda.device-id", "0")
            .build();

    assertThatThrownBy(
            () ->
                KvTierBackends.open(
                    config,
                    new RecordingBackends().registries(),
                    0,
                    TimeSource.SYSTEM,
                    BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backend property 'cuda.device-id'")
        .hasMessageContaining("namespace 'cuda'")
        .hasMessageContaining("namespaces found: rec, recfamily");
  }

  @Test
  void aRankOutsideTheGroupIsRejected() {
    assertThatThrownBy(
            () ->
                KvTierBackends.open(
                    recording(),
                    new RecordingBackends().registries(),
                    3,
                    TimeSource.SYSTEM,
                    BackendMetrics.NOOP))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("rank=3 is outside the group of kvtier.ranks=3");
  }

  @Test
  void opensTheSimulatedBackendFromTheModulePath() {
    KvTierConfig config =
        KvTierConfig.builder().devicePages(4).hostPages(8).set("sim.seed", "5").build();

    try (KvTierBackends backends = KvTierBackends.open(config);
        Arena arena = Arena.ofConfined()) {
      assertThat(backends.providers().device().name()).isEqualTo("sim");
      assertThat(backends.providers().host().name()).isEqualTo("sim");
      assertThat(backends.providers().collective().name()).isEqualTo("local");
      assertThat(backends.device().spec()).isEqualTo(config.devicePool());
      assertThat(backends.host().spec()).isEqualTo(config.hostPool());

      MemorySegment block = arena.allocate(config.layout().pageBytesPerLayer());
      block.fill((byte) 7);
      backends.device().write(3, 1, 0, block);
      MemorySegment back = arena.allocate(block.byteSize());
      backends.device().read(3, 1, 0, back);
      assertThat(back.get(ValueLayout.JAVA_BYTE, back.byteSize() - 1)).isEqualTo((byte) 7);
    }
  }

  @Test
  void aMissingBackendFailsAtOpenWithTheFix() {
    KvTierConfig config = KvTierConfig.builder().device("cuda").build();

    assertThatThrownBy(() -> KvTierBackends.open(config))
        .isInstanceOf(ProviderNotFoundException.class)
        .hasMessageContaining("kvtier.device=cuda")
        .hasMessageContaining("kvtier-backend-cuda");
  }
}
