package io.kvtier.backend.cpu;

import io.kvtier.asserting.AssertingDeviceMemoryProvider;
import io.kvtier.asserting.AssertingHostMemoryProvider;
import io.kvtier.asserting.AssertingTransferEngine;
import io.kvtier.asserting.FaultyTransferEngine;
import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.DeviceMemoryProvider;
import io.kvtier.spi.HostMemoryProvider;
import io.kvtier.spi.TimeSource;
import io.kvtier.spi.TransferDirection;
import io.kvtier.spi.TransferEngine;
import io.kvtier.testkit.conformance.DeviceMemoryConformanceSuite;
import io.kvtier.testkit.conformance.TransferCapability;
import io.kvtier.testkit.conformance.TransferControl;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;

/**
 * The device suite on the {@code asserting} providers over {@code cpu}, with stalls and failures
 * scripted by io.kvtier.asserting's {@link FaultyTransferEngine}: the asserting pools check, on
 * copies that really run on copier threads, that no page is used, overwritten or freed while a
 * copy in flight touches it and that completion is FIFO per direction; the stalls let the suite
 * query copies before completion, which a copy of a few hundred bytes would otherwise outrun.
 */
class CpuAssertingConformanceTest extends DeviceMemoryConformanceSuite {

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
        0,
        Map.of("asserting.delegate", "cpu", "asserting.faults", "true"),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.of(
        TransferCapability.STALL_INJECTION,
        TransferCapability.FAULT_INJECTION,
        TransferCapability.FOREIGN_HOST);
  }

  @Override
  protected TransferControl control(TransferEngine engine, BackendContext context) {
    FaultyTransferEngine faulty =
        (FaultyTransferEngine) ((AssertingTransferEngine) engine).delegate();
    return new TransferControl() {
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

  /**
   * Runs every check: the asserting providers' {@code availability()} speaks of their default
   * delegate ({@code sim}, not on this module's test path); the delegate here, {@code cpu}, is
   * always available.
   */
  @BeforeEach
  @Override
  public void requireAvailableProviders() {}
}
