package io.kvtier.spi;

import java.util.Objects;

/**
 * What a device or host page pool must hold.
 *
 * @param layout the KV layout of one page
 * @param pages number of pages (slots) in the pool, at least 1
 * @param memoryLayout the order of (page, layer) blocks
 */
public record PoolSpec(KvLayout layout, int pages, MemoryLayout memoryLayout) {

  /** Validates the fields, including that the pool's byte size fits in a {@code long}. */
  public PoolSpec {
    Objects.requireNonNull(layout, "layout");
    Objects.requireNonNull(memoryLayout, "memoryLayout");
    if (pages < 1) {
      throw new IllegalArgumentException("pages=" + pages + " must be >= 1");
    }
    layout.poolBytes(pages);
  }

  /**
   * The pool size in bytes.
   *
   * @return {@code layout.pageBytes() * pages}
   */
  public long bytes() {
    return layout.poolBytes(pages);
  }
}
