package io.kvtier.spi;

import java.util.HexFormat;
import java.util.Objects;

/**
 * The L3 key of one page: a 256-bit chained hash (SHA-256 of the parent page's key and the
 * page's tokens, salted by namespace, model id and, for sharded KV, rank and world size).
 *
 * @param h0 bits 255..192, big-endian
 * @param h1 bits 191..128
 * @param h2 bits 127..64
 * @param h3 bits 63..0
 */
public record PageKey(long h0, long h1, long h2, long h3) {

  /**
   * The key of a 32-byte digest.
   *
   * @param digest 32 bytes, big-endian
   * @return the key
   */
  public static PageKey of(byte[] digest) {
    Objects.requireNonNull(digest, "digest");
    if (digest.length != 32) {
      throw new IllegalArgumentException("digest.length=" + digest.length + " must be 32");
    }
    return new PageKey(word(digest, 0), word(digest, 8), word(digest, 16), word(digest, 24));
  }

  private static long word(byte[] b, int off) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (b[off + i] & 0xFF);
    }
    return v;
  }

  /**
   * The key as 32 bytes, big-endian.
   *
   * @return a new array
   */
  public byte[] toBytes() {
    byte[] out = new byte[32];
    long[] words = {h0, h1, h2, h3};
    for (int w = 0; w < 4; w++) {
      for (int i = 0; i < 8; i++) {
        out[w * 8 + i] = (byte) (words[w] >>> (56 - 8 * i));
      }
    }
    return out;
  }

  /**
   * The key as 64 lower-case hex digits, usable as a file name or map key.
   *
   * @return the hex string
   */
  public String toHex() {
    return HexFormat.of().formatHex(toBytes());
  }

  @Override
  public String toString() {
    return "PageKey[" + toHex().substring(0, 16) + "..]";
  }
}
