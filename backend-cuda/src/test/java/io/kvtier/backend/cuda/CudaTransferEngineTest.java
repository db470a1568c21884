package io.kvtier.backend.cuda;

import static io.kvtier.spi.TransferDirection.DEVICE_TO_HOST;
import static io.kvtier.spi.TransferDirection.HOST_TO_DEVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvtier.asserting.AssertingDeviceMemory;
import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemory;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.AssertingTransferEngine;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemory;
import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import io.kvtier.testkit.SeedExtension;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The cuda pools and engine on a real GPU, beyond the conformance suites; skipped without one. */
@ExtendWith(SeedExtension.class)
class CudaTransferEngineTest {

  /** 8 layers of 8 KiB blocks: big enough for strided runs, small enough for seconds. */
  private static final KvLayout LAYOUT = new KvLayout(8, 2, 64, 2, 16);

  @BeforeEach
  void requireGpu() {
    CudaTestSupport.requireCuda();
  }

  @ParameterizedTest(name = "device {0}, host {1}, strided copies {2}")
  @CsvSource({
    "LAYER_FIRST, LAYER_FIRST, true",
    "LAYER_FIRST, LAYER_FIRST, false",
    "LAYER_FIRST, PAGE_FIRST, true",
    "PAGE_FIRST, LAYER_FIRST, true",
    "PAGE_FIRST, PAGE_FIRST, true"
  })
  void randomPagesLoadedAllLayersAndBackedUpLayerByLayerRoundTrip(
      MemoryLayout deviceLayout, MemoryLayout hostLayout, boolean strided, Random random)
      throws Exception {
    BackendContext context =
        context(Map.of(CudaConfig.STRIDED_COPIES, Boolean.toString(strided)), BackendMetrics.NOOP);
    try (DeviceMemory device =
            new CudaDeviceMemoryProvider().open(new PoolSpec(LAYOUT, 64, deviceLayout), context);
        HostMemory host =
            new CudaHostMemoryProvider().open(new PoolSpec(LAYOUT, 96, hostLayout), context);
        TransferEngine engine = device.transferEngine(host)) {
      int n = 40;
      // Half consecutive pages, where runs merge, half random ones; all distinct.
      int[] devicePages =
          concat(range(0, n / 2), Arrays.copyOf(shuffled(n / 2, 64, random), n / 2));
      int[] hostRest = shuffled(n / 2, 96, random);
      int[] source = concat(range(0, n / 2), Arrays.copyOf(hostRest, n / 2));
      int[] target = Arrays.copyOfRange(hostRest, n / 2, n / 2 + n);
      for (int page : source) {
        for (int layer = 0; layer < LAYOUT.layers(); layer++) {
          byte[] bytes = new byte[Math.toIntExact(LAYOUT.pageBytesPerLayer())];
          random.nextBytes(bytes);
          MemorySegment.copy(
              MemorySegment.ofArray(bytes), 0, host.block(page, layer), 0, bytes.length);
        }
      }
      engine.submit(TransferBatch.allLayers(HOST_TO_DEVICE, devicePages, source)).await();
      List<TransferHandle> backups = new ArrayList<>();
      for (int layer = 0; layer < LAYOUT.layers(); layer++) {
        backups.add(
            engine.submit(TransferBatch.oneLayer(DEVICE_TO_HOST, devicePages, target, layer)));
      }
      backups.getLast().await();
      assertThat(backups).allSatisfy(h -> assertThat(h.isDone()).isTrue());
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment viaRead = arena.allocate(LAYOUT.pageBytesPerLayer());
        for (int i = 0; i < n; i++) {
          for (int layer = 0; layer < LAYOUT.layers(); layer++) {
            assertThat(host.block(target[i], layer).mismatch(host.block(source[i], layer)))
                .as(
                    "host page %d layer %d after H2D to device page %d and D2H to host page %d",
                    source[i], layer, devicePages[i], target[i])
                .isEqualTo(-1);
            device.read(devicePages[i], layer, 0, viaRead);
            assertThat(viaRead.mismatch(host.block(source[i], layer)))
                .as("device page %d layer %d read()", devicePages[i], layer)
                .isEqualTo(-1);
          }
        }
      }
    }
  }

  @Test
  void heapAndNativeSegmentsAreWrittenAndReadAtAnOffset(Random random) {
    try (DeviceMemory device =
            new CudaDeviceMemoryProvider()
                .open(
                    new PoolSpec(LAYOUT, 4, MemoryLayout.LAYER_FIRST), BackendContext.defaults());
        Arena arena = Arena.ofConfined()) {
      byte[] bytes = new byte[1000];
      random.nextBytes(bytes);
      device.write(3, 5, 777, MemorySegment.ofArray(bytes));
      MemorySegment nativeCopy = arena.allocate(bytes.length);
      device.read(3, 5, 777, nativeCopy);
      assertThat(nativeCopy.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(bytes);
      byte[] heapCopy = new byte[bytes.length + 2];
      device.read(3, 5, 776, MemorySegment.ofArray(heapCopy));
      assertThat(Arrays.copyOfRange(heapCopy, 1, bytes.length + 1)).isEqualTo(bytes);
      assertThat(heapCopy[0]).isZero();
      assertThat(heapCopy[bytes.length + 1]).isZero();
    }
  }

  @Test
  void metricsCountBytesAndCopyCallsPerDirection() throws Exception {
    Map<String, LongAdder> counters = new ConcurrentHashMap<>();
    BackendMetrics metrics =
        new BackendMetrics() {
          @Override
          public void increment(String name, long delta) {
            counters.computeIfAbsent(name, k -> new LongAdder()).add(delta);
          }

          @Override
          public void recordNanos(String name, long nanos) {
            increment(name + ".count", 1);
          }
        };
    BackendContext context = context(Map.of(), metrics);
    PoolSpec spec = new PoolSpec(LAYOUT, 8, MemoryLayout.PAGE_FIRST);
    try (DeviceMemory device = new CudaDeviceMemoryProvider().open(spec, context);
        HostMemory host = new CudaHostMemoryProvider().open(spec, context);
        TransferEngine engine = device.transferEngine(host)) {
      engine
          .submit(TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {1, 2, 3}, new int[] {4, 5, 6}))
          .await();
      engine
          .submit(TransferBatch.oneLayer(DEVICE_TO_HOST, new int[] {1}, new int[] {7}, 2))
          .await();
    }
    assertThat(counters.get("transfer.bytes.h2d").sum()).isEqualTo(3 * LAYOUT.pageBytes());
    assertThat(counters.get("transfer.copies.h2d").sum())
        .as("pages 1-3 to 4-6 page-first")
        .isEqualTo(1);
    assertThat(counters.get("transfer.bytes.d2h").sum()).isEqualTo(LAYOUT.pageBytesPerLayer());
    assertThat(counters.get("transfer.latency.h2d.count").sum()).isEqualTo(1);
    assertThat(counters).doesNotContainKey("transfer.failures.h2d");
  }

  @Test
  void closingAPoolClosesItsEngineAfterItsCopies() throws Exception {
    PoolSpec spec = new PoolSpec(LAYOUT, 16, MemoryLayout.LAYER_FIRST);
    BackendContext context = BackendContext.defaults();
    HostMemory host = new CudaHostMemoryProvider().open(spec, context);
    DeviceMemory device = new CudaDeviceMemoryProvider().open(spec, context);
    TransferEngine engine = device.transferEngine(host);
    List<TransferHandle> handles = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      handles.add(
          engine.submit(
              TransferBatch.allLayers(
                  i % 2 == 0 ? HOST_TO_DEVICE : DEVICE_TO_HOST, new int[] {i}, new int[] {8 + i})));
    }
    device.close();
    assertThat(handles).allSatisfy(h -> assertThat(h.isDone()).isTrue());
    assertThat(engine.inFlight()).isZero();
    assertThatThrownBy(
            () ->
                engine.submit(
                    TransferBatch.allLayers(HOST_TO_DEVICE, new int[] {0}, new int[] {0})))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> device.transferEngine(host)).isInstanceOf(IllegalStateException.class);
    host.close();
    assertThatThrownBy(() -> host.block(0, 0)).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void theAssertingWrapperCatchesAFreeOfAPageAPendingCopyReads() throws Exception {
    BackendContext context =
        context(
            Map.of("asserting.delegate", "cuda", "asserting.faults", "true"), BackendMetrics.NOOP);
    PoolSpec spec = new PoolSpec(LAYOUT, 8, MemoryLayout.LAYER_FIRST);
    try (AssertingDeviceMemory device =
            (AssertingDeviceMemory) new AssertingDeviceMemoryProvider().open(spec, context);
        AssertingHostMemory host =
            (AssertingHostMemory) new AssertingHostMemoryProvider().open(spec, context)) {
      assertThat(device.delegate()).isInstanceOf(CudaDeviceMemory.class);
      AssertingTransferEngine engine = (AssertingTransferEngine) device.transferEngine(host);
      FaultyTransferEngine faulty = (FaultyTransferEngine) engine.delegate();
      device.ownership().allocate(3);
      host.ownership().allocate(5);
      faulty.stall(DEVICE_TO_HOST);
      TransferHandle backup =
          engine.submit(TransferBatch.allLayers(DEVICE_TO_HOST, new int[] {3}, new int[] {5}));
      assertThatThrownBy(() -> device.ownership().free(3))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("still reads it");
      faulty.release(DEVICE_TO_HOST);
      backup.await();
      device.ownership().free(3);
      engine.close();
    }
  }

  private static BackendContext context(Map<String, String> properties, BackendMetrics metrics) {
    return new BackendContext(0, properties, TimeSource.SYSTEM, metrics);
  }

  /** The integers from {@code from} (inclusive) to {@code to} (exclusive). */
  private static int[] range(int from, int to) {
    int[] out = new int[to - from];
    Arrays.setAll(out, i -> from + i);
    return out;
  }

  /** The integers from {@code from} to {@code to}, shuffled. */
  private static int[] shuffled(int from, int to, Random random) {
    List<Integer> values = new ArrayList<>(Arrays.stream(range(from, to)).boxed().toList());
    Collections.shuffle(values, random);
    return values.stream().mapToInt(Integer::intValue).toArray();
  }

  private static int[] concat(int[] a, int[] b) {
    int[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
