package io.kvtier.collective.hazelcast;

import io.kvtier.spi.HostMemory;
import io.kvtier.spi.KvLayout;
import io.kvtier.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The stored form of one L3 page: a 24-byte header (magic, layers, block bytes, CRC-32C of the
 * page bytes, the low word of the page's key) and then every layer's block in layer order. The
 * header lets a reader refuse a damaged value, a page of another layout, and a value stored
 * under the wrong key, so that none of them is ever returned as data.
 */
final class HazelcastPageCodec {

  /** Bytes before the page data. */
  static final int HEADER_BYTES = 24;

  private static final int MAGIC = 0x4B56_4C33; // "KVL3"

  private final KvLayout layout;
  private final int blockBytes;
  private final int valueBytes;

  /**
   * A codec for one layout.
   *
   * @param layout the page layout
   * @throws IllegalArgumentException if a stored page would not fit in a Java array
   */
  HazelcastPageCodec(KvLayout layout) {
    this.layout = layout;
    if (layout.pageBytes() > Integer.MAX_VALUE - 64 - HEADER_BYTES) {
      throw new IllegalArgumentException(
          "pages of "
              + layout.pageBytes()
              + " bytes do not fit in one Hazelcast map value (at"
              + " most about 2 GiB): use smaller pages or another L3 store");
    }
    this.blockBytes = (int) layout.pageBytesPerLayer();
    this.valueBytes = HEADER_BYTES + (int) layout.pageBytes();
  }

  /**
   * Reads a host page into its stored form.
   *
   * @param key the page's key
   * @param host the host pool
   * @param page the host page
   * @return the value to store
   */
  byte[] encode(PageKey key, HostMemory host, int page) {
    byte[] value = new byte[valueBytes];
    MemorySegment target = MemorySegment.ofArray(value);
    for (int layer = 0; layer < layout.layers(); layer++) {
      MemorySegment.copy(
          host.block(page, layer), 0, target, HEADER_BYTES + (long) layer * blockBytes, blockBytes);
    }
    ByteBuffer.wrap(value, 0, HEADER_BYTES)
        .putInt(MAGIC)
        .putInt(layout.layers())
        .putInt(blockBytes)
        .putInt(crc(value))
        .putLong(key.h3());
    return value;
  }

  /**
   * Whether a stored value is an intact page of this layout stored under {@code key}.
   *
   * @param key the key it was found under
   * @param value the stored value
   * @return true if it may be used as data
   */
  boolean intact(PageKey key, byte[] value) {
    if (value.length != valueBytes) {
      return false;
    }
    ByteBuffer header = ByteBuffer.wrap(value, 0, HEADER_BYTES);
    return header.getInt() == MAGIC
        && header.getInt() == layout.layers()
        && header.getInt() == blockBytes
        && header.getInt() == crc(value)
        && header.getLong() == key.h3();
  }

  /**
   * Copies an intact stored page into a host page.
   *
   * @param value a value that passed {@link #intact}
   * @param host the host pool
   * @param page the host page
   */
  void decodeInto(byte[] value, HostMemory host, int page) {
    MemorySegment source = MemorySegment.ofArray(value);
    for (int layer = 0; layer < layout.layers(); layer++) {
      MemorySegment.copy(
          source, HEADER_BYTES + (long) layer * blockBytes, host.block(page, layer), 0, blockBytes);
    }
  }

  private static int crc(byte[] value) {
    CRC32C crc = new CRC32C();
    crc.update(value, HEADER_BYTES, value.length - HEADER_BYTES);
    return (int) crc.getValue();
  }
}
