package io.kvtier.spi;

/**
 * How the (page, layer) blocks of a pool are ordered in memory. Only the pool's own addressing
 * depends on it; the SPI always addresses a block by (page, layer).
 */
public enum MemoryLayout {
  /** All pages of layer 0, then all pages of layer 1, ...: what paged attention kernels read. */
  LAYER_FIRST,
  /** All layers of page 0, then all layers of page 1, ...: one page is contiguous. */
  PAGE_FIRST;

  /**
   * Byte offset of a (page, layer) block in a pool.
   *
   * @param layout the KV layout
   * @param pages the pool's page count
   * @param page the page
   * @param layer the layer
   * @return the offset of the block's first byte
   */
  public long blockOffset(KvLayout layout, int pages, int page, int layer) {
    long block =
        switch (this) {
          case LAYER_FIRST -> (long) layer * pages + page;
          case PAGE_FIRST -> (long) page * layout.layers() + layer;
        };
    return block * layout.pageBytesPerLayer();
  }
}
