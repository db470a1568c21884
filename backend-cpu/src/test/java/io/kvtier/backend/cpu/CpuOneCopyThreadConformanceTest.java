package io.kvtier.backend.cpu;

import io.kvtier.spi.BackendContext;
import io.kvtier.spi.BackendMetrics;
import io.kvtier.spi.TimeSource;
import java.util.Map;

/**
 * The device suite on the {@code cpu} pools with {@code cpu.copy-threads=1}, where the two
 * directions share one copier thread and take turns batch by batch.
 */
class CpuOneCopyThreadConformanceTest extends CpuDeviceMemoryConformanceTest {

  @Override
  protected BackendContext context() {
    return new BackendContext(
        0, Map.of(CpuConfig.COPY_THREADS, "1"), TimeSource.SYSTEM, BackendMetrics.NOOP);
  }
}
