package io.kvtier.backend.cuda;

import io.kvtier.spi.PoolSpec;
import io.kvtier.spi.TransferBatch;
import java.util.Objects;

/**
 * The addressing and bounds checks of a CUDA device or host pool: (page, layer) to byte offset
 * with {@link io.kvtier.spi.MemoryLayout#blockOffset}, and messages that name the value, the bound
 * and the pool.
 *
 * @param kind {@code "device"} or {@code "host"}, for messages
 * @param spec the pool's shape
 */
record CudaPoolAddressing(String kind, PoolSpec spec) {

  /** Validates the fields. */
  CudaPoolAddressing {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(spec, "spec");
  }

  /**
   * Bytes of one (page, layer) block.
   *
   * @return {@code layout.pageBytesPerLayer()}
   */
  long blockBytes() {
    return spec.layout().pageBytesPerLayer();
  }

  /**
   * Checks a block address and a byte range within the block, and returns the range's offset in
   * the pool.
   *
   * @param page the page
   * @param layer the layer
   * @param offset the range's offset within the block
   * @param length the range's length
   * @return the byte offset of the range in the pool
   * @throws IndexOutOfBoundsException naming the value and the bound
   */
  long rangeOffset(int page, int layer, long offset, long length) {
    long base = blockOffset(page, layer);
    long block = blockBytes();
    if (offset < 0 || length < 0 || offset > block - length) {
      throw new IndexOutOfBoundsException(
          kind
              + " offset="
              + offset
              + " length="
              + length
              + " blockBytes="
              + block
              + ": the range must lie within one (page, layer) block");
    }
    return base + offset;
  }

  /**
   * Checks a block address and returns its offset.
   *
   * @param page the page
   * @param layer the layer
   * @return the byte offset of the block in the pool
   */
  long blockOffset(int page, int layer) {
    checkPage(page, "");
    checkLayer(layer);
    return spec.memoryLayout().blockOffset(spec.layout(), spec.pages(), page, layer);
  }

  void checkPage(int page, String where) {
    if (page < 0 || page >= spec.pages()) {
      throw new IndexOutOfBoundsException(
          kind + " page=" + page + " pages=" + spec.pages() + where + ": use 0 <= page < pages");
    }
  }

  void checkLayer(int layer) {
    if (layer < 0 || layer >= spec.layout().layers()) {
      throw new IndexOutOfBoundsException(
          kind
              + " layer="
              + layer
              + " layers="
              + spec.layout().layers()
              + ": use 0 <= layer < layers");
    }
  }

  /**
   * Checks a batch against a device and a host pool and measures it.
   *
   * @param batch the batch
   * @param device the device pool's addressing
   * @param host the host pool's addressing
   * @return the bytes the batch copies
   * @throws IndexOutOfBoundsException naming the first bad page or the layer
   */
  static long checkAndMeasure(
      TransferBatch batch, CudaPoolAddressing device, CudaPoolAddressing host) {
    if (batch.layer().isPresent()) {
      device.checkLayer(batch.layer().getAsInt());
    }
    for (int i = 0; i < batch.size(); i++) {
      device.checkPage(batch.devicePage(i), " at batch index " + i);
      host.checkPage(batch.hostPage(i), " at batch index " + i);
    }
    long perPage =
        batch.layer().isPresent() ? device.blockBytes() : device.spec().layout().pageBytes();
    return perPage * batch.size();
  }
}
