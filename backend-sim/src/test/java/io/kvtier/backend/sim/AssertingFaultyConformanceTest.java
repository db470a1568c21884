package io.kvtier.backend.sim;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.AssertingTransferEngine;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import io.kvtier.testkit.conformance.TransferCapability;
import io.kvtier.testkit.conformance.TransferControl;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

/**
 * The device suite on the {@code asserting} providers over {@code sim} on a virtual clock, with
 * stalls and failures injected by the {@link FaultyTransferEngine} instead of the sim: checks
 * that the wrappers keep the SPI contract and raise no false alarm on correct use.
 */
class AssertingFaultyConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return new AssertingDeviceMemoryProvider();
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return new AssertingHostMemoryProvider();
  }

  @Override
  protected BackendContext context() {
    return new BackendContext(
        0, Map.of("asserting.faults", "true"), new ManualTimeSource(), BackendMetrics.NOOP);
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.allOf(TransferCapability.class);
  }

  @Override
  protected TransferControl control(TransferEngine engine, BackendContext context) {
    ManualTimeSource clock = (ManualTimeSource) context.time();
    if (!(engine instanceof AssertingTransferEngine asserting)) {
      // A host pool of no provider at all: the device still wraps the engine.
      throw new AssertionError("expected an AssertingTransferEngine, got " + engine);
    }
    FaultyTransferEngine faulty = (FaultyTransferEngine) asserting.delegate();
    return new TransferControl() {
      @Override
      public void advance(Duration duration) {
        clock.advance(duration);
      }

      @Override
      public void stall(TransferDirection direction) {
        faulty.stall(direction);
      }

      @Override
      public void release(TransferDirection direction) {
        faulty.release(direction);
      }

      @Override
      public void failNext(TransferDirection direction) {
        faulty.failNext(direction);
      }
    };
  }
}
