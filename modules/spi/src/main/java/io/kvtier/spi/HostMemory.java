package io.kvtier.spi;

import java.lang.foreign.MemorySegment;

/**
 * The host (L2) page pool. Its blocks are plain host memory that a device's {@link
 * TransferEngine} copies to and from, and that an L3 {@link KvStore} reads and fills.
 */
public interface HostMemory extends PageMemory {

  /**
   * The memory of one (page, layer) block, for transfer engines and stores that copy directly.
   * The segment is valid until {@link #close()}; writing through it is the same as {@link
   * #write}.
   *
   * @param page the page
   * @param layer the layer
   * @return a segment of {@code layout.pageBytesPerLayer()} bytes
   */
  MemorySegment block(int page, int layer);

  /**
   * Whether the memory is page-locked (pinned) so that a device can copy it asynchronously.
   *
   * @return true if pinned
   */
  boolean pinned();

  /**
   * Whether the pool holds the pages' bytes, as every real pool does. A pool that only models
   * slots (kvtier replay's, which measures the cache's decisions and never its KV) returns false,
   * and the cache then takes no checksums of it (docs/CACHE.md, "Verified restores").
   *
   * @return true by default
   */
  default boolean holdsBytes() {
    return true;
  }
}
