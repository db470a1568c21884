package io.kvtier.store.internal;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.MemoryLayout;
import io.kvtier.spi.PageKey;
import io.kvtier.spi.PoolSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.LongStream;

/**
 * A host pool for the stores' unit tests, which cannot use a backend (the conformance suite runs
 * the stores on the sim pool, from the testkit), with helpers that give each key its own bytes.
 */
public final class TestHostMemory implements HostMemory {

  private final PoolSpec spec;
  private final Arena arena = Arena.ofShared();
  private final MemorySegment memory;

  /**
   * A zero-filled pool.
   *
   * @param layout the page layout
   * @param pages the page count
   * @param memoryLayout the block order
   */
  public TestHostMemory(KvLayout layout, int pages, MemoryLayout memoryLayout) {
    this.spec = new PoolSpec(layout, pages, memoryLayout);
    this.memory = arena.allocate(spec.bytes(), 64);
  }

  /**
   * {@code n} distinct keys, the same on every call.
   *
   * @param n how many
   * @param salt makes the keys of one call differ from another's
   * @return the keys
   */
  public static List<PageKey> keys(int n, long salt) {
    return LongStream.range(0, n)
        .mapToObj(
            i ->
                new PageKey(
                    mix(salt * 4 + i * 1_000_003),
                    mix(salt * 4 + 1 + i),
                    mix(salt * 4 + 2 + i),
                    mix(salt * 4 + 3 + i)))
        .toList();
  }

  // The SplitMix64 finalizer: spreads keys over the whole range, so over the file shards too.
  private static long mix(long x) {
    long z = x + 0x9E3779B97F4A7C15L;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /**
   * The bytes a key's page holds in the tests.
   *
   * @param key the key
   * @param layout the layout
   * @return {@code layout.pageBytes()} bytes derived from the key
   */
  public static byte[] content(PageKey key, KvLayout layout) {
    byte[] bytes = new byte[Math.toIntExact(layout.pageBytes())];
    SplittableRandom random =
        new SplittableRandom(key.h0() * 31 + key.h1() * 17 + key.h2() + key.h3());
    for (int i = 0; i < bytes.length; i++) {
      bytes[i] = (byte) random.nextInt(256);
    }
    return bytes;
  }

  /**
   * Writes a key's content into a page.
   *
   * @param page the page
   * @param key the key
   */
  public void fill(int page, PageKey key) {
    byte[] bytes = content(key, spec.layout());
    long block = spec.layout().pageBytesPerLayer();
    for (int layer = 0; layer < spec.layout().layers(); layer++) {
      MemorySegment.copy(MemorySegment.ofArray(bytes), layer * block, block(page, layer), 0, block);
    }
  }

  /**
   * A page's bytes, layer 0 first.
   *
   * @param page the page
   * @return a new array
   */
  public byte[] bytes(int page) {
    long block = spec.layout().pageBytesPerLayer();
    byte[] out = new byte[Math.toIntExact(spec.layout().pageBytes())];
    for (int layer = 0; layer < spec.layout().layers(); layer++) {
      MemorySegment.copy(
          block(page, layer),
          ValueLayout.JAVA_BYTE,
          0,
          out,
          Math.toIntExact(layer * block),
          Math.toIntExact(block));
    }
    return out;
  }

  @Override
  public PoolSpec spec() {
    return spec;
  }

  @Override
  public MemorySegment block(int page, int layer) {
    return memory.asSlice(
        spec.memoryLayout().blockOffset(spec.layout(), spec.pages(), page, layer),
        spec.layout().pageBytesPerLayer());
  }

  @Override
  public void write(int page, int layer, long offset, MemorySegment src) {
    MemorySegment.copy(src, 0, block(page, layer), offset, src.byteSize());
  }

  @Override
  public void read(int page, int layer, long offset, MemorySegment dst) {
    MemorySegment.copy(block(page, layer), offset, dst, 0, dst.byteSize());
  }

  @Override
  public boolean pinned() {
    return false;
  }

  @Override
  public void close() {
    if (arena.scope().isAlive()) {
      arena.close();
    }
  }
}
