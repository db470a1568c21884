package io.kvtier.backend.sim;

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
 * The device suite on the {@code sim} pools driven by a virtual clock, with the sim's stall and
 * fault injection: the capability-gated checks run here.
 */
class SimVirtualTimeConformanceTest extends DeviceMemoryConformanceSuite {

  @Override
  protected DeviceMemoryProvider deviceProvider() {
    return new SimDeviceMemoryProvider();
  }

  @Override
  protected HostMemoryProvider hostProvider() {
    return new SimHostMemoryProvider();
  }

  @Override
  protected BackendContext context() {
    return new BackendContext(0, Map.of(), new ManualTimeSource(), BackendMetrics.NOOP);
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.allOf(TransferCapability.class);
  }

  @Override
  protected TransferControl control(TransferEngine engine, BackendContext context) {
    ManualTimeSource clock = (ManualTimeSource) context.time();
    SimFaults faults = ((SimTransferEngine) engine).faults();
    return new TransferControl() {
      @Override
      public void advance(Duration duration) {
        clock.advance(duration);
      }

      @Override
      public void stall(TransferDirection direction) {
        faults.stallNext(direction, Integer.MAX_VALUE);
      }

      @Override
      public void release(TransferDirection direction) {
        // Drops the open-ended stall rule first, so later batches are not stalled again.
        faults.clear();
        faults.release(direction);
      }

      @Override
      public void failNext(TransferDirection direction) {
        faults.failNext(direction, 1);
      }
    };
  }
}
