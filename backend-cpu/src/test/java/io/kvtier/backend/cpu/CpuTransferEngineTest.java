package io.kvtier.backend.cpu;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageMemory;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferFailedException;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The {@code cpu} engine's own behaviour beyond the conformance suites: copies run on its copier
 * threads and really move the bytes, the directions do not wait for each other on two threads,
 * close drains what is queued and stops the threads, and the failure paths.
 */
@ExtendWith(SeedExtension.class)
@Timeout(60)
class CpuTransferEngineTest {

  private static final KvLayout LAYOUT = new KvLayout(3, 2, 4, 2, 4);
  private static final int GATED = 0;
  private static final int BROKEN = 1;

  private static BackendContext context(int copyThreads) {
    return new BackendContext(
        0,
        Map.of(CpuConfig.COPY_THREADS, Integer.toString(copyThreads)),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }

  private static CpuDeviceMemory device(BackendContext context) {
    return new CpuDeviceMemoryProvider()
        .open(new PoolSpec(LAYOUT, 8, MemoryLayout.LAYER_FIRST), context);
  }

  private static GatedHostMemory gatedHost(BackendContext context) {
    CpuHostMemory host =
        new CpuHostMemoryProvider().open(new PoolSpec(LAYOUT, 8, MemoryLayout.PAGE_FIRST), context);
    return new GatedHostMemory(host, Set.of(GATED), Set.of(BROKEN));
  }

  @Test
  void aCopyRunsOnACopierThreadAndMovesTheBytes(Random random) throws Exception {
    BackendContext context = context(2);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context)) {
      CpuTransferEngine engine = device.transferEngine(host);
      byte[][] original = fill(device, 3, random);
      TransferHandle out = engine.submit(single(DEVICE_TO_HOST, 3, GATED));
      host.awaitCopyAtGate();
      // submit returned while the copy is held inside it: the copy is not on this thread.
      assertThat(out.isDone()).isFalse();
      assertThat(out.failure()).isEmpty();
      assertThat(engine.inFlight()).isEqualTo(1);
      host.open();
      out.await();
      assertThat(engine.inFlight()).isZero();
      for (int layer = 0; layer < LAYOUT.layers(); layer++) {
        assertThat(read(host, GATED, layer)).as("host layer %d", layer).isEqualTo(original[layer]);
      }
      engine.submit(single(HOST_TO_DEVICE, 6, GATED)).await();
      for (int layer = 0; layer < LAYOUT.layers(); layer++) {
        assertThat(read(device, 6, layer)).as("device layer %d", layer).isEqualTo(original[layer]);
      }
      assertThat(host.copiers())
          .isNotEmpty()
          .allSatisfy(t -> assertThat(t.getName()).startsWith("kvtier-cpu-copy-r0-"))
          .doesNotContain(Thread.currentThread());
      engine.close();
    }
  }

  @Test
  void onTwoThreadsALoadBackDoesNotWaitForAHeldBackup(Random random) throws Exception {
    BackendContext context = context(2);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context);
        CpuTransferEngine engine = device.transferEngine(host)) {
      byte[][] original = fill(device, 2, random);
      TransferHandle backup = engine.submit(single(DEVICE_TO_HOST, 2, GATED));
      host.awaitCopyAtGate();
      byte[] loaded = new byte[Math.toIntExact(LAYOUT.pageBytesPerLayer())];
      random.nextBytes(loaded);
      host.write(5, 1, 0, MemorySegment.ofArray(loaded));
      TransferHandle load =
          engine.submit(TransferBatch.oneLayer(HOST_TO_DEVICE, new int[] {4}, new int[] {5}, 1));
      load.await();
      assertThat(backup.isDone()).as("the backup held at the gate").isFalse();
      assertThat(read(device, 4, 1)).isEqualTo(loaded);
      host.open();
      backup.await();
      assertThat(read(host, GATED, 0)).isEqualTo(original[0]);
    }
  }

  @Test
  void onOneThreadTheDirectionsTakeTurns(Random random) throws Exception {
    BackendContext context = context(1);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context);
        CpuTransferEngine engine = device.transferEngine(host)) {
      byte[][] original = fill(device, 2, random);
      TransferHandle backup = engine.submit(single(DEVICE_TO_HOST, 2, GATED));
      host.awaitCopyAtGate();
      TransferHandle load = engine.submit(single(HOST_TO_DEVICE, 4, 5));
      // The only copier thread is held in the backup's copy.
      assertThat(load.await(Duration.ofMillis(20))).isFalse();
      host.open();
      load.await();
      backup.await();
      assertThat(read(host, GATED, 2)).isEqualTo(original[2]);
      assertThat(host.copiers()).hasSize(1);
    }
  }

  @Test
  void closeWaitsForQueuedBatchesStopsTheThreadsAndThenRejects(Random random) throws Exception {
    BackendContext context = context(2);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context)) {
      CpuTransferEngine engine = device.transferEngine(host);
      byte[][] original = fill(device, 7, random);
      List<TransferHandle> handles = new ArrayList<>();
      handles.add(engine.submit(single(DEVICE_TO_HOST, 7, GATED)));
      host.awaitCopyAtGate();
      handles.add(engine.submit(single(DEVICE_TO_HOST, 7, 3)));
      handles.add(engine.submit(single(DEVICE_TO_HOST, 7, 4)));
      handles.add(engine.submit(single(HOST_TO_DEVICE, 5, 6)));
      Thread closer = Thread.ofPlatform().name("closer").start(engine::close);
      closer.join(100);
      assertThat(closer.isAlive()).as("close() while a copy is held").isTrue();
      assertThat(handles.get(0).isDone()).isFalse();
      host.open();
      closer.join();
      assertThat(handles).allSatisfy(h -> assertThat(h.isDone()).isTrue());
      assertThat(handles).allSatisfy(h -> assertThat(h.failure()).isEmpty());
      assertThat(engine.inFlight()).isZero();
      assertThat(read(host, 4, 1)).as("a batch queued behind the held one").isEqualTo(original[1]);
      for (Thread copier : host.copiers()) {
        // A worker leaves the pool just before its thread ends: give it that moment.
        copier.join(Duration.ofSeconds(10));
        assertThat(copier.isAlive()).as("copier %s after close()", copier.getName()).isFalse();
      }
      assertThatThrownBy(() -> engine.submit(single(DEVICE_TO_HOST, 0, 2)))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("closed");
      engine.close();
    }
  }

  @Test
  void aCopyThatThrowsFailsItsBatchAndLaterBatchesRun(Random random) throws Exception {
    BackendContext context = context(2);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context);
        CpuTransferEngine engine = device.transferEngine(host)) {
      byte[][] original = fill(device, 2, random);
      TransferHandle failed = engine.submit(single(DEVICE_TO_HOST, 2, BROKEN));
      TransferHandle next = engine.submit(single(DEVICE_TO_HOST, 2, 3));
      assertThatThrownBy(failed::await)
          .isInstanceOf(TransferFailedException.class)
          .hasMessageContaining("DEVICE_TO_HOST batch seq=0")
          .hasMessageContaining("host page 1 is broken");
      assertThat(failed.isDone()).isTrue();
      assertThat(failed.failure()).get().isInstanceOf(TransferFailedException.class);
      next.await();
      assertThat(next.failure()).isEmpty();
      assertThat(read(host, 3, 0)).isEqualTo(original[0]);
    }
  }

  @Test
  void aCheckRunsOnTheCopierThreadAfterTheBytesAndItsFailureFailsTheBatch(Random random)
      throws Exception {
    BackendContext context = context(2);
    try (CpuDeviceMemory device = device(context);
        GatedHostMemory host = gatedHost(context);
        CpuTransferEngine engine = device.transferEngine(host)) {
      byte[][] original = fill(device, 2, random);
      List<String> seen = new ArrayList<>();
      TransferHandle checked =
          engine.submit(
              single(DEVICE_TO_HOST, 2, 3),
              batch -> seen.add(Thread.currentThread().getName() + " " + read(host, 3, 0).length));
      checked.await();
      assertThat(seen).singleElement().asString().startsWith("kvtier-cpu-copy-");
      assertThat(read(host, 3, 0)).isEqualTo(original[0]);

      TransferHandle refused =
          engine.submit(
              single(HOST_TO_DEVICE, 4, 3),
              batch -> {
                throw new TransferFailedException("host page 3 changed since it was written", null);
              });
      TransferHandle next = engine.submit(single(HOST_TO_DEVICE, 5, 3));
      assertThatThrownBy(refused::await)
          .isInstanceOf(TransferFailedException.class)
          .hasMessageContaining("host page 3 changed");
      assertThat(refused.failure()).isPresent();
      next.await();
      assertThat(next.failure()).isEmpty();

      TransferHandle broken =
          engine.submit(
              single(HOST_TO_DEVICE, 6, 3),
              batch -> {
                throw new IllegalStateException("a check with a bug");
              });
      assertThatThrownBy(broken::await)
          .isInstanceOf(TransferFailedException.class)
          .hasMessageContaining("its check failed")
          .hasMessageContaining("a check with a bug");
    }
  }

  @Test
  void closingAPoolClosesItsEnginesFirst(Random random) throws Exception {
    BackendContext context = context(2);
    CpuDeviceMemory device = device(context);
    CpuHostMemory host =
        new CpuHostMemoryProvider()
            .open(new PoolSpec(LAYOUT, 8, MemoryLayout.LAYER_FIRST), context);
    CpuTransferEngine engine = device.transferEngine(host);
    fill(device, 1, random);
    TransferHandle out = engine.submit(single(DEVICE_TO_HOST, 1, 1));
    host.close();
    assertThat(out.isDone()).as("a batch in flight when its host pool closed").isTrue();
    assertThat(out.failure()).isEmpty();
    assertThatThrownBy(() -> engine.submit(single(DEVICE_TO_HOST, 0, 0)))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> device.transferEngine(host)).isInstanceOf(IllegalStateException.class);
    device.close();
    engine.close();
  }

  @Test
  void aMetricsSinkThatThrowsLosesItsFiguresNotTheCopies(Random random) throws Exception {
    BackendMetrics broken =
        new BackendMetrics() {
          @Override
          public void increment(String name, long delta) {
            throw new IllegalStateException("broken sink: " + name);
          }

          @Override
          public void recordNanos(String name, long nanos) {
            throw new IllegalStateException("broken sink: " + name);
          }
        };
    BackendContext context = new BackendContext(0, Map.of(), TimeSource.SYSTEM, broken);
    try (CpuDeviceMemory device = device(context);
        CpuHostMemory host =
            new CpuHostMemoryProvider()
                .open(new PoolSpec(LAYOUT, 8, MemoryLayout.LAYER_FIRST), context)) {
      CpuTransferEngine engine = device.transferEngine(host);
      byte[][] original = fill(device, 2, random);
      TransferHandle first = engine.submit(single(DEVICE_TO_HOST, 2, 3));
      TransferHandle second = engine.submit(single(DEVICE_TO_HOST, 2, 4));
      first.await();
      second.await();
      assertThat(read(host, 4, 2)).isEqualTo(original[2]);
      engine.close();
      assertThat(engine.inFlight()).isZero();
    }
  }

  @Test
  void aBadCopyThreadsValueFailsOpenNamingKeyAndValue() {
    BackendContext bad =
        new BackendContext(
            0, Map.of(CpuConfig.COPY_THREADS, "8"), TimeSource.SYSTEM, BackendMetrics.NOOP);
    PoolSpec spec = new PoolSpec(LAYOUT, 2, MemoryLayout.LAYER_FIRST);
    assertThatThrownBy(() -> new CpuDeviceMemoryProvider().open(spec, bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cpu.copy-threads=8");
    assertThatThrownBy(() -> new CpuHostMemoryProvider().open(spec, bad))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cpu.copy-threads=8");
  }

  private static TransferBatch single(TransferDirection direction, int devicePage, int hostPage) {
    return TransferBatch.allLayers(direction, new int[] {devicePage}, new int[] {hostPage});
  }

  private static byte[][] fill(CpuDeviceMemory device, int page, Random random) {
    byte[][] data = new byte[LAYOUT.layers()][Math.toIntExact(LAYOUT.pageBytesPerLayer())];
    for (int layer = 0; layer < LAYOUT.layers(); layer++) {
      random.nextBytes(data[layer]);
      device.write(page, layer, 0, MemorySegment.ofArray(data[layer]));
    }
    return data;
  }

  private static byte[] read(PageMemory pool, int page, int layer) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment dst = arena.allocate(LAYOUT.pageBytesPerLayer());
      pool.read(page, layer, 0, dst);
      return dst.toArray(ValueLayout.JAVA_BYTE);
    }
  }
}
