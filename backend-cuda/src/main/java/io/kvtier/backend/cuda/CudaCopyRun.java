package io.kvtier.backend.cuda;

/**
 * One copy call of a planned batch: {@code height} rows of {@code width} contiguous bytes, row
 * {@code r} at {@code deviceOffset + r * devicePitch} in the device pool and at {@code hostOffset
 * + r * hostPitch} in the host pool. A run of height 1 is a plain contiguous copy ({@code
 * cuMemcpy*Async}); a taller one is a strided copy ({@code cuMemcpy2DAsync}).
 *
 * @param deviceOffset byte offset of the first row in the device pool
 * @param hostOffset byte offset of the first row in the host pool
 * @param width bytes per row, positive
 * @param height rows, at least 1
 * @param devicePitch bytes from one row to the next in the device pool; equals {@code width} when
 *     {@code height == 1}, else at least {@code width}
 * @param hostPitch bytes from one row to the next in the host pool; likewise
 */
record CudaCopyRun(
    long deviceOffset, long hostOffset, long width, long height, long devicePitch, long hostPitch) {

  /** Validates the fields. */
  CudaCopyRun {
    if (deviceOffset < 0 || hostOffset < 0 || width < 1 || height < 1) {
      throw new IllegalArgumentException(
          "bad copy run: "
              + describe(deviceOffset, hostOffset, width, height, devicePitch, hostPitch));
    }
    boolean flat = height == 1 && devicePitch == width && hostPitch == width;
    boolean strided = height > 1 && devicePitch >= width && hostPitch >= width;
    if (!flat && !strided) {
      throw new IllegalArgumentException(
          "rows of a copy run must not overlap, and a run of one"
              + " row has pitch = width: "
              + describe(deviceOffset, hostOffset, width, height, devicePitch, hostPitch));
    }
  }

  /**
   * A contiguous copy.
   *
   * @param deviceOffset byte offset in the device pool
   * @param hostOffset byte offset in the host pool
   * @param bytes how many bytes
   * @return a run of height 1
   */
  static CudaCopyRun contiguous(long deviceOffset, long hostOffset, long bytes) {
    return new CudaCopyRun(deviceOffset, hostOffset, bytes, 1, bytes, bytes);
  }

  /**
   * Whether this is one contiguous range on both sides.
   *
   * @return {@code height == 1}
   */
  boolean isContiguous() {
    return height == 1;
  }

  /**
   * The bytes this run copies.
   *
   * @return {@code width * height}
   */
  long bytes() {
    return width * height;
  }

  @Override
  public String toString() {
    return describe(deviceOffset, hostOffset, width, height, devicePitch, hostPitch);
  }

  private static String describe(
      long deviceOffset,
      long hostOffset,
      long width,
      long height,
      long devicePitch,
      long hostPitch) {
    return "run[device="
        + deviceOffset
        + " host="
        + hostOffset
        + " width="
        + width
        + (height == 1
            ? ""
            : " height=" + height + " devicePitch=" + devicePitch + " hostPitch=" + hostPitch)
        + "]";
  }
}
