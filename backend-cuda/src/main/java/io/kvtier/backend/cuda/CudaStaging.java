package io.kvtier.backend.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.LongConsumer;

/**
 * Gives a driver copy a host address for any {@link MemorySegment}: a native segment's own
 * address, or for a heap segment (which has none the driver may use) a native staging copy.
 */
final class CudaStaging {

  private CudaStaging() {}

  /**
   * Runs a copy that reads {@code src.byteSize()} bytes from a host address.
   *
   * @param src the bytes to read
   * @param copy called with the address of the bytes; must finish reading before it returns
   */
  static void from(MemorySegment src, LongConsumer copy) {
    if (src.isNative()) {
      copy.accept(src.address());
      return;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment staging = arena.allocate(src.byteSize());
      staging.copyFrom(src);
      copy.accept(staging.address());
    }
  }

  /**
   * Runs a copy that writes {@code dst.byteSize()} bytes to a host address.
   *
   * @param dst where the bytes go
   * @param copy called with the address to write; must finish writing before it returns
   */
  static void into(MemorySegment dst, LongConsumer copy) {
    if (dst.isReadOnly()) {
      throw new IllegalArgumentException("dst is a read-only segment: pass a writable one");
    }
    if (dst.isNative()) {
      copy.accept(dst.address());
      return;
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment staging = arena.allocate(dst.byteSize());
      copy.accept(staging.address());
      dst.copyFrom(staging);
    }
  }
}
