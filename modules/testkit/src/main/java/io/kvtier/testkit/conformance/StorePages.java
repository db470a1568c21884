package io.kvtier.testkit.conformance;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Page contents for the store suite. A page's bytes are a function of its key and a version, so
 * any thread can tell, from the key alone, whether bytes it got back are that page's: the bytes
 * of another page, of a freed and reused buffer, or of a damaged copy all differ.
 */
final class StorePages {

  /** What a host page holds before a {@code get}, so that a get that copies nothing shows. */
  private static final byte SCRIBBLE = (byte) 0xA5;

  private StorePages() {}

  /** {@code n} distinct random keys. */
  static List<PageKey> keys(int n, Random random) {
    Set<PageKey> keys = new LinkedHashSet<>();
    while (keys.size() < n) {
      keys.add(
          new PageKey(random.nextLong(), random.nextLong(), random.nextLong(), random.nextLong()));
    }
    return new ArrayList<>(keys);
  }

  /** The bytes of a key's page in one version, layer 0's block first. */
  static byte[] content(PageKey key, int version, KvLayout layout) {
    byte[] bytes = new byte[Math.toIntExact(layout.pageBytes())];
    long seed =
        key.h0()
            ^ Long.rotateLeft(key.h1(), 17)
            ^ Long.rotateLeft(key.h2(), 31)
            ^ Long.rotateLeft(key.h3(), 47)
            ^ (0x9E3779B97F4A7C15L * (version + 1));
    SplittableRandom random = new SplittableRandom(seed);
    for (int i = 0; i < bytes.length; i += 8) {
      long word = random.nextLong();
      for (int b = 0; b < 8 && i + b < bytes.length; b++) {
        bytes[i + b] = (byte) (word >>> (8 * b));
      }
    }
    return bytes;
  }

  /** Writes a key's page, in one version, into a host page, block by block. */
  static void fill(HostMemory host, int page, PageKey key, int version) {
    KvLayout layout = host.spec().layout();
    byte[] bytes = content(key, version, layout);
    long block = layout.pageBytesPerLayer();
    for (int layer = 0; layer < layout.layers(); layer++) {
      host.write(page, layer, 0, MemorySegment.ofArray(bytes).asSlice(layer * block, block));
    }
  }

  /** Overwrites a host page with a pattern no page content has in practice. */
  static void scribble(HostMemory host, int page) {
    KvLayout layout = host.spec().layout();
    byte[] pattern = new byte[Math.toIntExact(layout.pageBytesPerLayer())];
    Arrays.fill(pattern, SCRIBBLE);
    for (int layer = 0; layer < layout.layers(); layer++) {
      host.write(page, layer, 0, MemorySegment.ofArray(pattern));
    }
  }

  /** A host page's bytes, layer 0's block first, read through the pool's API. */
  static byte[] read(HostMemory host, int page) {
    KvLayout layout = host.spec().layout();
    long block = layout.pageBytesPerLayer();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment all = arena.allocate(layout.pageBytes());
      for (int layer = 0; layer < layout.layers(); layer++) {
        host.read(page, layer, 0, all.asSlice(layer * block, block));
      }
      return all.toArray(ValueLayout.JAVA_BYTE);
    }
  }

  /** Whether a host page holds a key's page in one version. */
  static boolean holds(HostMemory host, int page, PageKey key, int version) {
    return Arrays.equals(read(host, page), content(key, version, host.spec().layout()));
  }

  /** Host pages {@code from, from + 1, ...}, {@code n} of them. */
  static int[] run(int from, int n) {
    int[] pages = new int[n];
    Arrays.setAll(pages, i -> from + i);
    return pages;
  }
}
