package io.kvtier.backend.sim;

import io.kvtier.asserting.AssertingDeviceMemory;
import io.kvtier.asserting.AssertingHostMemory;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.spi.TransferHandle;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Map;

/**
 * Asserting pools over {@code sim} pools on a virtual clock: a copy stays in flight until the
 * test advances the clock, so "not done yet" is a state the test controls, not a race.
 */
final class SimPools implements AutoCloseable {
  static final KvLayout LAYOUT = new KvLayout(2, 1, 4, 2, 2);
  static final int PAGES = 8;

  final ManualTimeSource clock = new ManualTimeSource();
  final AssertingDeviceMemory device;
  final AssertingHostMemory host;
  final TransferEngine engine;

  SimPools() {
    BackendContext context = new BackendContext(0, Map.of(), clock, BackendMetrics.NOOP);
    device =
        new AssertingDeviceMemory(
            new SimDeviceMemoryProvider()
                .open(new PoolSpec(LAYOUT, PAGES, MemoryLayout.LAYER_FIRST), context));
    host =
        new AssertingHostMemory(
            new SimHostMemoryProvider()
                .open(new PoolSpec(LAYOUT, PAGES, MemoryLayout.PAGE_FIRST), context));
    engine = device.transferEngine(host);
  }

  TransferHandle copy(TransferDirection direction, int devicePage, int hostPage) {
    return engine.submit(
        TransferBatch.allLayers(direction, new int[] {devicePage}, new int[] {hostPage}));
  }

  TransferHandle copyLayer(TransferDirection direction, int devicePage, int hostPage, int layer) {
    return engine.submit(
        TransferBatch.oneLayer(direction, new int[] {devicePage}, new int[] {hostPage}, layer));
  }

  /** Advances the clock until the handle is done; a sim copy takes microseconds of model time. */
  void complete(TransferHandle handle) throws InterruptedException {
    for (int i = 0; i < 1_000 && !handle.isDone(); i++) {
      clock.advance(Duration.ofMillis(1));
    }
    handle.await();
  }

  static MemorySegment block() {
    return MemorySegment.ofArray(new byte[(int) LAYOUT.pageBytesPerLayer()]);
  }

  static MemorySegment filled(byte value) {
    byte[] b = new byte[(int) LAYOUT.pageBytesPerLayer()];
    java.util.Arrays.fill(b, value);
    return MemorySegment.ofArray(b);
  }

  @Override
  public void close() {
    engine.close();
    device.close();
    host.close();
  }
}
