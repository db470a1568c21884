package io.kvtier.backend.cuda;

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
 * The device suite on the {@code asserting} providers over {@code cuda}, with stalls and failures
 * scripted by io.kvtier.asserting's {@link FaultyTransferEngine}: the asserting pools check on
 * real GPU copies that no page is used, overwritten or freed while a copy in flight touches it,
 * and that completion is FIFO per direction; the stalls let the suite query copies before
 * completion.
 */
class CudaAssertingConformanceTest extends DeviceMemoryConformanceSuite {

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
        Map.of("asserting.delegate", "cuda", "asserting.faults", "true"),
        TimeSource.SYSTEM,
        BackendMetrics.NOOP);
  }

  @Override
  protected Set<TransferCapability> capabilities() {
    return EnumSet.of(TransferCapability.STALL_INJECTION, TransferCapability.FAULT_INJECTION);
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

  /** The asserting providers report their default delegate (sim); the cuda gate comes first. */
  @BeforeEach
  @Override
  public void requireAvailableProviders() {
    CudaTestSupport.requireCuda();
    super.requireAvailableProviders();
  }
}
