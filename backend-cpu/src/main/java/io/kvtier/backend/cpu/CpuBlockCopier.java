package io.kvtier.backend.cpu;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.lang.foreign.MemorySegment;

/**
 * Moves the bytes of a batch between a {@code cpu} device pool and a host pool.
 *
 * <p>Blocks are visited in batch order (page, then layer), and blocks that follow each other in
 * both pools are copied with one {@link MemorySegment#copy} call: a page-first device and a
 * page-first {@code cpu} host copy a whole page (all layers) at once, and consecutive pages
 * merge too. Why: one call per block costs a bounds check and a dispatch per block, which is
 * noise for large blocks but not for the small blocks of small models. A host pool of another
 * provider is reached through {@link HostMemory#block}, one slice per block, and never merged.
 */
final class CpuBlockCopier {

  /** Where the host's blocks lie: a segment holding the block and the block's offset in it. */
  private interface HostBlocks {
    MemorySegment segment(int page, int layer);

    long offset(int page, int layer);
  }

  private final CpuPool device;
  private final HostMemory host;
  private final HostBlocks hostBlocks;
  private final KvLayout layout;
  private final long blockBytes;

  CpuBlockCopier(CpuPool device, HostMemory host) {
    this.device = device;
    this.host = host;
    this.layout = device.spec().layout();
    this.blockBytes = layout.pageBytesPerLayer();
    if (host instanceof CpuHostMemory cpuHost) {
      CpuPool pool = cpuHost.pool();
      this.hostBlocks =
          new HostBlocks() {
            @Override
            public MemorySegment segment(int page, int layer) {
              return pool.memory();
            }

            @Override
            public long offset(int page, int layer) {
              return pool.blockOffset(page, layer);
            }
          };
    } else {
      this.hostBlocks =
          new HostBlocks() {
            @Override
            public MemorySegment segment(int page, int layer) {
              return host.block(page, layer);
            }

            @Override
            public long offset(int page, int layer) {
              return 0;
            }
          };
    }
  }

  /**
   * Checks pages and layer against both pools.
   *
   * @return the bytes the batch copies
   * @throws IndexOutOfBoundsException naming the first bad page or the layer
   */
  long checkAndMeasure(TransferBatch batch) {
    if (batch.layer().isPresent()) {
      device.checkLayer(batch.layer().getAsInt());
    }
    int hostPages = host.spec().pages();
    for (int i = 0; i < batch.size(); i++) {
      device.checkPage(batch.devicePage(i));
      int hostPage = batch.hostPage(i);
      if (hostPage >= hostPages) {
        throw new IndexOutOfBoundsException(
            "host page="
                + hostPage
                + " pages="
                + hostPages
                + " at batch index "
                + i
                + ": use 0 <= page < pages");
      }
    }
    long perPage = batch.layer().isPresent() ? blockBytes : layout.pageBytes();
    return perPage * batch.size();
  }

  /**
   * Copies every block of the batch in its direction.
   *
   * @return the number of {@link MemorySegment#copy} calls made
   * @throws RuntimeException if a pool was closed under the engine
   */
  int copy(TransferBatch batch) {
    boolean toHost = batch.direction() == TransferDirection.DEVICE_TO_HOST;
    int firstLayer = batch.layer().orElse(0);
    int endLayer = batch.layer().isPresent() ? firstLayer + 1 : layout.layers();
    MemorySegment deviceMemory = device.memory();
    int copies = 0;
    MemorySegment runHost = null;
    long runDevice = 0;
    long runHostOffset = 0;
    long runBytes = 0;
    for (int i = 0; i < batch.size(); i++) {
      int devicePage = batch.devicePage(i);
      int hostPage = batch.hostPage(i);
      for (int layer = firstLayer; layer < endLayer; layer++) {
        long deviceOffset = device.blockOffset(devicePage, layer);
        MemorySegment hostMemory = hostBlocks.segment(hostPage, layer);
        long hostOffset = hostBlocks.offset(hostPage, layer);
        if (runBytes > 0
            && hostMemory == runHost
            && deviceOffset == runDevice + runBytes
            && hostOffset == runHostOffset + runBytes) {
          runBytes += blockBytes;
          continue;
        }
        if (runBytes > 0) {
          move(toHost, deviceMemory, runDevice, runHost, runHostOffset, runBytes);
          copies++;
        }
        runHost = hostMemory;
        runDevice = deviceOffset;
        runHostOffset = hostOffset;
        runBytes = blockBytes;
      }
    }
    if (runBytes > 0) {
      move(toHost, deviceMemory, runDevice, runHost, runHostOffset, runBytes);
      copies++;
    }
    return copies;
  }

  private static void move(
      boolean toHost,
      MemorySegment device,
      long deviceOffset,
      MemorySegment host,
      long hostOffset,
      long bytes) {
    if (toHost) {
      MemorySegment.copy(device, deviceOffset, host, hostOffset, bytes);
    } else {
      MemorySegment.copy(host, hostOffset, device, deviceOffset, bytes);
    }
  }
}
