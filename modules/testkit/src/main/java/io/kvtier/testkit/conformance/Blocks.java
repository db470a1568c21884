package io.kvtier.testkit.conformance;

import io.kvtier.spi.PageMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/** Reading and writing whole (page, layer) blocks as byte arrays, for the suites' checks. */
final class Blocks {

  private Blocks() {}

  static long blockBytes(PageMemory memory) {
    return memory.spec().layout().pageBytesPerLayer();
  }

  /** Reads through a native segment, so that providers are exercised with off-heap targets. */
  static byte[] read(PageMemory memory, int page, int layer) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment dst = arena.allocate(blockBytes(memory));
      memory.read(page, layer, 0, dst);
      return dst.toArray(ValueLayout.JAVA_BYTE);
    }
  }

  /** Writes from a heap segment, the other kind of source a caller may pass. */
  static void write(PageMemory memory, int page, int layer, byte[] bytes) {
    memory.write(page, layer, 0, MemorySegment.ofArray(bytes));
  }

  static byte[] random(PageMemory memory, Random random) {
    byte[] bytes = new byte[Math.toIntExact(blockBytes(memory))];
    random.nextBytes(bytes);
    // A block of zeros would be indistinguishable from a fresh pool: force one non-zero byte.
    bytes[0] |= 1;
    return bytes;
  }

  static byte[] fillRandom(PageMemory memory, int page, int layer, Random random) {
    byte[] bytes = random(memory, random);
    write(memory, page, layer, bytes);
    return bytes;
  }

  static String where(String pool, int page, int layer) {
    return pool + " page " + page + " layer " + layer;
  }
}
