package io.kvtier.spi;

import java.lang.foreign.MemorySegment;

/**
 * A pool of KV pages addressed by (page, layer) block. Reads and writes of distinct blocks may
 * run concurrently; reads and writes of one block are not ordered by the pool, the caller
 * (the engine) orders them. Out-of-range arguments throw {@link IndexOutOfBoundsException} with
 * the value and the bound.
 */
public interface PageMemory extends AutoCloseable {

  /**
   * The pool's shape.
   *
   * @return the spec it was opened with
   */
  PoolSpec spec();

  /**
   * Copies bytes from {@code src} into a (page, layer) block.
   *
   * @param page the page, {@code 0 <= page < spec().pages()}
   * @param layer the layer, {@code 0 <= layer < layout.layers()}
   * @param offset byte offset within the block
   * @param src the bytes to write; {@code offset + src.byteSize()} must not exceed the block size
   */
  void write(int page, int layer, long offset, MemorySegment src);

  /**
   * Copies bytes of a (page, layer) block into {@code dst}.
   *
   * @param page the page
   * @param layer the layer
   * @param offset byte offset within the block
   * @param dst where to copy; {@code offset + dst.byteSize()} must not exceed the block size
   */
  void read(int page, int layer, long offset, MemorySegment dst);

  /**
   * Releases the pool's memory. Pending transfers that touch it must have been awaited; using the
   * pool afterwards throws {@link IllegalStateException}. Idempotent.
   */
  @Override
  void close();
}
