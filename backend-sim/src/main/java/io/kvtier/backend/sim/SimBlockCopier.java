package io.kvtier.backend.sim;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.TransferBatch;
import io.kvtier.spi.TransferDirection;
import java.lang.foreign.MemorySegment;

/**
 * Moves the bytes of a batch between a sim device pool and a host pool, one (page, layer) block
 * at a time so that the two pools may order their blocks differently. A sim host pool is
 * addressed directly, any other host pool through {@link HostMemory#block}.
 */
final class SimBlockCopier {

  private final SimPool device;
  private final HostMemory host;
  private final SimPool simHost;
  private final KvLayout layout;

  SimBlockCopier(SimPool device, HostMemory host) {
    this.device = device;
    this.host = host;
    this.simHost = host instanceof SimHostMemory h ? h.pool() : null;
    this.layout = device.spec().layout();
  }

  /**
   * Checks pages and layer against both pools.
   *
   * @return the bytes the batch copies
   * @throws IndexOutOfBoundsException naming the first bad page or the layer
   */
  long checkAndMeasure(TransferBatch batch) {
    if (batch.layer().isPresent()) {
      int layer = batch.layer().getAsInt();
      if (layer >= layout.layers()) {
        throw new IndexOutOfBoundsException(
            "layer=" + layer + " layers=" + layout.layers() + ": use 0 <= layer < layers");
      }
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
    long perPage = batch.layer().isPresent() ? layout.pageBytesPerLayer() : layout.pageBytes();
    return perPage * batch.size();
  }

  /**
   * Flips the lowest bit of the first byte of the batch's first host block (its layer, or layer
   * 0): corruption of the host tier at rest, for {@link SimFaults#flipNext}.
   */
  void flipSourceBit(TransferBatch batch) {
    if (batch.size() == 0) {
      return;
    }
    MemorySegment block = host.block(batch.hostPage(0), batch.layer().orElse(0));
    block.set(
        java.lang.foreign.ValueLayout.JAVA_BYTE,
        0,
        (byte) (block.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) ^ 1));
  }

  /**
   * Copies every block of the batch in its direction.
   *
   * @throws RuntimeException if a pool was closed under the engine
   */
  void copy(TransferBatch batch) {
    boolean toHost = batch.direction() == TransferDirection.DEVICE_TO_HOST;
    int firstLayer = batch.layer().orElse(0);
    int endLayer = batch.layer().isPresent() ? firstLayer + 1 : layout.layers();
    long blockBytes = layout.pageBytesPerLayer();
    MemorySegment deviceMemory = device.memory();
    for (int i = 0; i < batch.size(); i++) {
      int devicePage = batch.devicePage(i);
      int hostPage = batch.hostPage(i);
      for (int layer = firstLayer; layer < endLayer; layer++) {
        long deviceOffset = device.blockOffset(devicePage, layer);
        MemorySegment hostMemory;
        long hostOffset;
        if (simHost != null) {
          // No slice object per block when the host pool is ours.
          hostMemory = simHost.memory();
          hostOffset = simHost.blockOffset(hostPage, layer);
        } else {
          hostMemory = host.block(hostPage, layer);
          hostOffset = 0;
        }
        if (toHost) {
          MemorySegment.copy(deviceMemory, deviceOffset, hostMemory, hostOffset, blockBytes);
        } else {
          MemorySegment.copy(hostMemory, hostOffset, deviceMemory, deviceOffset, blockBytes);
        }
      }
    }
  }
}
