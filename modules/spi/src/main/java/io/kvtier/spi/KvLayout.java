package io.kvtier.spi;

/**
 * The shape of the attention KV that one page holds: for each of {@code layers} layers, the K and
 * V vectors of {@code pageSize} tokens, each {@code kvHeads * headDim} elements of {@code
 * dtypeBytes} bytes.
 *
 * <p>Within one (page, layer) block the bytes are laid out as all K vectors of the page's tokens
 * followed by all V vectors: {@link #keyOffset(int)} and {@link #valueOffset(int)} give the
 * offsets of one token's vectors. Every size is checked against {@code long} overflow.
 *
 * @param layers number of transformer layers, at least 1
 * @param kvHeads number of KV heads held by this rank, at least 1
 * @param headDim elements per head, at least 1
 * @param dtypeBytes bytes per element (2 for fp16/bf16, 1 for fp8, 4 for fp32), 1 to 8
 * @param pageSize tokens per page, at least 1
 */
public record KvLayout(int layers, int kvHeads, int headDim, int dtypeBytes, int pageSize) {

  /** Validates the fields and that every derived size fits in a {@code long}. */
  public KvLayout {
    positive("layers", layers);
    positive("kvHeads", kvHeads);
    positive("headDim", headDim);
    positive("pageSize", pageSize);
    if (dtypeBytes < 1 || dtypeBytes > 8) {
      throw new IllegalArgumentException("dtypeBytes=" + dtypeBytes + " must be between 1 and 8");
    }
    try {
      Math.multiplyExact(
          Math.multiplyExact(
              Math.multiplyExact(
                  Math.multiplyExact(Math.multiplyExact(2L, kvHeads), headDim), dtypeBytes),
              pageSize),
          layers);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "KV layout overflows long: layers=%d kvHeads=%d headDim=%d dtypeBytes=%d pageSize=%d"
              .formatted(layers, kvHeads, headDim, dtypeBytes, pageSize),
          e);
    }
  }

  private static void positive(String name, int value) {
    if (value < 1) {
      throw new IllegalArgumentException(name + "=" + value + " must be >= 1");
    }
  }

  /**
   * Bytes of one K (or one V) vector of one token in one layer.
   *
   * @return {@code kvHeads * headDim * dtypeBytes}
   */
  public long vectorBytes() {
    return (long) kvHeads * headDim * dtypeBytes;
  }

  /**
   * Bytes of K and V of one token in one layer.
   *
   * @return {@code 2 * vectorBytes()}
   */
  public long tokenBytesPerLayer() {
    return 2 * vectorBytes();
  }

  /**
   * Bytes of one (page, layer) block: K and V of {@code pageSize} tokens in one layer.
   *
   * @return the block size
   */
  public long pageBytesPerLayer() {
    return tokenBytesPerLayer() * pageSize;
  }

  /**
   * Bytes of one page over all layers.
   *
   * @return {@code pageBytesPerLayer() * layers}
   */
  public long pageBytes() {
    return pageBytesPerLayer() * layers;
  }

  /**
   * Offset of a token's K vector within a (page, layer) block.
   *
   * @param tokenInPage the token's position in its page, {@code 0 <= tokenInPage < pageSize}
   * @return the byte offset
   */
  public long keyOffset(int tokenInPage) {
    checkToken(tokenInPage);
    return tokenInPage * vectorBytes();
  }

  /**
   * Offset of a token's V vector within a (page, layer) block.
   *
   * @param tokenInPage the token's position in its page, {@code 0 <= tokenInPage < pageSize}
   * @return the byte offset
   */
  public long valueOffset(int tokenInPage) {
    checkToken(tokenInPage);
    return (pageSize + (long) tokenInPage) * vectorBytes();
  }

  /**
   * Bytes of a pool of {@code pages} pages, checked against overflow.
   *
   * @param pages number of pages, at least 1
   * @return the pool size in bytes
   * @throws IllegalArgumentException if {@code pages < 1} or the size overflows a long
   */
  public long poolBytes(long pages) {
    if (pages < 1) {
      throw new IllegalArgumentException("pages=" + pages + " must be >= 1");
    }
    try {
      return Math.multiplyExact(pageBytes(), pages);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException(
          "pool of pages=" + pages + " x pageBytes=" + pageBytes() + " overflows long", e);
    }
  }

  private void checkToken(int tokenInPage) {
    if (tokenInPage < 0 || tokenInPage >= pageSize) {
      throw new IndexOutOfBoundsException("tokenInPage=" + tokenInPage + " pageSize=" + pageSize);
    }
  }
}
